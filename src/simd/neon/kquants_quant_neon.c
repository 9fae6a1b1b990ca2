/*
 * kquants_quant_neon.c — NEON quantizers for the K-quants (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, Q8_K), with and without an importance matrix. SIMD twin
 * of the quantizers in src/quants/kquants.c and of the scale searches of
 * src/quants/qhelpers.c they call (make_qkx2/qkx3/qx/q3_quants).
 *
 * How it vectorises: one lane per sub-block, four lanes. Four sub-blocks
 * are transposed (4x4 blocks of vld1q_f32 loads, vtrn1q/vtrn2q) so that
 * register i holds weight i of the four; each lane runs its sub-block's
 * scale search with exactly the scalar's float operations in the scalar's
 * order (separate vmulq/vaddq, never vfmaq/vmlaq; -ffp-contract=off),
 * vbslq selects standing in for branches, and remembers which trial won;
 * levels, requantization (x + m) / d and packing follow per sub-block.
 * Rounding is ggml's nearest_int trick (add 1.5*2^23, keep the mantissa),
 * done in float lanes, which gives the scalar's bits lane by lane.
 * On a real core (Cortex-A76, Neoverse) the searches are divide- and
 * add-latency bound; Q3_K interleaves 16 independent lane groups to hide
 * that latency.
 *
 * This file only puts the pieces together: the ISA layer (vf/vi/vm helpers,
 * LANES, gather_lanes) is neon/vec_neon.h, the searches are in
 * src/simd/portable/search-inl.h and the quantizers in
 * src/simd/portable/kquants_quant-inl.h, both shared word for word with the x86 twins.
 */
#include <arm_neon.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/qhelpers.h"
#include "simd/simd.h"
#include "simd/neon/vec_neon.h"
#include "simd/portable/search-inl.h"

#include "simd/portable/kquants_quant-inl.h"
