/*
 * lowbit_half_avx2.c — AVX2 Q1_0, Q2_0, TQ1_0 and TQ2_0 dequantizers to
 * F16 / BF16. Scalar twin: gq_dequantize_q1_0 / _q2_0 (src/quants/lowbit.c)
 * and gq_dequantize_tq1_0 / _tq2_0 (src/quants/ternary.c), followed by
 * gq_quantize_f16 / gq_quantize_bf16.
 *
 * A block's weights take 2 to 4 values: the block makes them once with the
 * scalar's operations (Q1_0: d and -d; the others: (float)(code - 1) * d,
 * code 0..3), converts them with half_avx2.h, and every weight is a lookup.
 * Q1_0: each sign bit becomes a word mask (AND, compare) choosing between
 * the two halves. The others: the 4 halves repeat through 16-entry low-byte
 * and high-byte VPSHUFB tables (nibble_half_avx2.h), so index bits 2-3 do
 * not matter; the code bytes come in the order the lookup's unpack wants.
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/avx2/nibble_half_avx2.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES ((int)sizeof(blk_q1_0))
#define Q2_0_BLOCK 64
#define Q2_0_BYTES ((int)sizeof(blk_q2_0))
#define TQ_BLOCK   256
#define TQ1_BYTES  ((int)sizeof(blk_tq1_0))
#define TQ2_BYTES  ((int)sizeof(blk_tq2_0))

/* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs. */
static inline __m256 fp16_scale(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_set1_epi16((short)gq_load_u16(p)));
}

/* 8 floats to 8 halves, exactly the scalar converters. */
static inline __m128i halves8(__m256 v, int bf16)
{
    return bf16 ? _mm256_castsi256_si128(gq_avx2_f32x16_to_bf16(v, v)) : gq_avx2_f32x8_to_f16(v);
}

/* (float)(code - 1) * d for code = index & 3, split for VPSHUFB. */
static inline void code_tables(const uint8_t *d_p, int bf16, __m256i *lo, __m256i *hi)
{
    const __m128i h = halves8(_mm256_mul_ps(_mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2), fp16_scale(d_p)), bf16);
    gq_avx2_split16(_mm256_set_m128i(h, h), GQ_HALVES_IN_ORDER, lo, hi);
}

static inline void q1_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                                          16384, (short)0x8000);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        /* lane 0: -d (the scalar's unary minus: a sign flip, NaNs too), lane 1: d */
        const __m256 d = fp16_scale(blk);
        const __m128i h = halves8(_mm256_xor_ps(d, _mm256_setr_ps(-0.0f, 0, 0, 0, 0, 0, 0, 0)), bf16);
        const __m256i neg = _mm256_broadcastw_epi16(h), pos = _mm256_broadcastw_epi16(_mm_srli_epi32(h, 16));
        for (int i = 0; i < 8; i++) {   /* bit j of the 16: weight 16i + j set, d */
            const __m256i v = _mm256_set1_epi16((short)gq_load_u16(blk + 2 + 2 * i));
            const __m256i set = _mm256_cmpeq_epi16(_mm256_and_si256(v, bit), bit);
            _mm256_storeu_si256((__m256i *)(dst + 16 * i), _mm256_blendv_epi8(neg, pos, set));
        }
    }
}

/*
 * The code tables of two Q2_0 blocks from one conversion: lanes 4i..4i+3
 * are (float)(code - 1) * d_i; VPSHUFB picks block i's low and high bytes.
 */
static inline void q2_0_tables2(const uint8_t *blk, int bf16, __m256i lo[2], __m256i hi[2])
{
    const uint32_t h2 = gq_load_u16(blk) | (uint32_t)gq_load_u16(blk + Q2_0_BYTES) << 16;
    const __m256 d = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h2))),
                                              _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    const __m128i h = halves8(_mm256_mul_ps(_mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2), d), bf16);
    const __m256i hh = _mm256_set_m128i(h, h);
    for (int i = 0; i < 2; i++) {
        const char l0 = (char)(8 * i), l1 = (char)(8 * i + 2), l2 = (char)(8 * i + 4), l3 = (char)(8 * i + 6);
        lo[i] = _mm256_shuffle_epi8(hh, _mm256_setr_epi8(l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3,
                                                         l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3));
        hi[i] = _mm256_shuffle_epi8(hh, _mm256_add_epi8(_mm256_set1_epi8(1),
            _mm256_setr_epi8(l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3,
                             l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3, l0, l1, l2, l3)));
    }
}

/*
 * Q2_0: byte b holds weights 4b..4b+3 (2 bits each, LSB first). 16 weights
 * as words: VPSHUFB puts byte (weight / 4) into each word's high byte and
 * VPMULHUW by 2^(8 - 2 * (weight % 4)) brings the code down; VPACKUSWB of
 * weights 0-15 and 16-31 is the lookup's order.
 */
