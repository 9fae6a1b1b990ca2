/*
 * lowbit_half_avx512.c — AVX-512 Q1_0, Q2_0, TQ1_0 and TQ2_0 dequantizers
 * to F16 / BF16. Scalar twin: gq_dequantize_q1_0 / _q2_0 (src/quants/lowbit.c)
 * and gq_dequantize_tq1_0 / _tq2_0 (src/quants/ternary.c), followed by
 * gq_quantize_f16 / gq_quantize_bf16.
 *
 * A block's weights take 2 to 4 values: the block makes them once with the
 * scalar's operations (Q1_0: d and -d; the others: (float)(code - 1) * d,
 * code 0..3), converts them with half_avx512.h, and every weight is a
 * lookup. Q1_0: its sign bits are the mask of a VPBLENDMW between the two
 * halves. The others: the 4 halves repeat through the 32-word VPERMW
 * table, so only an index's low 2 bits matter and no masking is needed;
 * TQ2_0 codes come down by a word shift, Q2_0 codes by VPSHUFB (byte to
 * word) and VPSRLVW, TQ1_0 trits as in ternary_avx2.c: mullo16(byte,
 * 3^n << 8) then mulhi16(., 3).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/avx512/half_avx512.h"

#define Q1_0_BLOCK 128
#define Q1_0_BYTES ((int)sizeof(blk_q1_0))
#define Q2_0_BLOCK 64
#define Q2_0_BYTES ((int)sizeof(blk_q2_0))
#define TQ_BLOCK   256
#define TQ1_BYTES  ((int)sizeof(blk_tq1_0))
#define TQ2_BYTES  ((int)sizeof(blk_tq2_0))

/* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs. */
static inline __m512 fp16_scale(const uint8_t *p)
{
    return _mm512_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(gq_load_u16(p))));
}

static inline __m256i halves16(__m512 v, int bf16)
{
    return bf16 ? gq_avx512_f32x16_to_bf16(v) : gq_avx512_f32x16_to_f16(v);
}

/* (float)(code - 1) * d for code = index & 3, as 32 halves (period 4). */
static inline __m512i code_table(const uint8_t *d_p, int bf16)
{
    const __m512 codes = _mm512_castsi512_ps(_mm512_broadcast_i32x4(_mm_castps_si128(_mm_setr_ps(-1, 0, 1, 2))));
    return _mm512_broadcast_i64x4(halves16(_mm512_mul_ps(codes, fp16_scale(d_p)), bf16));
}

static inline void q1_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / Q1_0_BLOCK; b++, blk += Q1_0_BYTES, dst += Q1_0_BLOCK) {
        /* lane 0: -d (the scalar's unary minus: a sign flip, NaNs too), lane 1: d */
        const __m512 d = fp16_scale(blk);
        const __m512i h = _mm512_castsi256_si512(
            halves16(_mm512_mask_xor_ps(d, 1, d, _mm512_set1_ps(-0.0f)), bf16));
        const __m512i neg = _mm512_broadcastw_epi16(_mm512_castsi512_si128(h));
        const __m512i pos = _mm512_broadcastw_epi16(_mm_srli_epi32(_mm512_castsi512_si128(h), 16));
        for (int i = 0; i < 4; i++)   /* bit j of the 32: weight 32i + j set, d */
            _mm512_storeu_si512(dst + 32 * i,
                                _mm512_mask_blend_epi16(_cvtu32_mask32(gq_load_u32(blk + 2 + 4 * i)), neg, pos));
    }
}

/*
 * The code tables of four Q2_0 blocks from one conversion: lanes 4i..4i+3
 * are (float)(code - 1) * d_i; t[i] holds block i's 4 halves through all
 * 32 words (one VPERMW each).
 */
static inline void q2_0_tables4(const uint8_t *blk, int bf16, __m512i t[4])
{
    const uint64_t h4 = (uint64_t)gq_load_u16(blk) | (uint64_t)gq_load_u16(blk + Q2_0_BYTES) << 16 |
                        (uint64_t)gq_load_u16(blk + 2 * Q2_0_BYTES) << 32 |
                        (uint64_t)gq_load_u16(blk + 3 * Q2_0_BYTES) << 48;
    const __m512 d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                           _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h4))));
    const __m512 codes = _mm512_castsi512_ps(_mm512_broadcast_i32x4(_mm_castps_si128(_mm_setr_ps(-1, 0, 1, 2))));
    const __m512i h = _mm512_castsi256_si512(halves16(_mm512_mul_ps(codes, d), bf16));
    for (int i = 0; i < 4; i++)
        t[i] = _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_set4_epi32(0x00030002, 0x00010000, 0x00030002, 0x00010000),
                                                         _mm512_set1_epi16((short)(4 * i))), h);
}

/*
 * Q2_0: byte b holds weights 4b..4b+3 (2 bits each, LSB first). Weights
 * 32h..32h+31 are bytes 8h..8h+7: VPSHUFB copies byte 8h + 2l + k/4 into
 * word k of 128-bit lane l, VPSRLVW shifts it by 2 * (k % 4).
 */
