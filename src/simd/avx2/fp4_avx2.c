/*
 * fp4_avx2.c — AVX2 dequantizers for MXFP4 and NVFP4; SIMD twin of
 * src/quants/fp4.c.
 *
 * Nibbles are split with and/shift and looked up in the int8 codebook
 * gq_kvalues_fp4 with pshufb; the int8 values are widened to 32-bit lanes,
 * converted to float (exact) and multiplied by the scale: the scalar's
 * (float)kvalue * d. The 8-bit scales are decoded through 256-entry tables
 * filled by gq_avx2_prepare_fp4 (dispatch calls it before any kernel of a
 * table that lists these runs) with the scalar conversions of fp8.h
 * themselves, so they are the same floats by construction.
 * Quantizers: 8 weights per vector; the nearest-code scan runs over the 8
 * non-negative codebook entries on |x| (see nearest_codes for why that is
 * the scalar's answer), the scale comes from the same exact max |x| and the
 * same libm floorf(log2f()) / gq_fp32_to_ue4m3 as the scalar, once per block.
 */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp8.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx2/iq_util_avx2.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK 64
#define NVFP4_BYTES ((int)sizeof(blk_nvfp4))

static float e8m0_half[256];   /* gq_e8m0_to_fp32_half(e) */
static float ue4m3_half[256];  /* gq_ue4m3_to_fp32(x) */
/* The same table for the AVX-512 NVFP4 kernel (filled by the same prepare). */
const float *const gq_avx2_ue4m3_half = ue4m3_half;

void gq_avx2_prepare_fp4(void)
{
    for (int i = 0; i < 256; i++) {
        e8m0_half[i] = gq_e8m0_to_fp32_half((uint8_t)i);
        ue4m3_half[i] = gq_ue4m3_to_fp32((uint8_t)i);
    }
}

/* The 16 int8 values of vals, as two vectors of 8 floats each multiplied by d. */
static inline void store_times(float *dst, __m128i vals, __m256 d)
{
    const __m256i a = _mm256_cvtepi8_epi32(vals);
    const __m256i b = _mm256_cvtepi8_epi32(_mm_unpackhi_epi64(vals, vals));
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(a), d));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(b), d));
}

void gq_avx2_dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m128i kv = _mm_loadu_si128((const __m128i *)gq_kvalues_fp4);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const __m256 d = _mm256_set1_ps(e8m0_half[blk[0]]);
        const __m128i q = _mm_loadu_si128((const __m128i *)(blk + 1));
        const __m128i lo = _mm_and_si128(q, low4);
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), low4);
        store_times(dst, _mm_shuffle_epi8(kv, lo), d);
        store_times(dst + 16, _mm_shuffle_epi8(kv, hi), d);
    }
}

