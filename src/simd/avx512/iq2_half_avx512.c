/*
 * iq2_half_avx512.c — AVX-512 fused F16 / BF16 dequantizers for IQ2_XXS,
 * IQ2_XS and IQ2_S. Scalar twin: gq_dequantize_iq2_* (src/quants/iq2.c),
 * then gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is +-(db * mag) with mag one of 8, 25, 43 (every IQ2 grid), so a
 * scale group takes three magnitudes. Per block the kernel computes db * mag
 * for each group and magnitude in F32, in the scalar order
 * (db = d * (0.5f + ls) * 0.25f, then db * (float)mag), converts that table
 * once (half_avx512.h) into 32-word VPERMW tables of four entries per group
 * (IQ2_XXS: 8 groups of 32 weights, one table; IQ2_XS and IQ2_S: 16 groups
 * of 16, two), and looks each weight's half up by its level (mag >> 4: 0, 1,
 * 2) under its group. IQ2_XXS and IQ2_XS take the levels from the grid
 * entries' 16-bit codes (two bits per coordinate), looked up in registers per
 * block (iq_half_avx512.h has the scheme and the sign flip); IQ2_S, whose
 * 1024 entries would take 16 VPERMT2W per block, loads its grid points'
 * bytes instead (see s_decode256). Measured against each other: the register
 * codes win for IQ2_XXS (F16 16.2 vs 13.4 Gw/s) and tie for IQ2_XS; the bytes
 * win for IQ2_S (14.8 vs ~11).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx512/iq_half_avx512.h"
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
    __m512i  table[2];  /* halves: entry 4g + m of group g (IQ2_XS/S: groups 8t.. in table[t]) */
    __m512i  codes;     /* word 4ib + l: the code of grid point l of group-of-32 ib */
    uint32_t neg[8];    /* the sign bits of weights 32ib.. */
} iq2_block;

/*
 * The table of groups 8h..8h+7 of db (16 group scales, computed in the
 * scalar order): entry 4g + m = db[g] * mag[m], the scalar db * (float)mag.
 */
static inline __m512i group_table(__m512 db, int h, int bf16)
{
    const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512 mag = _mm512_setr_ps(8, 25, 43, 0, 8, 25, 43, 0, 8, 25, 43, 0, 8, 25, 43, 0);
    const __m512i lo = _mm512_add_epi32(pick, _mm512_set1_epi32(8 * h));
    const __m512i hi = _mm512_add_epi32(pick, _mm512_set1_epi32(8 * h + 4));
    return gq_iqh_to_half(_mm512_mul_ps(_mm512_permutexvar_ps(lo, db), mag),
                          _mm512_mul_ps(_mm512_permutexvar_ps(hi, db), mag), bf16);
}

/* db = d * (0.5f + ls) * 0.25f, ls the 4-bit scales in dwords. */
static inline __m512 group_scales(__m256 d, __m512i ls)
{
    const __m512 hp = _mm512_add_ps(_mm512_set1_ps(0.5f), _mm512_cvtepi32_ps(ls));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_castps256_ps512(d), hp), _mm512_set1_ps(0.25f));
}

/* IQ2_XS / IQ2_S: the 16 scales of 8 bytes (low nibble first) as dwords. */
static inline __m512 nibble_scales(__m256 d, const uint8_t *scales)
{
    const uint64_t s = load_u64(scales);
    const __m128i nib = _mm_set_epi64x((long long)_pdep_u64(s >> 32, UINT64_C(0x0F0F0F0F0F0F0F0F)),
                                       (long long)_pdep_u64(s, UINT64_C(0x0F0F0F0F0F0F0F0F)));
    const __m512 dd = _mm512_insertf32x8(_mm512_castps256_ps512(d), d, 1);
    const __m512 hp = _mm512_add_ps(_mm512_set1_ps(0.5f), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(nib)));
    return _mm512_mul_ps(_mm512_mul_ps(dd, hp), _mm512_set1_ps(0.25f));
}

/* 8 grid points (a zmm) to their codes: level (mag >> 4) of coordinate j at bit 2j. */
static inline __m128i codes8(__m512i points)
{
    const __m512i lv = _mm512_and_si512(_mm512_srli_epi16(points, 4), _mm512_set1_epi8(3));
    const __m512i w = _mm512_maddubs_epi16(lv, _mm512_set1_epi16(0x0401));    /* l0 + 4 l1 */
    const __m512i dw = _mm512_madd_epi16(w, _mm512_set1_epi32(0x00100001));  /* 8 bits per dword */
    return _mm512_cvtepi64_epi16(_mm512_or_si512(dw, _mm512_srli_epi64(dw, 24)));
}

