/*
 * iq3_half_avx512.c — AVX-512 fused F16 / BF16 dequantizers for IQ3_XXS and
 * IQ3_S. Scalar twin: gq_dequantize_iq3_* (src/quants/iq3.c), then
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * A weight is +-(db * mag) with mag one of 8 grid levels (IQ3_XXS: 4, 12,
 * ..., 52, 62, level = mag >> 3; IQ3_S: 1, 3, ..., 15, level = mag >> 1),
 * db per group of 32. Per block the kernel computes db * mag for each group
 * and level in F32, in the scalar order (IQ3_XXS db = d * (0.5f + ls) *
 * 0.5f, IQ3_S db = d * (1 + 2 * ls)), converts them once (half_avx512.h)
 * into two 32-word VPERMW tables (groups 0-3, 4-7; entry 8g + level), and
 * looks each weight's half up by its level under its group. The levels come
 * from the grid entries' 12-bit codes (three bits per coordinate), looked up
 * in registers per block (iq_half_avx512.h has the scheme and the sign flip).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/avx512/iq_half_avx512.h"
#include "simd/simd.h"

#define IQ3XXS_BYTES ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES   ((int)sizeof(blk_iq3_s))

/* What a block's 256 weights are decoded from. */
typedef struct iq3_block {
    __m512i  table[2];  /* halves: entry 8g + level of group 4t + g in table[t] */
    __m512i  codes[2];  /* word 8(ib % 4) + e of codes[ib / 4]: the code of grid entry e of group ib */
    uint32_t neg[8];    /* the sign bits of weights 32ib.. */
} iq3_block;

/* The table of groups 4h..4h+3 of db: entry 8g + l = db[g] * mag[l], the scalar db * (float)mag. */
static inline __m512i group_table(__m256 db, int h, __m512 mag, int bf16)
{
    const __m512i lo = _mm512_set1_epi32(4 * h), hi = _mm512_set1_epi32(4 * h + 2);
    const __m512i pick = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512 all = _mm512_castps256_ps512(db);
    return gq_iqh_to_half(_mm512_mul_ps(_mm512_permutexvar_ps(_mm512_add_epi32(pick, lo), all), mag),
                          _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_add_epi32(pick, hi), all), mag), bf16);
}

/* 16 grid entries (dwords of 4 magnitude bytes) to codes: level of coordinate c at bit 3c. */
static inline __m256i codes16(__m512i entries, int level_shift)
{
    const __m512i lv = _mm512_and_si512(level_shift == 3 ? _mm512_srli_epi16(entries, 3) : _mm512_srli_epi16(entries, 1),
                                        _mm512_set1_epi8(7));
    const __m512i w = _mm512_maddubs_epi16(lv, _mm512_set1_epi16(0x0801));                 /* l0 + 8 l1 */
    return _mm512_cvtepi32_epi16(_mm512_madd_epi16(w, _mm512_set1_epi32(0x00400001)));    /* + 64 (l2 + 8 l3) */
}

/* The codes of n32 x 32 grid entries, 32 per zmm (rebuilt at each call). */
static void grid_codes(const uint32_t *grid, __m512i *codes, int n32, int level_shift)
{
    for (int i = 0; i < n32; ++i, grid += 32)
        codes[i] = _mm512_inserti64x4(_mm512_castsi256_si512(codes16(_mm512_loadu_si512(grid), level_shift)),
                                      codes16(_mm512_loadu_si512(grid + 16), level_shift), 1);
}

/*
 * 32 weights of group ib from the codes of their 8 grid entries (words
 * `pick` = 8(ib % 4) + L / 4 of `codes` for weight L): weight 4e + c takes
 * bits 3c of its code as its level; bits 3-4 of pick are its group's in `table`.
 */
static inline void decode32(uint16_t *y, __m512i codes, __m512i pick, __m512i table, uint32_t neg)
{
    /* code >> 3c as the high half of code * 2^(16 - 3c); c = 0 keeps code */
    const __m512i scale = _mm512_set_epi16(128, 1024, 8192, 0, 128, 1024, 8192, 0, 128, 1024, 8192, 0, 128, 1024, 8192, 0,
                                           128, 1024, 8192, 0, 128, 1024, 8192, 0, 128, 1024, 8192, 0, 128, 1024, 8192, 0);
    const __m512i code = _mm512_permutexvar_epi16(pick, codes);
    const __m512i c = _mm512_mask_mulhi_epu16(code, (__mmask32)0xEEEEEEEEu, code, scale);
    /* bits 0-2 from c, the rest from pick: C ? B : A with C = ~7 */
    gq_iqh_store(y, table, _mm512_ternarylogic_epi32(c, pick, _mm512_set1_epi16(~7), 0xD8), (__mmask32)neg);
}

