/*
 * ternary_avx2.c — AVX2 dequantizers for TQ1_0 and TQ2_0; SIMD twin of
 * src/quants/ternary.c.
 *
 * Every output is one of three values, (trit - 1) * d, so each block builds
 * that table once (the scalar's product) and each weight is a vpermps of it
 * (index bits 0..2 only). TQ2_0: bytes widened to 32-bit lanes, shifted right
 * by 2k; the table is (code - 1) * d repeated twice so higher bits need no
 * mask. TQ1_0: trit n of byte x is ((x * 3^n mod 256) * 3) >> 8; in the low
 * 16 bits of a lane holding x, mullo16(x, 3^n << 8) leaves (x * 3^n mod 256)
 * << 8 and mulhi16(that, 3) is the trit, the lane's high 16 bits staying zero.
 * Quantizers: one block at a time, 32 vectors of trit codes (see
 * trit_codes), combined with integer adds (base 3) and shifts (TQ2_0).
 */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"

#define TQ_BLOCK     256
#define TQ1_BYTES    ((int)sizeof(blk_tq1_0))
#define TQ1_QH_AT    48
#define TQ1_D_AT     52
#define TQ2_BYTES    ((int)sizeof(blk_tq2_0))
#define TQ2_D_AT     64

static inline __m256 trit_table(const uint8_t *d_p, __m256 codes)
{
    uint16_t h;
    memcpy(&h, d_p, sizeof h);
    return _mm256_mul_ps(codes, _mm256_set1_ps(_cvtsh_ss(h)));
}

static inline __m256i bytes_to_lanes(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

static inline __m256i trits(__m256i x, __m256i mul)
{
    return _mm256_mulhi_epu16(_mm256_mullo_epi16(x, mul), _mm256_set1_epi32(3));
}

/* 8 * count weights: trit t of `count` groups of 8 bytes at qs. */
static inline void tq1_group(const uint8_t *qs, int count, __m256 table, float *dst)
{
    static const int pow3[5] = { 1, 3, 9, 27, 81 };
    __m256i q[4];
    for (int g = 0; g < count; g++)
        q[g] = bytes_to_lanes(qs + 8 * g);
    for (int t = 0; t < 5; t++) {
        const __m256i mul = _mm256_set1_epi32(pow3[t] << 8);
        for (int g = 0; g < count; g++, dst += 8)
            _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, trits(q[g], mul)));
    }
}

void gq_avx2_dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 0, 0, 0, 0, 0);
    /* qh lanes 4t + j: byte j (shift 8j), trit t */
    const __m256i qh_shift = _mm256_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24);
    const __m256i qh_mul01 = _mm256_setr_epi32(256, 256, 256, 256, 768, 768, 768, 768);
    const __m256i qh_mul23 = _mm256_setr_epi32(2304, 2304, 2304, 2304, 6912, 6912, 6912, 6912);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        const __m256 table = trit_table(blk + TQ1_D_AT, codes);
        tq1_group(blk, 4, table, dst);
        tq1_group(blk + 32, 2, table, dst + 160);
        uint32_t qh;
        memcpy(&qh, blk + TQ1_QH_AT, sizeof qh);
        /* bits above the lane's byte only reach bits >= 16 of the 16-bit product */
        const __m256i h = _mm256_srlv_epi32(_mm256_set1_epi32((int)qh), qh_shift);
        _mm256_storeu_ps(dst + 240, _mm256_permutevar8x32_ps(table, trits(h, qh_mul01)));
        _mm256_storeu_ps(dst + 248, _mm256_permutevar8x32_ps(table, trits(h, qh_mul23)));
    }
}

void gq_avx2_dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m256 codes = _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const __m256 table = trit_table(blk + TQ2_D_AT, codes);
        for (int j = 0; j < 64; j += 32) {
            __m256i q[4];
            for (int g = 0; g < 4; g++)
                q[g] = bytes_to_lanes(blk + j + 8 * g);
            for (int k = 0; k < 4; k++)
                for (int g = 0; g < 4; g++, dst += 8)
                    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(table, _mm256_srli_epi32(q[g], 2 * k)));
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers (neither type uses an importance matrix)                       */
/* ------------------------------------------------------------------------- */

/*
 * Trit codes lroundf(x * id) + 1 of a whole block, 8 weights per vector, and
 * d = max |x|. The vector path needs |x * id| <= 1 (codes 0..2, where
 * lroundf(v) equals SLEEF's roundf(v) converted, tests/test_sleef.c): no
 * NaN (the scalar's MAX lets one through in an order-dependent way), finite
 * d, and finite 1/d. Returns false for other blocks: the scalar does them.
 */