/* The codes of n32 x 32 grid entries, 32 per zmm (rebuilt at each call: ~10 instructions per 8 entries). */
static void grid_codes(const uint64_t *grid, __m512i *codes, int n32)
{
    for (int i = 0; i < n32; ++i, grid += 32) {
        const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(codes8(_mm512_loadu_si512(grid))),
                                                   codes8(_mm512_loadu_si512(grid + 8)), 1);
        const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(codes8(_mm512_loadu_si512(grid + 16))),
                                                   codes8(_mm512_loadu_si512(grid + 24)), 1);
        codes[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
}

/*
 * 32 weights from the codes of their 4 grid points (words `pick` of
 * `codes`: 4ib + j for weights 8j..8j+7). Weight 8j + c takes bits 2c of its
 * code as its level; bits 2-4 of `sel` give its group in `table`.
 */
static inline void decode32(uint16_t *y, __m512i codes, __m512i pick, __m512i sel, __m512i table, uint32_t neg)
{
    /* code >> 2c as the high half of code * 2^(16 - 2c) (a multiply, off the shuffle pipes); c = 0 keeps code */
    const __m512i scale = _mm512_set_epi16(4, 16, 64, 256, 1024, 4096, 16384, 0, 4, 16, 64, 256, 1024, 4096, 16384, 0,
                                           4, 16, 64, 256, 1024, 4096, 16384, 0, 4, 16, 64, 256, 1024, 4096, 16384, 0);
    const __m512i code = _mm512_permutexvar_epi16(pick, codes);
    const __m512i c = _mm512_mask_mulhi_epu16(code, (__mmask32)0xFEFEFEFEu, code, scale);
    /* bits 0-1 from c, the rest from sel: C ? B : A with C = ~3 */
    gq_iqh_store(y, table, _mm512_ternarylogic_epi32(c, sel, _mm512_set1_epi16(~3), 0xD8), (__mmask32)neg);
}

/* The 256 weights of a prepared block; per16: groups of 16 weights (two tables). */
static inline void decode256(uint16_t *dst, const iq2_block *p, int per16)
{
    __m512i pick = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,
                                    1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
        /* groups of 32: group ib = pick >> 2; of 16: group 2ib + j/2 (mod 8) = (2 * pick) >> 2 */
        const __m512i sel = per16 ? _mm512_add_epi16(pick, pick) : pick;
        decode32(dst, p->codes, pick, sel, p->table[per16 ? ib / 4 : 0], p->neg[ib]);
        pick = _mm512_add_epi16(pick, _mm512_set1_epi16(4));
    }
}

static inline void xxs_prepare(iq2_block *p, const uint8_t *blk, const __m512i *grid, int bf16)
{
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    /* 8 x (4 grid bytes, sign-and-scale word) -> the 32 grid bytes, then the 8 words */
    const __m512i v = _mm512_permutexvar_epi32(evens, _mm512_loadu_si512(blk + 2));
    const __m512i ls = _mm512_srli_epi32(_mm512_castsi256_si512(_mm512_extracti64x4_epi64(v, 1)), 28);
    p->table[0] = group_table(group_scales(gq_iqh_d8(gq_load_u16(blk)), ls), 0, bf16);
    p->codes = gq_iqh_lookup256(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(v)), grid);
    for (int ib = 0; ib < 8; ++ib)
        p->neg[ib] = gq_iqh_signs7(gq_load_u32(blk + 6 + 8 * ib));
}

static inline void xs_prepare(iq2_block *p, const uint8_t *blk, const __m512i *grid, int bf16)
{
    const __m512 db = nibble_scales(gq_iqh_d8(gq_load_u16(blk)), blk + 2 + QK_K / 4);
    p->table[0] = group_table(db, 0, bf16);
    p->table[1] = group_table(db, 1, bf16);
    /* 32 x u16: 9-bit grid index, 7 sign bits */
    p->codes = gq_iqh_lookup512(_mm512_loadu_si512(blk + 2), grid);
    for (int ib = 0; ib < 8; ++ib)
        p->neg[ib] = gq_iqh_signs7((uint32_t)_pext_u64(load_u64(blk + 2 + 8 * ib), UINT64_C(0xFE00FE00FE00FE00)));
}

/*
 * IQ2_S another way: its 1024-entry grid is too big for register lookups
 * (16 VPERMT2W per block), so the 4 grid points of 32 weights are loaded as
 * the F32 kernel does and their magnitude bytes widened to word indices: the
 * low two bits of 8, 25, 43 are 0, 1, 3, distinct, so the tables put the
 * magnitudes at entries 4g + 0, 1, 3 (s_table) and the bytes need no shift.
 */
typedef struct iq2s_block {
    __m512i  table[2];
    uint64_t idx[8];    /* the four 10-bit grid indices of group-of-32 ib, in u16 lanes */
    uint32_t neg[8];
} iq2s_block;

