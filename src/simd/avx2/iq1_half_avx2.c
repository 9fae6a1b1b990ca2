/*
 * iq1_half_avx2.c — AVX2 fused F16 / BF16 dequantizer for IQ1_S. Scalar
 * twin: gq_dequantize_iq1_s (src/quants/iq1.c), then gq_quantize_f16 /
 * gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is dl * (g + delta) with g in {-1, 0, 1} from the grid and dl,
 * delta per group of 32: three values per group. Per block the kernel
 * computes them in F32 in the scalar order (dl = d * (2s + 1), then
 * dl * ((float)g + delta)), converts 4 groups' values at a time
 * (half_avx2.h) into 16-entry VPSHUFB tables of their halves' low and high
 * bytes (entry 4 * group + (g & 3)), and looks each weight's half up by its
 * coordinate byte's low two bits (0, 1, 3 for 0, 1, -1) under its group
 * (iq_half_avx2.h). The next block's tables are made before this block's
 * weights are decoded, so their latency overlaps.
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx2/iq_half_avx2.h"
#include "simd/simd.h"

#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))

/* The tables of the block's groups 4t..4t+3: entry 4g + k = dl[g] * (gk + delta[g]), gk = 0, 1, -, -1. */
static inline void iq1s_tables(gq_iqh2_tables *t, const uint8_t *blk, int bf16)
{
    const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(blk + 2 + QK_K / 8)));
    const __m256i s = _mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7));
    const __m256 dl = _mm256_mul_ps(gq_iqh2_d8(gq_load_u16(blk)),
                                    _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1))));
    const __m256 delta = _mm256_blendv_ps(_mm256_set1_ps(GQ_IQ1S_DELTA), _mm256_set1_ps(-GQ_IQ1S_DELTA),
                                          _mm256_castsi256_ps(_mm256_slli_epi32(qh, 16)));
    const __m256 g = _mm256_setr_ps(0, 1, 0, -1, 0, 1, 0, -1);
    const __m256i pair = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    __m256 v[4];
    for (int i = 0; i < 4; ++i) {
        const __m256i pick = _mm256_add_epi32(pair, _mm256_set1_epi32(2 * i));
        v[i] = _mm256_mul_ps(_mm256_permutevar8x32_ps(dl, pick), _mm256_add_ps(g, _mm256_permutevar8x32_ps(delta, pick)));
    }
    t[0] = gq_iqh2_to_tables(v[0], v[1], bf16);
    t[1] = gq_iqh2_to_tables(v[2], v[3], bf16);
}

static inline __attribute__((always_inline)) void iq1_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    const int64_t nb = n / QK_K;
    gq_iqh2_tables t[2][2];
    iq1s_tables(t[0], blk, bf16);
    for (int64_t b = 0; b < nb; ++b, blk += IQ1_S_BYTES) {
        if (b + 1 < nb)
            iq1s_tables(t[(b + 1) % 2], blk + IQ1_S_BYTES, bf16);
        const uint8_t *qs = blk + 2, *qh = blk + 2 + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, dst += 32) {
            /* four 11-bit indices as u16 lanes: qs byte | 3 bits of qh << 8 */
            const uint64_t idx = _pdep_u64(gq_load_u32(qs), UINT64_C(0x00FF00FF00FF00FF)) |
                                 _pdep_u64(gq_load_u16(qh + 2 * ib), UINT64_C(0x0700070007000700));
            gq_iqh2_decode32(dst, gq_iq1s_grid, idx, _mm256_set1_epi8((char)(4 * (ib % 4))), t[b % 2][ib / 4],
                             _mm256_setzero_si256());
        }
    }
}

void gq_avx2_dequantize_iq1_s_f16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 0); }
void gq_avx2_dequantize_iq1_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 1); }
