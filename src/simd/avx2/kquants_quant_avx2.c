/*
 * kquants_quant_avx2.c — AVX2 quantizers for the K-quants (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, Q8_K), with and without an importance matrix. SIMD twin
 * of the quantizers in src/quants/kquants.c and of the scale searches of
 * src/quants/qhelpers.c they call (make_qkx2/qkx3/qx/q3_quants).
 *
 * How it vectorises: one lane per sub-block. The sub-blocks of a
 * super-block (or two) are transposed (row loads + shuffles) so that register i holds
 * weight i of eight sub-blocks; each lane runs its sub-block's scale search
 * with exactly the scalar's float operations in the scalar's order, masks
 * standing in for branches, and remembers which trial won; levels,
 * requantization (x + m) / d and packing follow per sub-block.
 *
 * This file only puts the pieces together: the ISA layer (vf/vi/vm helpers,
 * LANES, gather_lanes) is avx2/vec_avx2.h, the searches are in
 * src/simd/portable/search-inl.h and the quantizers in
 * src/simd/portable/kquants_quant-inl.h, both shared word for word with the AVX-512 and NEON twins.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "simd/simd.h"
#include "simd/avx2/vec_avx2.h"
#include "simd/portable/search-inl.h"

#include "simd/portable/kquants_quant-inl.h"