static inline __m512i s_table(__m512 db, int h, int bf16)
{
    const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512 mag = _mm512_setr_ps(8, 25, 0, 43, 8, 25, 0, 43, 8, 25, 0, 43, 8, 25, 0, 43);
    const __m512i lo = _mm512_add_epi32(pick, _mm512_set1_epi32(8 * h));
    const __m512i hi = _mm512_add_epi32(pick, _mm512_set1_epi32(8 * h + 4));
    return gq_iqh_to_half(_mm512_mul_ps(_mm512_permutexvar_ps(lo, db), mag),
                          _mm512_mul_ps(_mm512_permutexvar_ps(hi, db), mag), bf16);
}

static inline void s_prepare(iq2s_block *p, const uint8_t *blk, int bf16)
{
    const uint8_t *qs = blk + 2, *signs = qs + QK_K / 8, *qh = blk + 2 + QK_K / 4, *scales = qh + QK_K / 32;
    const __m512 db = nibble_scales(gq_iqh_d8(gq_load_u16(blk)), scales);
    p->table[0] = s_table(db, 0, bf16);
    p->table[1] = s_table(db, 1, bf16);
    for (int ib = 0; ib < 8; ++ib) {
        p->idx[ib] = _pdep_u64(gq_load_u32(qs + 4 * ib), UINT64_C(0x00FF00FF00FF00FF)) |
                     _pdep_u64(qh[ib], UINT64_C(0x0300030003000300));
        p->neg[ib] = gq_load_u32(signs + 4 * ib);
    }
}

static inline void s_decode256(uint16_t *dst, const iq2s_block *p)
{
    const __m512i half = _mm512_set_epi16(4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
                                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32) {
        const uint64_t idx = p->idx[ib];
        const __m128i a = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(gq_iq2s_grid + (idx & 0xFFFF))),
                                           (long long)gq_iq2s_grid[(idx >> 16) & 0xFFFF], 1);
        const __m128i b = _mm_insert_epi64(_mm_loadl_epi64((const __m128i *)(gq_iq2s_grid + ((idx >> 32) & 0xFFFF))),
                                           (long long)gq_iq2s_grid[idx >> 48], 1);
        const __m512i w = _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1));
        /* group 2ib + half, mod 8, at bits 2-4 */
        const __m512i sel = _mm512_add_epi16(half, _mm512_set1_epi16((short)(8 * (ib % 4))));
        gq_iqh_store(dst, p->table[ib / 4], _mm512_ternarylogic_epi32(w, sel, _mm512_set1_epi16(~3), 0xD8),
                     (__mmask32)p->neg[ib]);
    }
}

/* The block loop: prepare block b + 1, then decode block b. */
#define IQ2_HALF_LOOP(prepare, bytes, per16)                                  \
    do {                                                                      \
        const uint8_t *blk = src;                                             \
        const int64_t nb = n / QK_K;                                          \
        iq2_block cur, next;                                                  \
        prepare(&cur, blk, grid, bf16);                                       \
        next = cur;                                                           \
        for (int64_t b = 0; b < nb; ++b, blk += (bytes), dst += QK_K) {       \
            if (b + 1 < nb)                                                   \
                prepare(&next, blk + (bytes), grid, bf16);                    \
            decode256(dst, &cur, per16);                                      \
            cur = next;                                                       \
        }                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void iq2_xxs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m512i grid[8];
    grid_codes(gq_iq2xxs_grid, grid, 8);
    IQ2_HALF_LOOP(xxs_prepare, IQ2_XXS_BYTES, 0);
}

static inline __attribute__((always_inline)) void iq2_xs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m512i grid[16];
    grid_codes(gq_iq2xs_grid, grid, 16);
    IQ2_HALF_LOOP(xs_prepare, IQ2_XS_BYTES, 1);
}

static inline __attribute__((always_inline)) void iq2_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    const uint8_t *blk = src;
    const int64_t nb = n / QK_K;
    iq2s_block cur, next;
    s_prepare(&cur, blk, bf16);
    next = cur;
    for (int64_t b = 0; b < nb; ++b, blk += IQ2_S_BYTES, dst += QK_K) {
        if (b + 1 < nb)
            s_prepare(&next, blk + IQ2_S_BYTES, bf16);
        s_decode256(dst, &cur);
        cur = next;
    }
}

void gq_avx512_dequantize_iq2_xxs_f16(const void *src, uint16_t *dst, int64_t n) { iq2_xxs_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq2_xxs_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_xxs_half(src, dst, n, 1); }
void gq_avx512_dequantize_iq2_xs_f16(const void *src, uint16_t *dst, int64_t n) { iq2_xs_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq2_xs_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_xs_half(src, dst, n, 1); }
void gq_avx512_dequantize_iq2_s_f16(const void *src, uint16_t *dst, int64_t n) { iq2_s_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq2_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq2_s_half(src, dst, n, 1); }
