/*
 * legacy_imatrix_neon.c — NEON importance-matrix quantizers of Q4_0, Q4_1,
 * Q5_0 and Q5_1, called by neon/legacy_neon.c when given an imatrix. SIMD
 * twin of the *_imatrix_row functions of src/quants/legacy.c and of the
 * searches of src/quants/qhelpers.c they call (make_qx_quants,
 * make_qkx3_quants).
 *
 * How it vectorises: one lane per 32-weight block, four blocks per vector,
 * transposed into lanes by vld1q_f32 loads and 4x4 vtrn shuffles; separate
 * vmulq/vaddq, never vfmaq, so each lane rounds like the scalar. On a real
 * Neoverse/Cortex-A76 the searches are divide- and add-latency bound;
 * independent trials (make_qx_quants runs two side by side) hide part of
 * that. Each lane runs its block's scale search with the scalar's float
 * operations in the scalar's order. The code is shared word for word with
 * the other ISAs: the ISA layer is neon/vec_neon.h, the searches
 * src/simd/portable/search-inl.h, the quantizers
 * src/simd/portable/legacy_imatrix-inl.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/fp16.h"
#include "quants/quants.h"
#include "simd/simd.h"
#include "simd/neon/vec_neon.h"
#include "simd/portable/search-inl.h"

#include "simd/portable/legacy_imatrix-inl.h"
