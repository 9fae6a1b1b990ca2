/*
 * iq2_half_avx2.c — AVX2 fused F16 / BF16 dequantizers for IQ2_XXS, IQ2_XS
 * and IQ2_S. Scalar twin: gq_dequantize_iq2_* (src/quants/iq2.c), then
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is +-(db * mag) with mag one of 8, 25, 43, whose low two bits (0,
 * 1, 3) are distinct. Per block the kernel computes db * mag for each scale
 * group in F32 in the scalar order (db = d * (0.5f + ls) * 0.25f, then
 * db * (float)mag), converts the values of 4 groups at a time
 * (half_avx2.h) into a 16-entry VPSHUFB table of their low bytes and one of
 * their high bytes (entry 4 * group + (mag & 3)), and looks each weight's
 * two bytes up by its grid byte's low two bits under its group; the sign
 * flips bit 7 of the high byte (the conversions round the magnitude alone
 * and keep a NaN's sign, so half(-v) is half(v) with its sign bit flipped:
 * the scalar -(db * mag), then converted). 32 weights are decoded at once:
 * the 4 grid points are loaded in the order (0, 2 | 1, 3), so that the byte
 * unpacks give weights 0-15 and 16-31 in order.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx2/iq_half_avx2.h"
#include "simd/simd.h"

#define IQ2_XXS_BYTES ((int)sizeof(blk_iq2_xxs))
#define IQ2_XS_BYTES  ((int)sizeof(blk_iq2_xs))
#define IQ2_S_BYTES   ((int)sizeof(blk_iq2_s))

static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* What a block's 256 weights are decoded from. */
typedef struct iq2_block {
    gq_iqh2_tables table[4];  /* groups 4t.. (IQ2_XXS: groups of 32, tables 0-1; IQ2_XS/S: of 16) */
    uint64_t    idx[8];    /* the 4 grid indices of weights 32ib.., in u16 lanes */
    uint64_t    sgn[8];    /* IQ2_XXS/XS: their 4 ksigns64 indices in u16 lanes; IQ2_S: the 4 sign bytes */
} iq2_block;

/* The tables of groups 4t..4t+3 of db (db[g] in dword g of db_lo/db_hi for g < 8 / >= 8). */
static inline gq_iqh2_tables group_tables(__m256 db, int t, int bf16)
{
    const __m256 mag = _mm256_setr_ps(8, 25, 0, 43, 8, 25, 0, 43);
    const __m256i g0 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i a = _mm256_add_epi32(g0, _mm256_set1_epi32(4 * (t % 2)));
    const __m256i b = _mm256_add_epi32(g0, _mm256_set1_epi32(4 * (t % 2) + 2));
    return gq_iqh2_to_tables(_mm256_mul_ps(_mm256_permutevar8x32_ps(db, a), mag),
                     _mm256_mul_ps(_mm256_permutevar8x32_ps(db, b), mag), bf16);
}

/* db = d * (0.5f + ls) * 0.25f on 8 lanes. */
static inline __m256 group_scales(__m256 d, __m256i ls)
{
    return _mm256_mul_ps(_mm256_mul_ps(d, _mm256_add_ps(_mm256_set1_ps(0.5f), _mm256_cvtepi32_ps(ls))),
                         _mm256_set1_ps(0.25f));
}

/* kind: 0 IQ2_XXS, 1 IQ2_XS, 2 IQ2_S */
static inline void decode256(uint16_t *dst, const iq2_block *p, const uint64_t *grid, int kind)
{
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
        const __m256i neg = kind == 2 ? gq_iqh2_sign_bytes((uint32_t)p->sgn[ib])
                                      : _mm256_and_si256(gq_iqh2_load4(gq_ksigns64, p->sgn[ib]), _mm256_set1_epi8((char)0x80));
        /* groups of 32: 4 (ib % 4); of 16: 4 (2 (ib % 2) + half), half = 1 in bytes 8-15 of a lane */
        const __m256i half = _mm256_setr_epi64x(0, 0x0404040404040404, 0, 0x0404040404040404);
        const __m256i sel = kind == 0 ? _mm256_set1_epi8((char)(4 * (ib % 4)))
                                      : _mm256_add_epi8(half, _mm256_set1_epi8((char)(8 * (ib % 2))));
        gq_iqh2_decode32(dst, grid, p->idx[ib], sel, p->table[kind == 0 ? ib / 4 : ib / 2], neg);
    }
}

/* IQ2_XS / IQ2_S: the 16 scales of 8 bytes (low nibble first): the tables of groups 0-15. */
static inline void nibble_tables(iq2_block *p, const uint8_t *blk, const uint8_t *scales, int bf16)
{
    const uint64_t s = load_u64(scales);
    const __m256 d = gq_iqh2_d8(gq_load_u16(blk));
    for (int h = 0; h < 2; ++h) {
        const __m128i nib = _mm_cvtsi64_si128((long long)_pdep_u64(s >> 32 * h, UINT64_C(0x0F0F0F0F0F0F0F0F)));
        const __m256 db = group_scales(d, _mm256_cvtepu8_epi32(nib));
        p->table[2 * h] = group_tables(db, 0, bf16);
        p->table[2 * h + 1] = group_tables(db, 1, bf16);
    }
}