static inline bool trit_codes(const float *x, __m256i c[32], float *d_out)
{
    __m256 v[32];
    __m256 acc = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
    for (int g = 0; g < 32; g++) {
        v[g] = _mm256_loadu_ps(x + 8 * g);
        acc = _mm256_max_ps(acc, gq_x86_abs(v[g]));
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[g], v[g], _CMP_UNORD_Q));
    }
    const float d = gq_x86_hmax(acc);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (_mm256_movemask_ps(nan) || !(d < INFINITY) || !(id < INFINITY))
        return false;
    *d_out = d;
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i one = _mm256_set1_epi32(1);
    for (int g = 0; g < 32; g++)
        c[g] = _mm256_add_epi32(_mm256_cvttps_epi32(Sleef_roundf8_avx2(_mm256_mul_ps(v[g], vid))), one);
    return true;
}

static inline __m256i times3_plus(__m256i q, __m256i c)
{
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(q, q), q), c);
}

/* ceil(q * 256 / 243) = (q * 256 + 242) / 243 for q <= 255, by a multiply
 * and shift (exact for every such q: (n * 69043) >> 24 == n / 243 for n < 65536). */
static inline __m256i ceil_256_243(__m256i q)
{
    const __m256i n = _mm256_add_epi32(_mm256_slli_epi32(q, 8), _mm256_set1_epi32(242));
    return _mm256_srli_epi32(_mm256_mullo_epi32(n, _mm256_set1_epi32(69043)), 24);
}

/* Five trits from vectors c[first + k * step], k = 0..4, most significant first. */
static inline __m256i trits5(const __m256i *c, int first, int step)
{
    __m256i q = c[first];
    for (int k = 1; k < 5; k++)
        q = times3_plus(q, c[first + k * step]);
    return ceil_256_243(q);
}

int gq_avx2_quantize_tq1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / TQ_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += TQ_BLOCK, y += TQ1_BYTES) {
        __m256i c[32];
        float d;
        if (!trit_codes(src, c, &d)) {
            gq_quantize_tq1_0(src, y, 1, TQ_BLOCK, NULL);
            continue;
        }
        /* qs[m], m < 32: weights m + 32n; qs[32 + m], m < 16: weights 160 + m + 16n */
        _mm256_storeu_si256((__m256i *)y, gq_x86_pack32_u8(trits5(c, 0, 4), trits5(c, 1, 4),
                                                          trits5(c, 2, 4), trits5(c, 3, 4)));
        _mm_storeu_si128((__m128i *)(y + 32), gq_x86_pack16_u8(trits5(c, 20, 2), trits5(c, 21, 2)));
        /* qh[j]: weights 240 + j + 4n, n = 0..3 (vector 30: n = 0, 1; vector 31: n = 2, 3), times 3 */
        const __m256i q = times3_plus(times3_plus(c[30], _mm256_permute4x64_epi64(c[30], 0xEE)), c[31]);
        const __m256i q4 = times3_plus(q, _mm256_permute4x64_epi64(c[31], 0xEE));
        const __m256i h = ceil_256_243(times3_plus(q4, _mm256_setzero_si256()));
        const __m128i hb = _mm_packus_epi16(_mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_castsi256_si128(h)),
                                            _mm_setzero_si128());
        const uint32_t qh = (uint32_t)_mm_cvtsi128_si32(hb);
        memcpy(y + TQ1_QH_AT, &qh, sizeof qh);
        gq_x86_store_fp16(y + TQ1_D_AT, d);
    }
    return GGUFQ_OK;
}

int gq_avx2_quantize_tq2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / TQ_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += TQ_BLOCK, y += TQ2_BYTES) {
        __m256i c[32];
        float d;
        if (!trit_codes(src, c, &d)) {
            gq_quantize_tq2_0(src, y, 1, TQ_BLOCK, NULL);
            continue;
        }
        /* byte 32h + m: weights 128h + m + 32k at bits 2k */
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            for (int mg = 0; mg < 4; mg++) {
                const __m256i *ch = c + 16 * h + mg;
                q[mg] = _mm256_or_si256(_mm256_or_si256(ch[0], _mm256_slli_epi32(ch[4], 2)),
                                        _mm256_or_si256(_mm256_slli_epi32(ch[8], 4), _mm256_slli_epi32(ch[12], 6)));
            }
            _mm256_storeu_si256((__m256i *)(y + 32 * h), gq_x86_pack32_u8(q[0], q[1], q[2], q[3]));
        }
        gq_x86_store_fp16(y + TQ2_D_AT, d);
    }
    return GGUFQ_OK;
}