void gq_avx2_dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m128i kv = _mm_loadu_si128((const __m128i *)gq_kvalues_fp4);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < 4; s++, dst += 16) {
            const __m128i q = _mm_loadl_epi64((const __m128i *)(blk + 4 + 8 * s));
            /* bytes 0..7: low nibbles (weights 0..7); 8..15: high nibbles */
            const __m128i codes = _mm_and_si128(_mm_unpacklo_epi64(q, _mm_srli_epi16(q, 4)), low4);
            store_times(dst, _mm_shuffle_epi8(kv, codes), _mm256_set1_ps(ue4m3_half[blk[s]]));
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Quantizers (ggml's ignore the importance matrix, and so do these)         */
/* ------------------------------------------------------------------------- */

/*
 * The scalar's nearest_fp4_code for 8 weights. Only the 8 non-negative
 * entries are scanned, on |x|: for x >= 0 a negative entry's error
 * |(-k)d - x| = kd + x is never below entry 0's error x, and entry 0 comes
 * first; for x < 0, |(-k)d - x| is bit for bit |kd - |x|| (float rounding is
 * symmetric) while the positive entries' errors kd + |x| never beat entry
 * 0's |x|. So the scan over 0..7 on |x| finds index j, and the code is j, or
 * j + 8 for negative x when j > 0 (entries 0 and 8 are both zero). NaN never
 * compares less: code 0, as in the scalar.
 */
static inline __m256i nearest_codes(__m256 x, const __m256 kd[8])
{
    /* The entries kd[i] grow with i, so the errors |kd[i] - a| (correctly
     * rounded, hence monotone on each side of a) fall, then rise: the
     * scalar's first strict minimum is the last i whose error is strictly
     * below error i - 1 (0 if none; NaN compares false everywhere). */
    const __m256 a = gq_x86_abs(x);
    __m256 prev = gq_x86_abs(_mm256_sub_ps(kd[0], a));
    __m256i j = _mm256_setzero_si256();
    for (int i = 1; i < 8; i++) {
        const __m256 err = gq_x86_abs(_mm256_sub_ps(kd[i], a));
        const __m256i lower = _mm256_castps_si256(_mm256_cmp_ps(err, prev, _CMP_LT_OQ));
        j = _mm256_max_epi32(j, _mm256_and_si256(lower, _mm256_set1_epi32(i)));
        prev = err;
    }
    const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256i nonzero = _mm256_cmpgt_epi32(j, _mm256_setzero_si256());
    return _mm256_or_si256(j, _mm256_and_si256(_mm256_and_si256(_mm256_castps_si256(neg), nonzero),
                                               _mm256_set1_epi32(8)));
}

/* The products (float)kvalue[i] * d of the non-negative entries, as the scalar makes them. */
static inline void scaled_codebook(float d, __m256 kd[8])
{
    for (int i = 0; i < 8; i++)
        kd[i] = _mm256_set1_ps((float)gq_kvalues_fp4[i] * d);
}

/*
 * The scalar's mxfp4_exponent: (uint8_t)(floorf(log2f(amax)) - 2 + 127)
 * through cvttss2si. For a normal amax = 2^k * m with m <= 2 - 2^-11,
 * log2(amax) lies in [k, k + 1 - 7e-4], and libm's log2f (within 1 ulp,
 * and ulp <= 2^-16 below 256) cannot leave that interval: floorf gives k,
 * the exponent field minus 127 (tests/test_sleef.c checks this against libm
 * for every exponent). Other values take the libm path, as the scalar.
 */
static inline uint8_t mxfp4_exponent(float amax)
{
    if (!(amax > 0.0f))
        return 0;
    const uint32_t bits = gq_f32_bits(amax), biased = bits >> 23;
    if (biased >= 1 && biased <= 254 && (bits & 0x7FFFFFu) < 0x7FF000u)
        return (uint8_t)(biased - 2);
    const float e = floorf(log2f(amax)) - 2 + 127;
    if (!(e >= -2147483648.0f && e < 2147483648.0f))
        return 0;
    return (uint8_t)(uint32_t)(int32_t)e;
}

int gq_avx2_quantize_mxfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / MXFP4_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, src += MXFP4_BLOCK, y += MXFP4_BYTES) {
        __m256 v[4], kd[8];
        __m256i c[4];
        for (int g = 0; g < 4; g++)
            v[g] = _mm256_loadu_ps(src + 8 * g);
        const uint8_t e = mxfp4_exponent(gq_x86_absmax_skipnan(v, 4));
        y[0] = e;
        scaled_codebook(e8m0_half[e], kd);
        for (int g = 0; g < 4; g++)
            c[g] = nearest_codes(v[g], kd);
        _mm_storeu_si128((__m128i *)(y + 1), gq_x86_nibbles16(c[0], c[1], c[2], c[3]));
    }
    return GGUFQ_OK;
}

int gq_avx2_quantize_nvfp4(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    const int64_t nb = nrows * n_per_row / NVFP4_BLOCK;
    uint8_t *y = dst;
    for (int64_t b = 0; b < nb; b++, y += NVFP4_BYTES) {
        for (int s = 0; s < 4; s++, src += 16) {
            __m256 v[2], kd[8];
            v[0] = _mm256_loadu_ps(src);
            v[1] = _mm256_loadu_ps(src + 8);
            const uint8_t ue = gq_fp32_to_ue4m3(gq_x86_absmax_skipnan(v, 2) / 6.0f);
            y[s] = ue;
            scaled_codebook(ue4m3_half[ue], kd);
            /* byte j: weight j (low nibble) and j + 8 (high) */
            const __m256i q = _mm256_or_si256(nearest_codes(v[0], kd), _mm256_slli_epi32(nearest_codes(v[1], kd), 4));
            const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + 4 + 8 * s), _mm_packus_epi16(w, w));
        }
    }
    return GGUFQ_OK;
}