static inline void decode256(uint16_t *dst, const iq3_block *p)
{
    const __m512i entry = _mm512_set_epi16(7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4,
                                           3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    for (int ib = 0; ib < QK_K / 32; ++ib, dst += 32)
        decode32(dst, p->codes[ib / 4], _mm512_add_epi16(entry, _mm512_set1_epi16((short)(8 * (ib % 4)))),
                 p->table[ib / 4], p->neg[ib]);
}

static inline void xxs_prepare(iq3_block *p, const uint8_t *blk, const __m512i *grid, int bf16)
{
    const __m512 mag = _mm512_setr_ps(4, 12, 20, 28, 36, 44, 52, 62, 4, 12, 20, 28, 36, 44, 52, 62);
    const uint8_t *qs = blk + 2, *aux = blk + 2 + QK_K / 4;
    /* db = d * (0.5f + ls) * 0.5f, ls the top nibble of each sign-and-scale word */
    const __m256 ls = _mm256_cvtepi32_ps(_mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)aux), 28));
    const __m256 db = _mm256_mul_ps(_mm256_mul_ps(gq_iqh_d8(gq_load_u16(blk)), _mm256_add_ps(_mm256_set1_ps(0.5f), ls)),
                                    _mm256_set1_ps(0.5f));
    p->table[0] = group_table(db, 0, mag, bf16);
    p->table[1] = group_table(db, 1, mag, bf16);
    for (int h = 0; h < 2; ++h)
        p->codes[h] = gq_iqh_lookup256(_mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * h))), grid);
    for (int ib = 0; ib < 8; ++ib)
        p->neg[ib] = gq_iqh_signs7(gq_load_u32(aux + 4 * ib));
}

static inline void s_prepare(iq3_block *p, const uint8_t *blk, const __m512i *grid, int bf16)
{
    const __m512 mag = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const uint8_t *qs = blk + 2, *qh = qs + QK_K / 4, *signs = qh + QK_K / 32, *scales = signs + QK_K / 8;
    /* db = d * (1 + 2 * ls), ls nibble ib of the 4 scale bytes */
    const __m256i ls = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(scales)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                        _mm256_set1_epi32(0xf));
    const __m256 odd = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(ls, ls), _mm256_set1_epi32(1)));
    const __m256 db = _mm256_mul_ps(gq_iqh_d8(gq_load_u16(blk)), odd);
    p->table[0] = group_table(db, 0, mag, bf16);
    p->table[1] = group_table(db, 1, mag, bf16);
    /* 9-bit index j: qs[j] | bit j of qh << 8 */
    uint64_t high;
    memcpy(&high, qh, sizeof high);
    for (int h = 0; h < 2; ++h) {
        const __m512i lo = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * h)));
        p->codes[h] = _mm512_mask_blend_epi16((__mmask32)(high >> 32 * h), gq_iqh_lookup256(lo, grid),
                                              gq_iqh_lookup256(lo, grid + 8));
    }
    for (int ib = 0; ib < 8; ++ib)
        p->neg[ib] = gq_load_u32(signs + 4 * ib);
}

/* The block loop: prepare block b + 1, then decode block b. */
#define IQ3_HALF_LOOP(prepare, bytes)                                         \
    do {                                                                      \
        const uint8_t *blk = src;                                             \
        const int64_t nb = n / QK_K;                                          \
        iq3_block cur, next;                                                  \
        prepare(&cur, blk, grid, bf16);                                       \
        next = cur;                                                           \
        for (int64_t b = 0; b < nb; ++b, blk += (bytes), dst += QK_K) {       \
            if (b + 1 < nb)                                                   \
                prepare(&next, blk + (bytes), grid, bf16);                    \
            decode256(dst, &cur);                                             \
            cur = next;                                                       \
        }                                                                     \
    } while (0)

static inline __attribute__((always_inline)) void iq3_xxs_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m512i grid[8];
    grid_codes(gq_iq3xxs_grid, grid, 8, 3);
    IQ3_HALF_LOOP(xxs_prepare, IQ3XXS_BYTES);
}

static inline __attribute__((always_inline)) void iq3_s_half(const void *src, uint16_t *dst, int64_t n, int bf16)
{
    __m512i grid[16];
    grid_codes(gq_iq3s_grid, grid, 16, 1);
    IQ3_HALF_LOOP(s_prepare, IQ3S_BYTES);
}

void gq_avx512_dequantize_iq3_xxs_f16(const void *src, uint16_t *dst, int64_t n) { iq3_xxs_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq3_xxs_bf16(const void *src, uint16_t *dst, int64_t n) { iq3_xxs_half(src, dst, n, 1); }
void gq_avx512_dequantize_iq3_s_f16(const void *src, uint16_t *dst, int64_t n) { iq3_s_half(src, dst, n, 0); }
void gq_avx512_dequantize_iq3_s_bf16(const void *src, uint16_t *dst, int64_t n) { iq3_s_half(src, dst, n, 1); }
