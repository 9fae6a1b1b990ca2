/*
 * iq1_half_avx512.c — AVX-512 fused F16 / BF16 dequantizer for IQ1_S.
 * Scalar twin: gq_dequantize_iq1_s (src/quants/iq1.c), then gq_quantize_f16
 * / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is dl * (g + delta) with g in {-1, 0, 1} from the grid and dl,
 * delta per group of 32: three values per group. Per block the kernel
 * computes them in F32 in the scalar order (dl = d * (2s + 1), then
 * dl * ((float)g + delta)), converts the 8 groups' values once
 * (half_avx512.h) into a 32-word VPERMW table (entry 4 * group + (g & 3)),
 * and looks each weight's half up by its coordinate's low two bits (0, 1, 3
 * for 0, 1, -1) under its group. The 2048-entry grid does not fit in
 * registers: the grid points' coordinate bytes are loaded as the F32 kernel
 * does and widened to word indices. The block's table is made one block
 * ahead (its latency overlaps the previous block's lookups).
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx512/iq_half_avx512.h"
#include "simd/simd.h"

#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))

/* 4 x u16: the low byte of each lane is one qs byte. */
#define LOW_BYTES_16 UINT64_C(0x00FF00FF00FF00FF)
/* 4 x u16: bits 8..10 of each lane, the high index bits. */
#define HIGH_BITS_16 UINT64_C(0x0700070007000700)

/* The table of a block's 8 groups: entry 4g + k = dl[g] * (gk + delta[g]), gk = 0, 1, -, -1 for k = 0..3. */
static inline __m512i iq1s_table(const uint8_t *blk, int bf16)
{
    const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(blk + 2 + QK_K / 8)));
    const __m256i s = _mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7));
    const __m256 dl = _mm256_mul_ps(gq_iqh_d8(gq_load_u16(blk)),
                                    _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1))));
    const __m256 delta = _mm256_blendv_ps(_mm256_set1_ps(GQ_IQ1S_DELTA), _mm256_set1_ps(-GQ_IQ1S_DELTA),
                                          _mm256_castsi256_ps(_mm256_slli_epi32(qh, 16)));
    const __m512 g = _mm512_setr_ps(0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1, 0, 1, 0, -1);
    const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i pick_hi = _mm512_add_epi32(pick, _mm512_set1_epi32(4));
    const __m512 dl16 = _mm512_castps256_ps512(dl), delta16 = _mm512_castps256_ps512(delta);
    const __m512 lo = _mm512_mul_ps(_mm512_permutexvar_ps(pick, dl16),
                                    _mm512_add_ps(g, _mm512_permutexvar_ps(pick, delta16)));
    const __m512 hi = _mm512_mul_ps(_mm512_permutexvar_ps(pick_hi, dl16),
                                    _mm512_add_ps(g, _mm512_permutexvar_ps(pick_hi, delta16)));
    return gq_iqh_to_half(lo, hi, bf16);
}

/* 32 weights of grid points i0..i3 (11-bit, in u16 lanes of idx) in group `sel` (4 * group in every lane). */
static inline void decode32(uint16_t *y, uint64_t idx, __m512i sel, __m512i table)
{
    const __m128i a = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(gq_iq1s_grid + (idx & 0xFFFF))),
                                       (long long)gq_iq1s_grid[(idx >> 16) & 0xFFFF], 1);
    const __m128i b = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(gq_iq1s_grid + ((idx >> 32) & 0xFFFF))),
                                       (long long)gq_iq1s_grid[idx >> 48], 1);
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1));
    /* bits 0-1 from the coordinate byte (0, 1 or 0xFF), the rest from sel: C ? B : A with C = ~3 */
    _mm512_storeu_si512(y, _mm512_permutexvar_epi16(_mm512_ternarylogic_epi32(w, sel, _mm512_set1_epi16(~3), 0xD8),
                                                    table));
}

static inline __attribute__((always_inline)) void iq1_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    const int64_t nb = n / QK_K;
    __m512i table = iq1s_table(blk, bf16), next = table;
    for (int64_t b = 0; b < nb; ++b, blk += IQ1_S_BYTES) {
        if (b + 1 < nb)
            next = iq1s_table(blk + IQ1_S_BYTES, bf16);
        const uint8_t *qs = blk + 2, *qh = blk + 2 + QK_K / 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 4, dst += 32) {
            /* four 11-bit indices as u16 lanes: qs byte | 3 bits of qh << 8 */
            const uint64_t idx = _pdep_u64(gq_load_u32(qs), LOW_BYTES_16) |
                                 _pdep_u64(gq_load_u16(qh + 2 * ib), HIGH_BITS_16);
            decode32(dst, idx, _mm512_set1_epi16((short)(4 * ib)), table);
        }
        table = next;
    }
}

void gq_avx512_dequantize_iq1_s_f16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq1_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 1); }
