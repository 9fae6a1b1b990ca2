/*
 * kquants_quant_avx512.c — AVX-512 quantizers for the K-quants (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, Q8_K), with and without an importance matrix. SIMD twin
 * of the quantizers in src/quants/kquants.c and of the scale searches of
 * src/quants/qhelpers.c they call (make_qkx2/qkx3/qx/q3_quants).
 *
 * How it vectorises: one lane per sub-block. The sub-blocks of a group of
 * super-blocks are transposed (gathers) so that register i holds weight i of
 * sixteen sub-blocks; each lane then runs its sub-block's scale search with
 * exactly the scalar's float operations in the scalar's order (sums
 * accumulated weight by weight, the same trial scales, the same strict
 * comparisons, so the same winner). Lanes whose scalar search would stop or
 * skip a trial are masked instead. A lane remembers the trial that won (its
 * inverse scale and offset), and the winning levels are recomputed from it
 * later, an element-wise step that is exact in any width. Scale
 * quantization and packing stay scalar; the final per-weight requantization
 * (x + m) / d is element-wise and runs over the weights of a sub-block.
 * nearest_int is ggml's 1.5*2^23 trick, which is exact lane by lane.
 *
 * This file only puts the pieces together: the ISA layer (vf/vi/vm helpers,
 * LANES, gather_lanes) is avx512/vec_avx512.h, the searches are in
 * src/simd/portable/search-inl.h and the quantizers in
 * src/simd/portable/kquants_quant-inl.h, both shared word for word with the AVX2 and NEON twins.
 */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "simd/simd.h"
#include "simd/avx512/vec_avx512.h"
#include "simd/portable/search-inl.h"

#include "simd/portable/kquants_quant-inl.h"
