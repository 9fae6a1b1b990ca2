/*
 * iq4_half_neon.c — fused half-output dequantizers for IQ4_NL and IQ4_XS on
 * NEON: gq_neon_dequantize_<t>_f16 / _bf16 give exactly the scalar
 * gq_dequantize_iq4_nl / _iq4_xs (src/quants/iq4.c) followed by
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A 32-weight group takes at most the 16 codebook values times its scale.
 * That table is made in F32 as the scalar does (dl * kvalues[q], dl = d *
 * (ls - 32) for IQ4_XS, as iq4_neon.c), converted once with half_neon.h,
 * and each weight's half is looked up by its nibble (TBL on the table's low
 * and high bytes, ST2 interleaving them). Only a non-finite d can put a
 * NaN in the table (a finite one keeps |dl * kvalues[q]| below 2^28), so
 * other blocks take the shorter no-NaN conversion.
 */
#include "common/blocks.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/neon/half_neon.h"
#include "simd/neon/neon_dequant.h"

#define GROUP       32
#define IQ4NL_BYTES ((int)sizeof(blk_iq4_nl))
#define IQ4XS_BYTES ((int)sizeof(blk_iq4_xs))

/* The group's table dl * kvalues[q] (the codebook as floats in book). */
static inline gq_neon_half_table group_table(float32x4_t dl, const float32x4_t book[4], int bf16,
                                              int maybe_nan)
{
    float32x4_t v[4];
    for (int k = 0; k < 4; k++)
        v[k] = vmulq_f32(dl, book[k]);
    return gq_neon_half_table16(v, bf16, maybe_nan);
}

static inline void dequantize_iq4_nl_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    float32x4_t book[4];
    nq_s8x16_to_f32(vld1q_s8(gq_kvalues_iq4nl), book);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL)
        gq_neon_store_nibbles32(dst, group_table(vdupq_n_f32(nq_fp16_at(blk)), book, bf16,
                                                 gq_neon_f16_nonfinite_at(blk)), blk + 2);
}

static inline void dequantize_iq4_xs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    float32x4_t book[4];
    nq_s8x16_to_f32(vld1q_s8(gq_kvalues_iq4nl), book);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const float32x4_t d = vdupq_n_f32(nq_fp16_at(blk));
        const int maybe_nan = gq_neon_f16_nonfinite_at(blk);
        const unsigned scales_h = blk[2] | (unsigned)blk[3] << 8;
        const uint8_t *scales_l = blk + 4;
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / GROUP; ++ib, qs += GROUP / 2, dst += GROUP) {
            const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
            /* scalar: d * (ls - 32), the int converted to float first */
            gq_neon_store_nibbles32(dst, group_table(vmulq_n_f32(d, (float)(ls - 32)), book, bf16, maybe_nan),
                                    qs);
        }
    }
}

GQ_NEON_HALF_KERNELS(iq4_nl, dequantize_iq4_nl_half)
GQ_NEON_HALF_KERNELS(iq4_xs, dequantize_iq4_xs_half)