static inline void q2_0_block(uint16_t *dst, const uint8_t *blk, __m512i t)
{
#define GQ_WORDS_OF(b) b, 0x80, b, 0x80, b, 0x80, b, 0x80, b + 1, 0x80, b + 1, 0x80, b + 1, 0x80, b + 1, 0x80
    static const uint8_t spread[2][64] = {
        { GQ_WORDS_OF(0), GQ_WORDS_OF(2), GQ_WORDS_OF(4), GQ_WORDS_OF(6) },
        { GQ_WORDS_OF(8), GQ_WORDS_OF(10), GQ_WORDS_OF(12), GQ_WORDS_OF(14) },
    };
#undef GQ_WORDS_OF
    const __m512i shift = _mm512_broadcast_i32x4(_mm_setr_epi16(0, 2, 4, 6, 0, 2, 4, 6));
    const __m512i q = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(blk + 2)));
    for (int h = 0; h < 2; h++)
        _mm512_storeu_si512(dst + 32 * h, _mm512_permutexvar_epi16(
            _mm512_srlv_epi16(_mm512_shuffle_epi8(q, _mm512_loadu_si512(spread[h])), shift), t));
}

static inline void q2_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    int64_t nb = n / Q2_0_BLOCK;
    for (; nb >= 4; nb -= 4) {
        __m512i t[4];
        q2_0_tables4(blk, bf16, t);
        for (int i = 0; i < 4; i++, blk += Q2_0_BYTES, dst += Q2_0_BLOCK)
            q2_0_block(dst, blk, t[i]);
    }
    for (; nb > 0; nb--, blk += Q2_0_BYTES, dst += Q2_0_BLOCK)
        q2_0_block(dst, blk, code_table(blk, bf16));
}

/* TQ2_0: byte m of a 32-byte group holds weights m, m + 32, m + 64, m + 96. */
static inline void tq2_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ2_BYTES) {
        const __m512i t = code_table(blk + 64, bf16);
        for (int j = 0; j < 64; j += 32, dst += 128) {
            const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(blk + j)));
            _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(w, t));
            _mm512_storeu_si512(dst + 32, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 2), t));
            _mm512_storeu_si512(dst + 64, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 4), t));
            _mm512_storeu_si512(dst + 96, _mm512_permutexvar_epi16(_mm512_srli_epi16(w, 6), t));
        }
    }
}

/* Trits of byte words w (byte in bits 0-7) at multipliers mul = 3^n << 8: 0, 1 or 2. */
static inline __m512i trits(__m512i w, __m512i mul)
{
    return _mm512_mulhi_epu16(_mm512_mullo_epi16(w, mul), _mm512_set1_epi16(3));
}

/*
 * TQ1_0: qs[0..31] trit t -> weights 32t + m; qs[32..47] trit t -> 160 +
 * 16t + m (two trits per vector, the 16 bytes widened twice); qh[j] trit t
 * -> 240 + 4t + j. The table's 4th entry (code 3) is never read.
 */
static inline void tq1_0_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const __m512i m01 = _mm512_inserti64x4(_mm512_set1_epi16(1 << 8), _mm256_set1_epi16(3 << 8), 1);
    const __m512i m23 = _mm512_inserti64x4(_mm512_set1_epi16(9 << 8), _mm256_set1_epi16(27 << 8), 1);
    const __m512i m4 = _mm512_set1_epi16(81 << 8);
    const __m256i mqh = _mm256_setr_epi16(1 << 8, 1 << 8, 1 << 8, 1 << 8, 3 << 8, 3 << 8, 3 << 8, 3 << 8,
                                          9 << 8, 9 << 8, 9 << 8, 9 << 8, 27 << 8, 27 << 8, 27 << 8, 27 << 8);
    static const short pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / TQ_BLOCK; b++, blk += TQ1_BYTES, dst += TQ_BLOCK) {
        const __m512i t = code_table(blk + 52, bf16);
        const __m512i wa = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)blk));
        for (int k = 0; k < 5; k++)
            _mm512_storeu_si512(dst + 32 * k,
                                _mm512_permutexvar_epi16(trits(wa, _mm512_set1_epi16((short)(pow3[k] << 8))), t));
        const __m512i wb = _mm512_cvtepu8_epi16(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(blk + 32))));
        _mm512_storeu_si512(dst + 160, _mm512_permutexvar_epi16(trits(wb, m01), t));
        _mm512_storeu_si512(dst + 192, _mm512_permutexvar_epi16(trits(wb, m23), t));
        _mm256_storeu_si256((__m256i *)(dst + 224),
                            _mm512_castsi512_si256(_mm512_permutexvar_epi16(trits(wb, m4), t)));
        /* qh bytes j = 0..3 repeated: word 4t + j is byte j */
        const __m256i wh = _mm256_cvtepu8_epi16(_mm_set1_epi32((int)gq_load_u32(blk + 48)));
        const __m256i th = _mm256_mulhi_epu16(_mm256_mullo_epi16(wh, mqh), _mm256_set1_epi16(3));
        _mm256_storeu_si256((__m256i *)(dst + 240), _mm256_permutexvar_epi16(th, _mm512_castsi512_si256(t)));
    }
}

#define GQ_HALF_KERNELS(t)                                                         \
    void gq_avx512_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n)  \
    {                                                                              \
        t##_half(src, dst, n, 0);                                                  \
    }                                                                              \
    void gq_avx512_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n) \
    {                                                                              \
        t##_half(src, dst, n, 1);                                                  \
    }
GQ_HALF_KERNELS(q1_0)
GQ_HALF_KERNELS(q2_0)
GQ_HALF_KERNELS(tq1_0)
GQ_HALF_KERNELS(tq2_0)
