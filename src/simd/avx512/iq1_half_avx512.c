/*
 * iq1_half_avx512.c — AVX-512 fused F16 / BF16 dequantizers for IQ1_S and
 * IQ1_M. Scalar twin: gq_dequantize_iq1_s / _m (src/quants/iq1.c), then
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is dl * (g + delta) with g in {-1, 0, 1} from the grid; IQ1_S has
 * dl and delta per group of 32 (three values per group), IQ1_M dl per 16 and
 * delta per 8 weights (twelve values per 32). Per block the kernel computes
 * them in F32 in the scalar order (dl = d * (2s + 1), then
 * dl * ((float)g + delta)), converts them once (half_avx512.h) into 32-word
 * VPERMW tables (IQ1_S: one, entry 4 * group + (g & 3); IQ1_M: one per 64
 * weights, entry 16 * (group of 32 % 2) + 8 * (half) + 4 * (delta < 0) +
 * (g & 3)), and looks each weight's half up by its coordinate's low two bits
 * (0, 1, 3 for 0, 1, -1) under its group. (No sign flip: a NaN dl times a
 * negative factor keeps dl's sign, so each value is computed, not negated.) The 2048-entry grid does not fit in
 * registers: the grid points' coordinate bytes are loaded as the F32 kernel
 * does and widened to word indices. The block's table is made one block
 * ahead (its latency overlaps the previous block's lookups).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx512/iq_half_avx512.h"
#include "simd/simd.h"

#define IQ1_S_BYTES ((int)sizeof(blk_iq1_s))
#define IQ1_M_BYTES ((int)sizeof(blk_iq1_m))

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

/* 32 weights of grid points i0..i3 (11-bit, in u16 lanes of idx); bits 2-4 of `sel` their table entries' group. */
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

/* What an IQ1_M block's 256 weights are decoded from. */
typedef struct iq1m_block {
    __m512i  table[4];  /* halves of groups-of-32 2t, 2t + 1 */
    uint64_t idx[8];    /* the four 11-bit grid indices of group-of-32 ib, in u16 lanes */
    uint32_t neg;       /* bit k: point k has delta < 0 */
} iq1m_block;

static inline void iq1m_prepare(iq1m_block *p, const uint8_t *blk, int bf16)
{
    const uint8_t *qs = blk, *qh = blk + QK_K / 8;
    const uint64_t sc = gq_load_u32(blk + 48) | (uint64_t)gq_load_u32(blk + 52) << 32;
    /* the f16 super-block scale lives in the top nibble of each u16 */
    const __m256 d = gq_iqh_d8((uint16_t)_pext_u64(sc, UINT64_C(0xF000F000F000F000)));
    /* scale of half-group k (16 weights): bits 3 * (k % 4) of scale word k / 4 */
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25);
    __m512 dl = _mm512_setzero_ps();
    for (int w = 0; w < 2; ++w) {
        const __m256i s = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)(sc >> 32 * w)), shifts),
                                           _mm256_set1_epi32(7));
        const __m256i odd = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
        const __m256 v = _mm256_mul_ps(d, _mm256_cvtepi32_ps(odd));
        dl = w ? _mm512_insertf32x8(dl, v, 1) : _mm512_castps256_ps512(v);
    }
    /* (float)g + delta for entry e: g = 0, 1, -, -1 by e % 4; delta < 0 when e & 4 */
    const __m512 gd = _mm512_setr_ps(0.125f, 1.125f, 0, -0.875f, -0.125f, 0.875f, 0, -1.125f,
                                     0.125f, 1.125f, 0, -0.875f, -0.125f, 0.875f, 0, -1.125f);
    const __m512i half = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    for (int t = 0; t < 4; ++t) {
        const __m512 lo = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_add_epi32(half, _mm512_set1_epi32(4 * t)), dl), gd);
        const __m512 hi = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_add_epi32(half, _mm512_set1_epi32(4 * t + 2)), dl), gd);
        p->table[t] = gq_iqh_to_half(lo, hi, bf16);
    }
    /* point k: qs[k] | low 3 bits of nibble k of qh << 8; bit 3 of the nibble: delta < 0 */
    uint64_t nib[2];
    memcpy(nib, qh, sizeof nib);
    for (int ib = 0; ib < 8; ++ib)
        p->idx[ib] = _pdep_u64(gq_load_u32(qs + 4 * ib), LOW_BYTES_16) |
                     (_pdep_u64(nib[ib / 4] >> 16 * (ib % 4), HIGH_BITS_16 | UINT64_C(0x0800080008000800)) &
                      HIGH_BITS_16);
    p->neg = (uint32_t)_pext_u64(nib[0], UINT64_C(0x8888888888888888)) |
             (uint32_t)_pext_u64(nib[1], UINT64_C(0x8888888888888888)) << 16;
}

static inline __attribute__((always_inline)) void iq1_m_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    const int64_t nb = n / QK_K;
    iq1m_block cur, next;
    iq1m_prepare(&cur, blk, bf16);
    next = cur;
    for (int64_t b = 0; b < nb; ++b, blk += IQ1_M_BYTES) {
        if (b + 1 < nb)
            iq1m_prepare(&next, blk + IQ1_M_BYTES, bf16);
        for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
            /* 16 (ib % 2) + 8 (half) + 4 (delta < 0) for weights 8l.. */
            const __m512i base = _mm512_set_epi16(24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24,
                                                  16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16);
            const __m512i grp = ib % 2 ? base : _mm512_sub_epi16(base, _mm512_set1_epi16(16));
            const __mmask32 neg = (__mmask32)(_pdep_u32(cur.neg >> 4 * ib, 0x01010101u) * 0xFFu);
            decode32(dst, cur.idx[ib], _mm512_mask_add_epi16(grp, neg, grp, _mm512_set1_epi16(4)), cur.table[ib / 2]);
        }
        cur = next;
    }
}

void gq_avx512_dequantize_iq1_s_f16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq1_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq1_s_half(src, dst, n, 1); }
void gq_avx512_dequantize_iq1_m_f16(const void *src, uint16_t *dst, int64_t n) { iq1_m_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq1_m_bf16(const void *src, uint16_t *dst, int64_t n) { iq1_m_half(src, dst, n, 1); }