static inline void xxs_prepare(iq2_block *p, const uint8_t *blk, int bf16)
{
    /* 8 x (4 grid bytes, sign-and-scale word): the odd dwords of 64 bytes */
    const __m256i a = _mm256_loadu_si256((const __m256i *)(blk + 2));
    const __m256i b = _mm256_loadu_si256((const __m256i *)(blk + 34));
    const __m256i aux = _mm256_permute4x64_epi64(
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), 0xDD)), 0xD8);
    const __m256 db = group_scales(gq_iqh2_d8(gq_load_u16(blk)), _mm256_srli_epi32(aux, 28));
    p->table[0] = group_tables(db, 0, bf16);
    p->table[1] = group_tables(db, 1, bf16);
    for (int ib = 0; ib < 8; ++ib) {
        p->idx[ib] = _pdep_u64(gq_load_u32(blk + 2 + 8 * ib), UINT64_C(0x00FF00FF00FF00FF));
        p->sgn[ib] = _pdep_u64(gq_load_u32(blk + 6 + 8 * ib), UINT64_C(0x007F007F007F007F));
    }
}

static inline void xs_prepare(iq2_block *p, const uint8_t *blk, int bf16)
{
    nibble_tables(p, blk, blk + 2 + QK_K / 4, bf16);
    /* 32 x u16: 9-bit grid index, 7 sign bits */
    for (int ib = 0; ib < 8; ++ib) {
        const uint64_t q = load_u64(blk + 2 + 8 * ib);
        p->idx[ib] = q & UINT64_C(0x01FF01FF01FF01FF);
        p->sgn[ib] = (q >> 9) & UINT64_C(0x007F007F007F007F);
    }
}

static inline void s_prepare(iq2_block *p, const uint8_t *blk, int bf16)
{
    const uint8_t *qs = blk + 2, *signs = qs + QK_K / 8, *qh = blk + 2 + QK_K / 4, *scales = qh + QK_K / 32;
    nibble_tables(p, blk, scales, bf16);
    for (int ib = 0; ib < 8; ++ib) {
        p->idx[ib] = _pdep_u64(gq_load_u32(qs + 4 * ib), UINT64_C(0x00FF00FF00FF00FF)) |
                     _pdep_u64(qh[ib], UINT64_C(0x0300030003000300));
        p->sgn[ib] = gq_load_u32(signs + 4 * ib);
    }
}

/*
 * The block loop: prepare block b + 1 (its table's latency then overlaps
 * block b's lookups), decode block b. Two states in memory, used in turn
 * (copying one into the other spilled most of the 16 ymm registers).
 */
#define IQ2_HALF_LOOP(prepare, bytes, grid, kind)                             \
    do {                                                                      \
        const uint8_t *blk = src;                                             \
        const int64_t nb = n / QK_K;                                          \
        iq2_block state[2];                                                   \
        prepare(&state[0], blk, bf16);                                        \
        for (int64_t b = 0; b < nb; ++b, blk += (bytes), dst += QK_K) {       \
            if (b + 1 < nb)                                                   \
                prepare(&state[(b + 1) % 2], blk + (bytes), bf16);            \
            decode256(dst, &state[b % 2], grid, kind);                        \
        }                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void iq2_xxs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    IQ2_HALF_LOOP(xxs_prepare, IQ2_XXS_BYTES, gq_iq2xxs_grid, 0);
}

static inline __attribute__((always_inline)) void iq2_xs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    IQ2_HALF_LOOP(xs_prepare, IQ2_XS_BYTES, gq_iq2xs_grid, 1);
}

static inline __attribute__((always_inline)) void iq2_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    IQ2_HALF_LOOP(s_prepare, IQ2_S_BYTES, gq_iq2s_grid, 2);
}

void gq_avx2_dequantize_iq2_xxs_f16(const void *src, uint16_t *dst, int64_t n) { iq2_xxs_half(src, dst, n, 0); }
void gq_avx2_dequantize_iq2_xxs_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_xxs_half(src, dst, n, 1); }
void gq_avx2_dequantize_iq2_xs_f16(const void *src, uint16_t *dst, int64_t n) { iq2_xs_half(src, dst, n, 0); }
void gq_avx2_dequantize_iq2_xs_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_xs_half(src, dst, n, 1); }
void gq_avx2_dequantize_iq2_s_f16(const void *src, uint16_t *dst, int64_t n) { iq2_s_half(src, dst, n, 0); }
void gq_avx2_dequantize_iq2_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_s_half(src, dst, n, 1); }
