/*
 * fp4_neon.c — NEON twin of src/quants/fp4.c (MXFP4 and NVFP4 dequantizers).
 *
 * The 16-entry E2M1 codebook (gq_kvalues_fp4, int8) sits in one register and
 * vqtbl1q_s8 maps 16 nibbles to their int8 values at once; these are widened
 * (vmovl), converted (exact) and multiplied by the block's scale, as the
 * scalar's (float)kvalues[q] * d. MXFP4 does one 32-weight block per step
 * (low nibbles = weights 0..15, high = 16..31). NVFP4 takes two 16-weight
 * sub-blocks per 16-byte load: vzip1q_u64 / vzip2q_u64 pair each sub-block's
 * 8 low nibbles with its 8 high ones, giving its weights in output order.
 * Scales are decoded in scalar code to the same floats as fp8.h's.
 */
#include "simd/simd.h"
#include "simd/neon/neon_dequant.h"
#include "quants/fp8.h"
#include "quants/tables.h"

#define MXFP4_BLOCK  32
#define MXFP4_BYTES  (1 + MXFP4_BLOCK / 2)
#define NVFP4_BLOCK  64
#define NVFP4_NSUB   4
#define NVFP4_BYTES  (NVFP4_NSUB + NVFP4_BLOCK / 2)

/* gq_ue4m3_to_fp32 by bit assembly instead of ldexpf: 0x00 and 0x7F give 0,
 * exponent 0 gives man * 2^-10 (exact), otherwise 2^(exp - 8) * (1 + man/8),
 * whose F32 exponent field is exp + 119. Bit 7 is ignored, as there. */
static inline float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F)
        return 0.0f;
    const uint32_t exp = (x >> 3) & 0xF, man = x & 7;
    if (exp == 0)
        return (float)man * 0x1p-10f;
    return gq_f32_from_bits(((exp + 119) << 23) | (man << 20));
}

static void dequantize_mxfp4_neon(const void *src, float *dst, int64_t n)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_fp4);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const float32x4_t d = vdupq_n_f32(gq_e8m0_to_fp32_half(blk[0]));
        const uint8x16_t qs = vld1q_u8(blk + 1);
        nq_store_s8_mul(dst, vqtbl1q_s8(book, vandq_u8(qs, low4)), d);
        nq_store_s8_mul(dst + 16, vqtbl1q_s8(book, vshrq_n_u8(qs, 4)), d);
    }
}

static void dequantize_nvfp4_neon(const void *src, float *dst, int64_t n)
{
    const int8x16_t book = vld1q_s8(gq_kvalues_fp4);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES) {
        for (int s = 0; s < NVFP4_NSUB; s += 2, dst += 32) {
            const uint8x16_t qs = vld1q_u8(blk + NVFP4_NSUB + 8 * s);
            const uint64x2_t lo = vreinterpretq_u64_u8(vandq_u8(qs, low4));
            const uint64x2_t hi = vreinterpretq_u64_u8(vshrq_n_u8(qs, 4));
            const uint8x16_t first = vreinterpretq_u8_u64(vzip1q_u64(lo, hi));
            const uint8x16_t second = vreinterpretq_u8_u64(vzip2q_u64(lo, hi));
            nq_store_s8_mul(dst, vqtbl1q_s8(book, first), vdupq_n_f32(ue4m3_half(blk[s])));
            nq_store_s8_mul(dst + 16, vqtbl1q_s8(book, second),
                            vdupq_n_f32(ue4m3_half(blk[s + 1])));
        }
    }
}

void gq_neon_fill_fp4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_MXFP4].dequantize = dequantize_mxfp4_neon;
    t[GGUFQ_TYPE_NVFP4].dequantize = dequantize_nvfp4_neon;
}
