/*
 * legacy_imatrix_avx512.c — AVX-512 importance-matrix quantizers of Q4_0,
 * Q4_1, Q5_0 and Q5_1, called by avx512/legacy_avx512.c when given an
 * imatrix. SIMD twin of the *_imatrix_row functions of src/quants/legacy.c
 * and of the searches of src/quants/qhelpers.c they call (make_qx_quants,
 * make_qkx3_quants).
 *
 * How it vectorises: one lane per 32-weight block, sixteen blocks per
 * vector, transposed into lanes by gathers. Each lane runs its block's scale
 * search with the scalar's float operations in the scalar's order. The code
 * is shared word for word with the other ISAs: the ISA layer is
 * avx512/vec_avx512.h, the searches src/simd/portable/search-inl.h, the
 * quantizers src/simd/portable/legacy_imatrix-inl.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/common.h"
#include "quants/fp16.h"
#include "quants/quants.h"
#include "simd/simd.h"
#include "simd/avx512/vec_avx512.h"
#include "simd/portable/search-inl.h"

#include "simd/portable/legacy_imatrix-inl.h"
