/*
 * iq3_half_avx2.c — AVX2 fused F16 / BF16 dequantizers for IQ3_XXS and
 * IQ3_S. Scalar twin: gq_dequantize_iq3_* (src/quants/iq3.c), then
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is +-(db * mag) with mag one of 8 grid levels (IQ3_XXS: 4, 12,
 * ..., 52, 62, level = mag >> 3; IQ3_S: 1, 3, ..., 15, level = mag >> 1),
 * db per group of 32. Per block the kernel computes db * mag for each group
 * and level in F32 in the scalar order (IQ3_XXS db = d * (0.5f + ls) *
 * 0.5f, IQ3_S db = d * (1 + 2 * ls)), converts two groups' values at a
 * time (half_avx2.h) into 16-entry VPSHUFB tables of their halves' low and
 * high bytes (entry 8 * (group % 2) + level), and looks each weight's half
 * up by its level; the sign flips bit 7 of the high byte (see
 * iq_half_avx2.h). A group's 8 grid entries are gathered (VPGATHERDD) in
 * the order that makes the byte unpacks give weights 0-15 and 16-31 (8
 * scalar loads and inserts instead: 15% slower). IQ3_XXS has no F16 kernel
 * here: its F32 kernel then VCVTPS2PH measured faster (6.8 vs 6.2 Gw/s);
 * its BF16 output, whose conversion costs more, gains (5.5 vs 5.1).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx2/iq_half_avx2.h"
#include "simd/simd.h"

#define IQ3XXS_BYTES ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES   ((int)sizeof(blk_iq3_s))

/* What a block's 256 weights are decoded from. */
typedef struct iq3_block {
    gq_iqh2_tables table[4];  /* groups 2t, 2t + 1 */
    uint64_t       sgn[8];    /* IQ3_XXS: 4 ksigns64 indices in u16 lanes; IQ3_S: the 4 sign bytes */
} iq3_block;

/* The tables of the 8 groups of db: table t = db[2t] * mag, db[2t + 1] * mag. */
static inline void group_tables(gq_iqh2_tables *t, __m256 db, __m256 mag, int bf16)
{
    for (int k = 0; k < 4; ++k)
        t[k] = gq_iqh2_to_tables(_mm256_mul_ps(_mm256_permutevar8x32_ps(db, _mm256_set1_epi32(2 * k)), mag),
                                 _mm256_mul_ps(_mm256_permutevar8x32_ps(db, _mm256_set1_epi32(2 * k + 1)), mag), bf16);
}

/*
 * 32 weights of group ib: the grid entries by the 8 indices `idx` (dwords in
 * the order e0 e1 e4 e5 | e2 e3 e6 e7), their levels (byte >> shift, & 7)
 * under 8 * (ib % 2), `neg` 0x80 where negative.
 */
static inline void decode32(uint16_t *y, const uint32_t *grid, __m256i idx, int shift, int ib, gq_iqh2_tables t,
                            __m256i neg)
{
    const __m256i e = _mm256_i32gather_epi32((const int *)grid, idx, 4);
    const __m256i s = shift == 3 ? _mm256_srli_epi16(e, 3) : _mm256_srli_epi16(e, 1);
    const __m256i i = _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi8(7)), _mm256_set1_epi8((char)(8 * (ib % 2))));
    const __m256i lo = _mm256_shuffle_epi8(t.lo, i);
    const __m256i hi = _mm256_xor_si256(_mm256_shuffle_epi8(t.hi, i), neg);
    _mm256_storeu_si256((__m256i *)y, _mm256_unpacklo_epi8(lo, hi));
    _mm256_storeu_si256((__m256i *)(y + 16), _mm256_unpackhi_epi8(lo, hi));
}

/* The 8 grid indices of group ib (bytes qs[0..8)) as dwords in decode32's order. */
static inline __m256i entry_order(const uint8_t *qs)
{
    return _mm256_permute4x64_epi64(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)qs)), 0xD8);
}

