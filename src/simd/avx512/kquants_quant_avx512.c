/*
 * kquants_quant_avx512.c — AVX-512 quantizers for the K-quants (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, Q8_K), with and without an importance matrix. SIMD twin
 * of the quantizers in src/quants/kquants.c and of the scale searches of
 * src/quants/qhelpers.c they call (make_qkx2/qkx3/qx/q3_quants).
 *
 * How it vectorises: one lane per sub-block. The sub-blocks of a group of
 * super-blocks are transposed (row loads and shuffles, below) so that
 * register i holds weight i of sixteen sub-blocks; each lane then runs its sub-block's scale search with
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

/* Sub-blocks to lanes by row loads and a 16x16 transpose instead of
 * vec_avx512.h's vgatherdps: the same bits, moved by 64 shuffles per 16x16
 * tile where Zen 4 spends ~9 cycles on each of the 16 gathers (microcoded),
 * which made the gathers a sixth of Q3_K's time. Overrides the layer's
 * gather_lanes / gather_rows for this file's searches only. */
static inline void transpose16_rows(const float *const *row, int n, vf *out)
{
    for (int i = 0; i < n; i += 16) {
        __m512 a[16], b[16];
        for (int k = 0; k < 16; k += 2) {
            const __m512 r0 = _mm512_loadu_ps(row[k] + i), r1 = _mm512_loadu_ps(row[k + 1] + i);
            a[k] = _mm512_unpacklo_ps(r0, r1);       /* r0[0] r1[0] r0[1] r1[1] per 128 bits */
            a[k + 1] = _mm512_unpackhi_ps(r0, r1);   /* r0[2] r1[2] r0[3] r1[3] */
        }
        for (int k = 0; k < 16; k += 4) {   /* rows k..k+3, column c (mod 4) in b[k + c] */
            const __m512d lo0 = _mm512_castps_pd(a[k]), lo1 = _mm512_castps_pd(a[k + 2]);
            const __m512d hi0 = _mm512_castps_pd(a[k + 1]), hi1 = _mm512_castps_pd(a[k + 3]);
            b[k]     = _mm512_castpd_ps(_mm512_unpacklo_pd(lo0, lo1));
            b[k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo0, lo1));
            b[k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi0, hi1));
            b[k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi0, hi1));
        }
        /* b[4q + c], 128-bit lane m: rows 4q..4q+3 of column 4m + c */
        for (int c = 0; c < 4; c++) {
            const __m512 e0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x88);   /* lanes 0,2 of each */
            const __m512 o0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xDD);   /* lanes 1,3 */
            const __m512 e1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x88);
            const __m512 o1 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xDD);
            out[i + c]      = _mm512_shuffle_f32x4(e0, e1, 0x88);
            out[i + c + 8]  = _mm512_shuffle_f32x4(e0, e1, 0xDD);
            out[i + c + 4]  = _mm512_shuffle_f32x4(o0, o1, 0x88);
            out[i + c + 12] = _mm512_shuffle_f32x4(o0, o1, 0xDD);
        }
    }
}

/* As vec_avx512.h's gather_lanes: lanes past count repeat sub-block count-1. */
static void kq_gather_lanes(const float *base, int n, int count, vf *out)
{
    const float *row[16];
    for (int k = 0; k < 16; k++)
        row[k] = base + (size_t)(k < count ? k : count - 1) * (size_t)n;
    transpose16_rows(row, n, out);
}

/* As vec_avx512.h's gather_rows: lane k reads sub-block sub[k]. */
static void kq_gather_rows(const float *base, int n, const int *sub, vf *out)
{
    const float *row[16];
    for (int k = 0; k < 16; k++)
        row[k] = base + (size_t)sub[k] * (size_t)n;
    transpose16_rows(row, n, out);
}

#define gather_lanes kq_gather_lanes
#define gather_rows  kq_gather_rows

/* The lanes of v in mask, packed, to dst[0..16) (Q3_K's pools; see q3_search-inl.h). */
static inline void kq_compress_store(float *dst, vf v, unsigned mask)
{
    _mm512_storeu_ps(dst, _mm512_maskz_compress_ps((__mmask16)mask, v));
}
#define compress_store kq_compress_store

#include "simd/portable/search-inl.h"

#include "simd/portable/kquants_quant-inl.h"