static inline void q2_0_block(uint16_t *dst, const uint8_t *blk, __m256i lo, __m256i hi)
{
#define GQ_HI4(b) 0x80, b, 0x80, b, 0x80, b, 0x80, b
    static const uint8_t spread[4][32] = {
        { GQ_HI4(0), GQ_HI4(1), GQ_HI4(2), GQ_HI4(3) },     { GQ_HI4(4), GQ_HI4(5), GQ_HI4(6), GQ_HI4(7) },
        { GQ_HI4(8), GQ_HI4(9), GQ_HI4(10), GQ_HI4(11) },   { GQ_HI4(12), GQ_HI4(13), GQ_HI4(14), GQ_HI4(15) },
    };
#undef GQ_HI4
    const __m256i down = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 2)));
    for (int g = 0; g < 2; g++) {
        const __m256i a = _mm256_mulhi_epu16(_mm256_shuffle_epi8(q, _mm256_loadu_si256((const __m256i *)spread[2 * g])), down);
        const __m256i c = _mm256_mulhi_epu16(_mm256_shuffle_epi8(q, _mm256_loadu_si256((const __m256i *)spread[2 * g + 1])), down);
        gq_avx2_lookup32(dst + 32 * g, lo, hi, _mm256_and_si256(_mm256_packus_epi16(a, c), _mm256_set1_epi8(3)));
    }
}

static inline void q2_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    int64_t nb = n / Q2_0_BLOCK;
    for (; nb >= 2; nb -= 2) {
        __m256i lo[2], hi[2];
        q2_0_tables2(blk, bf16, lo, hi);
        for (int i = 0; i < 2; i++, blk += Q2_0_BYTES, dst += Q2_0_BLOCK)
            q2_0_block(dst, blk, lo[i], hi[i]);
    }
    if (nb) {
        __m256i lo, hi;
        code_tables(blk, bf16, &lo, &hi);
        q2_0_block(dst, blk, lo, hi);
    }
}

/* TQ2_0: byte m of a 32-byte group holds weights m, m + 32, m + 64, m + 96;
 * VPERMQ puts the qwords in the lookup's order once per group. */
static inline void tq2_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        __m256i lo, hi;
        code_tables(blk + 64, bf16, &lo, &hi);
        for (int j = 0; j < 64; j += 32, dst += 128) {
            const __m256i q = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i *)(blk + j)), 0xD8);
            const __m256i three = _mm256_set1_epi8(3);
            gq_avx2_lookup32(dst, lo, hi, _mm256_and_si256(q, three));
            gq_avx2_lookup32(dst + 32, lo, hi, _mm256_and_si256(_mm256_srli_epi16(q, 2), three));
            gq_avx2_lookup32(dst + 64, lo, hi, _mm256_and_si256(_mm256_srli_epi16(q, 4), three));
            gq_avx2_lookup32(dst + 96, lo, hi, _mm256_and_si256(_mm256_srli_epi16(q, 6), three));
        }
    }
}

/* Trits (0..2) of byte words w at multipliers mul = 3^n << 8 (see ternary_avx2.c). */
static inline __m256i trits(__m256i w, __m256i mul)
{
    return _mm256_mulhi_epu16(_mm256_mullo_epi16(w, mul), _mm256_set1_epi16(3));
}

static inline __m256i bytes16(const uint8_t *p)
{
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p));
}

/*
 * TQ1_0: qs[0..31] trit t -> weights 32t + m; qs[32..47] trit t -> 160 +
 * 16t + m; qh[j] trit t -> 240 + 4t + j. Trits are words; VPACKUSWB of two
 * word vectors is the lookup's order (weights 0-15 and 16-31, or trit t
 * and t + 1 of 16 bytes).
 */
static inline void tq1_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    static const short pow3[5] = { 1, 3, 9, 27, 81 };
    const __m256i mqh = _mm256_setr_epi16(1 << 8, 1 << 8, 1 << 8, 1 << 8, 3 << 8, 3 << 8, 3 << 8, 3 << 8,
                                          9 << 8, 9 << 8, 9 << 8, 9 << 8, 27 << 8, 27 << 8, 27 << 8, 27 << 8);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        __m256i lo, hi, mul[5];
        code_tables(blk + 52, bf16, &lo, &hi);
        for (int t = 0; t < 5; t++)
            mul[t] = _mm256_set1_epi16((short)(pow3[t] << 8));
        const __m256i w0 = bytes16(blk), w1 = bytes16(blk + 16), w2 = bytes16(blk + 32);
        for (int t = 0; t < 5; t++)
            gq_avx2_lookup32(dst + 32 * t, lo, hi, _mm256_packus_epi16(trits(w0, mul[t]), trits(w1, mul[t])));
        gq_avx2_lookup32(dst + 160, lo, hi, _mm256_packus_epi16(trits(w2, mul[0]), trits(w2, mul[1])));
        gq_avx2_lookup32(dst + 192, lo, hi, _mm256_packus_epi16(trits(w2, mul[2]), trits(w2, mul[3])));
        const __m256i t4 = trits(w2, mul[4]);
        gq_avx2_lookup16(dst + 224, lo, hi, _mm256_packus_epi16(t4, t4));
        /* qh bytes j = 0..3 repeated: word 4t + j is byte j */
        const __m256i th = trits(_mm256_cvtepu8_epi16(_mm_set1_epi32((int)gq_load_u32(blk + 48))), mqh);
        gq_avx2_lookup16(dst + 240, lo, hi, _mm256_packus_epi16(th, th));
    }
}

#define GQ_HALF_KERNELS(t)                                                       \
    void gq_avx2_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n)  \
    {                                                                            \
        t##_half(src, dst, n, 0);                                                \
    }                                                                            \
    void gq_avx2_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n) \
    {                                                                            \
        t##_half(src, dst, n, 1);                                                \
    }
GQ_HALF_KERNELS(q1_0)
GQ_HALF_KERNELS(q2_0)
GQ_HALF_KERNELS(tq1_0)
GQ_HALF_KERNELS(tq2_0)
