/*
 * legacy_avx2.c — AVX2 dequantizers for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1;
 * SIMD twin of src/quants/legacy.c.
 *
 * 8 weights per 256-bit vector, with the scalar's exact operations: code
 * bytes widened to 32-bit lanes (vpmovzxbd / vpmovsxbd straight from memory),
 * nibbles split with and/shift, the Q5 fifth bit added as ((qh >> j) << 4) &
 * 0x10 with a per-lane shift, then integer subtract, int -> float (exact for
 * these small codes), multiply by d and (Q4_1/Q5_1) add m, never fused.
 * The F16 scales go through vcvtph2ps, exact like gq_fp16_to_fp32.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "simd/simd.h"

#define QK 32

static inline __m256 fp16_scale(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _mm256_set1_ps(_cvtsh_ss(h));
}

/* 8 bytes at p, one per 32-bit lane. */
static inline __m256i bytes_to_lanes(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

/*
 * The 32 codes of a 4/5-bit block as 4 vectors of 8 lanes (weights 0..7,
 * 8..15 from low nibbles, 16..23, 24..31 from high nibbles). With qh, bit j
 * of qh becomes bit 4 of weight j's code.
 */
static inline void nibble_codes(const uint8_t *qs, const uint8_t *qh_p, __m256i c[4])
{
    const __m256i low4 = _mm256_set1_epi32(0x0F);
    const __m256i q0 = bytes_to_lanes(qs), q1 = bytes_to_lanes(qs + 8);
    c[0] = _mm256_and_si256(q0, low4);
    c[1] = _mm256_and_si256(q1, low4);
    c[2] = _mm256_srli_epi32(q0, 4);
    c[3] = _mm256_srli_epi32(q1, 4);
    if (qh_p) {
        uint32_t qh;
        memcpy(&qh, qh_p, sizeof qh);
        const __m256i bits = _mm256_set1_epi32((int)qh), bit4 = _mm256_set1_epi32(0x10);
        __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (int g = 0; g < 4; g++, j = _mm256_add_epi32(j, _mm256_set1_epi32(8))) {
            const __m256i hb = _mm256_and_si256(_mm256_slli_epi32(_mm256_srlv_epi32(bits, j), 4), bit4);
            c[g] = _mm256_or_si256(c[g], hb);
        }
    }
}

/* dst[8g..] = (c[g] - offset) * d */
static inline void store_scaled(float *dst, const __m256i c[4], int offset, __m256 d)
{
    const __m256i off = _mm256_set1_epi32(offset);
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(c[g], off)), d));
}

/* dst[8g..] = c[g] * d + m */
static inline void store_scaled_min(float *dst, const __m256i c[4], __m256 d, __m256 m)
{
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(dst + 8 * g, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c[g]), d), m));
}

static void dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 18, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 2, NULL, c);
        store_scaled(dst, c, 8, fp16_scale(blk));
    }
}

static void dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 20, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 4, NULL, c);
        store_scaled_min(dst, c, fp16_scale(blk), fp16_scale(blk + 2));
    }
}

static void dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 22, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 6, blk + 2, c);
        store_scaled(dst, c, 16, fp16_scale(blk));
    }
}

static void dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 24, dst += QK) {
        __m256i c[4];
        nibble_codes(blk + 8, blk + 4, c);
        store_scaled_min(dst, c, fp16_scale(blk), fp16_scale(blk + 2));
    }
}

/* Q8_0 (34-byte blocks) and Q8_1 (36): d, [s,] qs[32]; output q * d. */
static inline void q8_blocks(const uint8_t *blk, float *dst, int64_t nblocks, int block_bytes)
{
    const int qs_at = block_bytes - QK;
    for (int64_t b = 0; b < nblocks; b++, blk += block_bytes, dst += QK) {
        const __m256 d = fp16_scale(blk);
        for (int g = 0; g < 4; g++) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + qs_at + 8 * g)));
            _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

static void dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    q8_blocks(src, dst, n / QK, 34);
}

static void dequantize_q8_1(const void *src, float *dst, int64_t n)
{
    q8_blocks(src, dst, n / QK, 36);
}

void gq_avx2_fill_legacy(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q4_0].dequantize = dequantize_q4_0;
    t[GGUFQ_TYPE_Q4_1].dequantize = dequantize_q4_1;
    t[GGUFQ_TYPE_Q5_0].dequantize = dequantize_q5_0;
    t[GGUFQ_TYPE_Q5_1].dequantize = dequantize_q5_1;
    t[GGUFQ_TYPE_Q8_0].dequantize = dequantize_q8_0;
    t[GGUFQ_TYPE_Q8_1].dequantize = dequantize_q8_1;
}
