/*
 * legacy_neon.c — NEON twin of src/quants/legacy.c (Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q8_1 dequantizers).
 *
 * One 32-weight block per iteration: the 16 packed bytes give the low nibbles
 * (weights 0..15) with vandq and the high nibbles (16..31) with vshrq. Q5's
 * 32 high bits are spread to one byte per weight with a vqtbl1q_u8 broadcast
 * of the qh bytes and vtstq_u8 against {1, 2, ..., 128}. The integer level
 * (minus the offset, in int8 as the scalar does in int) is widened with vmovl
 * to int32, converted (exact) and multiplied by the broadcast scale; Q4_1 and
 * Q5_1 then add m in a separate vaddq, as the scalar's q * d + m.
 */
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"

#define QK 32

/* Byte j of the result is 0x10 if bit j (first) or bit j + 16 (second) of qh
 * is set: the fifth bit of weight j and of weight j + 16. */
static inline void q5_high_bits(const uint8_t *qh_bytes, uint8x16_t *first, uint8x16_t *second)
{
    static const uint8_t idx_first[16]  = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
    static const uint8_t idx_second[16] = { 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t bit_of[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    uint32_t qh;
    memcpy(&qh, qh_bytes, sizeof qh);
    const uint8x16_t all = vreinterpretq_u8_u32(vdupq_n_u32(qh));
    const uint8x16_t bits = vld1q_u8(bit_of), five = vdupq_n_u8(0x10);
    *first  = vandq_u8(vtstq_u8(vqtbl1q_u8(all, vld1q_u8(idx_first)), bits), five);
    *second = vandq_u8(vtstq_u8(vqtbl1q_u8(all, vld1q_u8(idx_second)), bits), five);
}

static void dequantize_q4_0_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const int8x16_t eight = vdupq_n_s8(8);
    for (int64_t i = 0; i < n / QK; i++, blk += 18, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const uint8x16_t qs = vld1q_u8(blk + 2);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(qs, vdupq_n_u8(0x0F))), eight);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(qs, 4)), eight);
        nq_store_s8_mul(dst, lo, d);
        nq_store_s8_mul(dst + QK / 2, hi, d);
    }
}

static void dequantize_q4_1_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 20, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const float32x4_t m = vdupq_n_f32(nq_fp16_at(blk + 2));
        const uint8x16_t qs = vld1q_u8(blk + 4);
        nq_store_u8_mul_add(dst, vandq_u8(qs, vdupq_n_u8(0x0F)), d, m);
        nq_store_u8_mul_add(dst + QK / 2, vshrq_n_u8(qs, 4), d, m);
    }
}

static void dequantize_q5_0_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const int8x16_t sixteen = vdupq_n_s8(16);
    for (int64_t i = 0; i < n / QK; i++, blk += 22, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        uint8x16_t h1, h2;
        q5_high_bits(blk + 2, &h1, &h2);
        const uint8x16_t qs = vld1q_u8(blk + 6);
        const uint8x16_t lo = vorrq_u8(vandq_u8(qs, vdupq_n_u8(0x0F)), h1);
        const uint8x16_t hi = vorrq_u8(vshrq_n_u8(qs, 4), h2);
        nq_store_s8_mul(dst, vsubq_s8(vreinterpretq_s8_u8(lo), sixteen), d);
        nq_store_s8_mul(dst + QK / 2, vsubq_s8(vreinterpretq_s8_u8(hi), sixteen), d);
    }
}

static void dequantize_q5_1_neon(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK; i++, blk += 24, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const float32x4_t m = vdupq_n_f32(nq_fp16_at(blk + 2));
        uint8x16_t h1, h2;
        q5_high_bits(blk + 4, &h1, &h2);
        const uint8x16_t qs = vld1q_u8(blk + 8);
        nq_store_u8_mul_add(dst, vorrq_u8(vandq_u8(qs, vdupq_n_u8(0x0F)), h1), d, m);
        nq_store_u8_mul_add(dst + QK / 2, vorrq_u8(vshrq_n_u8(qs, 4), h2), d, m);
    }
}

/* Q8_0 (d, qs[32]) and Q8_1 (d, s, qs[32]; s unused): q * d. */
static inline void dequantize_q8_blocks(const uint8_t *blk, size_t blk_bytes, size_t qs_at,
                                        float *dst, int64_t nblocks)
{
    for (int64_t i = 0; i < nblocks; i++, blk += blk_bytes, dst += QK) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        nq_store_s8_mul(dst, vld1q_s8((const int8_t *)(blk + qs_at)), d);
        nq_store_s8_mul(dst + 16, vld1q_s8((const int8_t *)(blk + qs_at + 16)), d);
    }
}

static void dequantize_q8_0_neon(const void *src, float *dst, int64_t n)
{
    dequantize_q8_blocks(src, 34, 2, dst, n / QK);
}

static void dequantize_q8_1_neon(const void *src, float *dst, int64_t n)
{
    dequantize_q8_blocks(src, 36, 4, dst, n / QK);
}

void gq_neon_fill_legacy(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q4_0].dequantize = dequantize_q4_0_neon;
    t[GGUFQ_TYPE_Q4_1].dequantize = dequantize_q4_1_neon;
    t[GGUFQ_TYPE_Q5_0].dequantize = dequantize_q5_0_neon;
    t[GGUFQ_TYPE_Q5_1].dequantize = dequantize_q5_1_neon;
    t[GGUFQ_TYPE_Q8_0].dequantize = dequantize_q8_0_neon;
    t[GGUFQ_TYPE_Q8_1].dequantize = dequantize_q8_1_neon;
}
