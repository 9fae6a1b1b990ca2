/*
 * lowbit_avx2.c — AVX2 dequantizers for Q1_0 and Q2_0; SIMD twin of
 * src/quants/lowbit.c.
 *
 * Q1_0: 4 sign bytes broadcast to every lane; a per-lane left shift moves
 * weight j's bit into the sign bit, and vblendvps picks d or -d (the two
 * values the scalar picks from). Q2_0: a per-lane right shift brings each
 * 2-bit code to the low bits and vpermps (index bits 0..2) reads a table of
 * (code - 1) * d repeated twice, computed once per block like the scalar.
 * Quantizers: see gq_avx2_quantize_q1_0 (8 blocks side by side for the ordered sum)
 * and gq_avx2_quantize_q2_0 (one block of 8 vectors at a time).
 */
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES ((int)sizeof(blk_q1_0))
#define Q2_0_BLOCK 64
#define Q2_0_BYTES ((int)sizeof(blk_q2_0))

void gq_avx2_dequantize_q1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    /* group g of 8 lanes: bit 8g + j goes to bit 31 */
    const __m256i shift0 = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES) {
        const float ds = gq_x86_half_at(blk);
        const __m256 d = _mm256_set1_ps(ds), neg_d = _mm256_set1_ps(-ds);
        for (int w = 0; w < 4; w++) {
            uint32_t word;
            memcpy(&word, blk + 2 + 4 * w, sizeof word);
            const __m256i bits = _mm256_set1_epi32((int)word);
            __m256i shift = shift0;
            for (int g = 0; g < 4; g++, dst += 8, shift = _mm256_sub_epi32(shift, eight)) {
                const __m256 sel = _mm256_castsi256_ps(_mm256_sllv_epi32(bits, shift));
                _mm256_storeu_ps(dst, _mm256_blendv_ps(neg_d, d, sel));
            }
        }
    }
}

void gq_avx2_dequantize_q2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256i shift_lo = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i shift_hi = _mm256_setr_epi32(16, 18, 20, 22, 24, 26, 28, 30);
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / Q2_0_BLOCK; b++, blk += Q2_0_BYTES) {
        const __m256 table = _mm256_mul_ps(codes, _mm256_set1_ps(gq_x86_half_at(blk)));
        for (int i = 0; i < 4; i++, dst += 16) {
            uint32_t w;
            memcpy(&w, blk + 2 + 4 * i, sizeof w);
            const __m256i bits = _mm256_set1_epi32((int)w);
            _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, shift_lo)));
            _mm256_storeu_ps(dst + 8, _mm256_permutevar8x32_ps(table, _mm256_srlv_epi32(bits, shift_hi)));
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers (neither type uses an importance matrix)                       */
/* ------------------------------------------------------------------------- */

/* Transpose 8 rows of 8 floats: r[k] lane b becomes row b, element k. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i]     = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i]     = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/*
 * Q1_0: the scale is a float sum of |x| in weight order, so 8 blocks go side
 * by side, one per lane, each lane adding its own block's weights in the
 * scalar's order (8x8 transposes feed them). Sign bits come from x >= 0
 * (false for NaN, as in the scalar) and vmovmskps. Fewer than 8 blocks left:
 * the scalar kernel.
 */
int gq_avx2_quantize_q1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / Q1_0_BLOCK;
    const __m256 zero = _mm256_setzero_ps();
    uint8_t *y = dst;
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8, src += 8 * Q1_0_BLOCK, y += 8 * Q1_0_BYTES) {
        __m256 sum = zero;
        for (int j = 0; j < Q1_0_BLOCK; j += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_loadu_ps(src + i * Q1_0_BLOCK + j);
            transpose8(r);
            for (int k = 0; k < 8; k++)
                sum = _mm256_add_ps(sum, gq_x86_abs(r[k]));
        }
        uint16_t h[8];
        gq_x86_fp16x8(_mm256_div_ps(sum, _mm256_set1_ps((float)Q1_0_BLOCK)), h);
        for (int i = 0; i < 8; i++) {
            uint8_t *blk = y + i * Q1_0_BYTES;
            memcpy(blk, &h[i], 2);
            for (int g = 0; g < Q1_0_BLOCK / 8; g++) {
                const __m256 v = _mm256_loadu_ps(src + i * Q1_0_BLOCK + 8 * g);
                blk[2 + g] = (uint8_t)_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ));
            }
        }
    }
    if (b < nb)
        gq_quantize_q1_0(src, y, 1, (nb - b) * Q1_0_BLOCK, NULL);
    return GGUFQ_OK;
}

/* Sum of the 4 lanes of each quarter-group: with codes pre-shifted by 2 * (lane % 4),
 * the 8 bytes of 32 weights (in order) as 32-bit lanes. */
static inline __m256i or4_lanes(__m256i s0, __m256i s1, __m256i s2, __m256i s3)
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/*
 * Q2_0: amax with the scalar's `if (|x| > amax)` (NaN skipped), id = 1/amax,
 * code = clamp((int)roundf(x * id) + 1, 0, 3) with cvttps2dq's INT_MIN for
 * NaN and out-of-range values like the scalar's cvttss2si; roundf is SLEEF's
 * (tests/test_sleef.c). Codes are shifted into place and added up per byte.
 */
int gq_avx2_quantize_q2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / Q2_0_BLOCK;
    const __m256i one = _mm256_set1_epi32(1), three = _mm256_set1_epi32(3), zero = _mm256_setzero_si256();
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += Q2_0_BLOCK, y += Q2_0_BYTES) {
        __m256 v[8];
        for (int g = 0; g < 8; g++)
            v[g] = _mm256_loadu_ps(src + 8 * g);
        const float amax = gq_x86_absmax_skipnan(v, 8);
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        gq_x86_store_fp16(y, amax);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i s[8];
        for (int g = 0; g < 8; g++) {
            __m256i q = _mm256_cvttps_epi32(Sleef_roundf8_avx2(_mm256_mul_ps(v[g], vid)));
            q = _mm256_add_epi32(q, one);
            q = _mm256_min_epi32(_mm256_max_epi32(q, zero), three);
            s[g] = _mm256_sllv_epi32(q, shift);
        }
        _mm_storeu_si128((__m128i *)(y + 2), gq_x86_pack16_u8(or4_lanes(s[0], s[1], s[2], s[3]),
                                                              or4_lanes(s[4], s[5], s[6], s[7])));
    }
    return GGUFQ_OK;
}
