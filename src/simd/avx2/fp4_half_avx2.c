/*
 * fp4_half_avx2.c — MXFP4 and NVFP4 dequantizers to F16 / BF16 (AVX2), and
 * the per-scale half tables they and the AVX-512 ones (fp4_half_avx512.c)
 * read. Scalar twin: gq_dequantize_mxfp4 / gq_dequantize_nvfp4
 * (src/quants/fp4.c) followed by gq_quantize_f16 / gq_quantize_bf16.
 *
 * An FP4 scale is one byte, so every block's 16 values are one of 256
 * tables: gq_avx2_prepare_fp4_half (the prepare step of both x86 kernel
 * tables) fills them once with the scalar's own products (float)kvalue * d
 * and the scalar converters, so they are its halves by construction. The
 * kernels do no arithmetic: they look each weight's half up in its block's
 * table (VPSHUFB on the low and on the high bytes here, VPERMW on AVX-512).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp8.h"
#include "quants/quants.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK 64
#define NVFP4_BYTES ((int)sizeof(blk_nvfp4))

uint16_t gq_fp4_half_tables[4][256][16] __attribute__((aligned(64)));

void gq_avx2_prepare_fp4_half(void)
{
    gq_avx2_prepare_fp4();
    for (int s = 0; s < 256; s++) {
        const float dm = gq_e8m0_to_fp32_half((uint8_t)s), dn = gq_ue4m3_to_fp32((uint8_t)s);
        float vm[16], vn[16];
        for (int c = 0; c < 16; c++) {
            vm[c] = (float)gq_kvalues_fp4[c] * dm;
            vn[c] = (float)gq_kvalues_fp4[c] * dn;
        }
        (void)gq_quantize_f16(vm, gq_fp4_half_tables[0][s], 1, 16, NULL);
        (void)gq_quantize_bf16(vm, gq_fp4_half_tables[1][s], 1, 16, NULL);
        (void)gq_quantize_f16(vn, gq_fp4_half_tables[2][s], 1, 16, NULL);
        (void)gq_quantize_bf16(vn, gq_fp4_half_tables[3][s], 1, 16, NULL);
    }
}