static inline void xxs_prepare(iq3_block *p, const uint8_t *blk, int bf16)
{
    const __m256 mag = _mm256_setr_ps(4, 12, 20, 28, 36, 44, 52, 62);
    const uint8_t *aux = blk + 2 + QK_K / 4;
    /* db = d * (0.5f + ls) * 0.5f, ls the top nibble of each sign-and-scale word */
    const __m256 ls = _mm256_cvtepi32_ps(_mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)aux), 28));
    const __m256 db = _mm256_mul_ps(_mm256_mul_ps(gq_iqh2_d8(gq_load_u16(blk)), _mm256_add_ps(_mm256_set1_ps(0.5f), ls)),
                                    _mm256_set1_ps(0.5f));
    group_tables(p->table, db, mag, bf16);
    for (int ib = 0; ib < 8; ++ib)
        p->sgn[ib] = _pdep_u64(gq_load_u32(aux + 4 * ib), UINT64_C(0x007F007F007F007F));
}

static inline void s_prepare(iq3_block *p, const uint8_t *blk, int bf16)
{
    const __m256 mag = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    const uint8_t *signs = blk + 2 + QK_K / 4 + QK_K / 32, *scales = signs + QK_K / 8;
    /* db = d * (1 + 2 * ls), ls nibble ib of the 4 scale bytes */
    const __m256i ls = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(scales)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                        _mm256_set1_epi32(0xf));
    const __m256 odd = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(ls, ls), _mm256_set1_epi32(1)));
    group_tables(p->table, _mm256_mul_ps(gq_iqh2_d8(gq_load_u16(blk)), odd), mag, bf16);
    for (int ib = 0; ib < 8; ++ib)
        p->sgn[ib] = gq_load_u32(signs + 4 * ib);
}

static inline void xxs_decode256(uint16_t *dst, const uint8_t *blk, const iq3_block *p)
{
    const uint8_t *qs = blk + 2;
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
        const __m256i neg = _mm256_and_si256(gq_iqh2_load4(gq_ksigns64, p->sgn[ib]), _mm256_set1_epi8((char)0x80));
        decode32(dst, gq_iq3xxs_grid, entry_order(qs), 3, ib, p->table[ib / 2], neg);
    }
}

static inline void s_decode256(uint16_t *dst, const uint8_t *blk, const iq3_block *p)
{
    const uint8_t *qs = blk + 2, *qh = qs + QK_K / 4;
    /* bit e of qh[ib] is the 9th bit of entry e: in decode32's order */
    const __m256i bit = _mm256_setr_epi32(1, 2, 16, 32, 4, 8, 64, 128);
    for (int ib = 0; ib < QK_K / 32; ++ib, qs += 8, dst += 32) {
        const __m256i h = _mm256_and_si256(_mm256_set1_epi32(qh[ib]), bit);
        const __m256i idx = _mm256_add_epi32(entry_order(qs),
                                             _mm256_and_si256(_mm256_cmpeq_epi32(h, bit), _mm256_set1_epi32(256)));
        decode32(dst, gq_iq3s_grid, idx, 1, ib, p->table[ib / 2], gq_iqh2_sign_bytes((uint32_t)p->sgn[ib]));
    }
}

/* The block loop: prepare block b + 1 (two states used in turn), decode block b. */
#define IQ3_HALF_LOOP(prepare, decode, bytes)                                 \
    do {                                                                      \
        const uint8_t *blk = src;                                             \
        const int64_t nb = n / QK_K;                                          \
        iq3_block state[2];                                                   \
        prepare(&state[0], blk, bf16);                                        \
        for (int64_t b = 0; b < nb; ++b, blk += (bytes), dst += QK_K) {       \
            if (b + 1 < nb)                                                   \
                prepare(&state[(b + 1) % 2], blk + (bytes), bf16);            \
            decode(dst, blk, &state[b % 2]);                                  \
        }                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void iq3_xxs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    IQ3_HALF_LOOP(xxs_prepare, xxs_decode256, IQ3XXS_BYTES);
}

static inline __attribute__((always_inline)) void iq3_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    IQ3_HALF_LOOP(s_prepare, s_decode256, IQ3S_BYTES);
}

void gq_avx2_dequantize_iq3_xxs_bf16(const void *src, uint16_t *dst, int64_t n) { iq3_xxs_half(src, dst, n, 1); }
void gq_avx2_dequantize_iq3_s_f16(const void *src, uint16_t *dst, int64_t n) { iq3_s_half(src, dst, n, 0); }
void gq_avx2_dequantize_iq3_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq3_s_half(src, dst, n, 1); }
