/*
 * iq3_avx512.c — AVX-512 dequantizers for IQ3_XXS and IQ3_S.
 * SIMD twin of src/quants/iq3.c (same arithmetic: y = +-(db * mag)).
 *
 * How it vectorises, with no scalar table lookups (one per grid entry cost
 * ~4 instructions, the old kernel ran ~35 instructions per 16 weights):
 * - The grid lives in registers as 16-bit words, one nibble per coordinate
 *   (IQ3_S: the magnitude itself, odd 1..15; IQ3_XXS: the level k of the
 *   magnitudes 4, 12, ..., 52, 62): 8 zmm for IQ3_XXS's 256 entries, 16 for
 *   IQ3_S's 512, rebuilt at each call. VPERMT2W looks 32 indices up in 64
 *   entries at a time; blends on the index's high bits pick the right 64.
 * - A few shuffles per 32 entries (128 weights) transpose them so that dword
 *   L of one zmm holds lane L's nibble for each of the 8 runs of 16 weights;
 *   per 16 weights a shift by an immediate and VPERMPS pick db * mag out of a
 *   16-float table built once per group by one multiply: the same float
 *   product db * (float)mag as the scalar code.
 * - Then the 16 signs flip the float sign bits (masked VPXORD). The sign
 *   goes on after the multiply, as in the scalar code (and ggml's compiled
 *   code): for a NaN db, db * (-mag) would keep the NaN's sign where ggml
 *   flips it. IQ3_XXS's sign bytes (7 stored bits + even parity, as
 *   ksigns_iq2xs) are computed for a whole block at once; IQ3_S stores them.
 * Group scales are computed in the scalar order with the same exact values.
 * What bounds it: Zen 4 runs zmm shuffles (VPERMT2W, VPERMPS, VPERMW) on two
 * pipes, one per cycle; per 16 weights there are ~1.5 (IQ3_XXS) to ~2
 * (IQ3_S) of them plus the shift, and the loop takes ~4 cycles where a
 * store-bound one takes ~2. Measured (64Ki weights, %memset): with clang
 * -O3 or gcc -O2 IQ3_XXS 33 -> 38, IQ3_S 30 -> 34 over the scalar-lookup
 * kernel; gcc -O3 (the Release build) unrolls the group loop and loses it
 * again (34 / 31).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx512/iq_half_avx512.h"   /* the grid-code lookups (VPERMT2W) */

#define IQ3XXS_BYTES ((int)sizeof(blk_iq3_xxs))
#define IQ3S_BYTES   ((int)sizeof(blk_iq3_s))

/* 16 grid entries as dwords n0 | n2 << 4 | n1 << 8 | n3 << 12 (nibbles < 16). */
static inline __m512i pack_nibbles(__m512i nibbles)
{
    const __m512i order = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15));
    return _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_shuffle_epi8(nibbles, order), _mm512_set1_epi16(0x1001)),
                             _mm512_set1_epi32(0x01000001));
}

static inline __m512i join_words(__m512i a, __m512i b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(a)), _mm512_cvtepi32_epi16(b), 1);
}

/* 32 IQ3_S entries as words: the magnitudes themselves (1..15) as nibbles. */
static inline __m512i s_words(const uint32_t *grid)
{
    return join_words(pack_nibbles(_mm512_loadu_si512(grid)), pack_nibbles(_mm512_loadu_si512(grid + 16)));
}

/* 32 IQ3_XXS entries as words: nibble = level k of magnitude 4 + 8k (62 for k = 7) = byte >> 3. */
static inline __m512i xxs_words(const uint32_t *grid)
{
    const __m512i low3 = _mm512_set1_epi8(7);
    const __m512i a = _mm512_and_si512(_mm512_srli_epi32(_mm512_loadu_si512(grid), 3), low3);
    const __m512i b = _mm512_and_si512(_mm512_srli_epi32(_mm512_loadu_si512(grid + 16), 3), low3);
    return join_words(pack_nibbles(a), pack_nibbles(b));
}

/* db * magnitude[nibble]: the VPERMPS table of a group. */
static inline __m512 products(float db, __m512 magnitude)
{
    return _mm512_mul_ps(_mm512_set1_ps(db), magnitude);
}

/* 16 weights: lane L's nibble at bit 4 * `o` of dword L of `chunk`. */
#define DECODE16(o)                                                                                \
    do {                                                                                           \
        const __m512i m = _mm512_srli_epi32(chunk, 4 * (o));                                       \
        const __m512i p = _mm512_castps_si512(_mm512_permutexvar_ps(m, table[(o) / 2]));           \
        _mm512_storeu_ps(y + 16 * (o), _mm512_castsi512_ps(_mm512_mask_xor_epi32(                  \
                                           p, neg[o], p, _mm512_set1_epi32(INT32_MIN))));          \
    } while (0)

/*
 * 128 weights (4 groups) from 32 looked-up entries `e` (words with nibbles
 * n0 | n2 << 4 | n1 << 8 | n3 << 12); db[g] the groups' scales, neg 16 sign
 * bits per 16 weights. Lane L of the 16 weights o needs nibble L%4 of entry
 * 4o + L/4; a few shuffles per 128 weights transpose the entries so that
 * dword L of one zmm holds that nibble for all 8 o (at bit 4o). Each 16
 * weights then cost one shift by an immediate before VPERMPS, not a
 * cross-lane shuffle and a variable shift (both on Zen 4's two shuffle pipes,
 * which bound this loop).
 */
static inline void decode128(float *y, __m512i e, const float *db, __m512 magnitude, const uint16_t *neg)
{
    /* 128-bit chunk c: entries c, 4 + c, ..., 28 + c */
    const __m512i by_lane = _mm512_set_epi16(31, 27, 23, 19, 15, 11, 7, 3, 30, 26, 22, 18, 14, 10, 6, 2,
                                             29, 25, 21, 17, 13, 9, 5, 1, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m512i s = _mm512_permutexvar_epi16(by_lane, e);
    const __m512i nib = _mm512_set1_epi8(0x0F);
    /* bytes n0 | n2 << 4, n1 | n3 << 4 per entry: split the nibbles, then
     * gather each coordinate's 8 nibbles (one per o) and pack them in pairs */
    const __m512i order = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    const __m512i lo = _mm512_shuffle_epi8(_mm512_and_si512(s, nib), order);                       /* n0, n1 */
    const __m512i hi = _mm512_shuffle_epi8(_mm512_and_si512(_mm512_srli_epi16(s, 4), nib), order); /* n2, n3 */
    const __m512i pair = _mm512_set1_epi16(0x1001);
    const __m512i chunk = _mm512_packus_epi16(_mm512_maddubs_epi16(lo, pair), _mm512_maddubs_epi16(hi, pair));
    const __m512 table[4] = { products(db[0], magnitude), products(db[1], magnitude),
                              products(db[2], magnitude), products(db[3], magnitude) };
    DECODE16(0); DECODE16(1); DECODE16(2); DECODE16(3);
    DECODE16(4); DECODE16(5); DECODE16(6); DECODE16(7);
}
#undef DECODE16

/*
 * IQ3_XXS's 32 sign bytes of a block from its 8 scale-and-sign words: the
 * four 7-bit fields of each word as bytes, bit 7 their parity (ksigns_iq2xs).
 */
static inline __m256i xxs_signs(__m256i aux)
{
    const __m256i f = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(aux, _mm256_set1_epi32(0x7F)),
                        _mm256_and_si256(_mm256_slli_epi32(aux, 1), _mm256_set1_epi32(0x7F00))),
        _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(aux, 2), _mm256_set1_epi32(0x7F0000)),
                        _mm256_and_si256(_mm256_slli_epi32(aux, 3), _mm256_set1_epi32(0x7F000000))));
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const __m256i parity = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,
                                            0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(parity, _mm256_and_si256(f, nib)),
                                       _mm256_shuffle_epi8(parity, _mm256_and_si256(_mm256_srli_epi16(f, 4), nib)));
    return _mm256_or_si256(f, p);
}

void gq_avx512_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    __m512i grid[8];
    for (int i = 0; i < 8; ++i)
        grid[i] = xxs_words(gq_iq3xxs_grid + 32 * i);
    const __m512 magnitude = _mm512_setr_ps(4, 12, 20, 28, 36, 44, 52, 62, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3XXS_BYTES, dst += QK_K) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        const __m256i aux = _mm256_loadu_si256((const __m256i *)(blk + 2 + QK_K / 4));
        /* db = d * (0.5f + ls) * 0.5f per group */
        float db[8];
        const __m256 ls = _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(aux, 28)), _mm256_set1_ps(0.5f));
        _mm256_storeu_ps(db, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), ls), _mm256_set1_ps(0.5f)));
        uint16_t neg[16];
        _mm256_storeu_si256((__m256i *)neg, xxs_signs(aux));
        for (int h = 0; h < 2; ++h) {
            const __m512i idx = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * h)));
            decode128(dst + 128 * h, gq_iqh_lookup256(idx, grid), db + 4 * h, magnitude, neg + 8 * h);
        }
    }
}

void gq_avx512_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    __m512i grid[16];
    for (int i = 0; i < 16; ++i)
        grid[i] = s_words(gq_iq3s_grid + 32 * i);
    const __m512 magnitude = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t b = 0; b < n / QK_K; ++b, blk += IQ3S_BYTES, dst += QK_K) {
        const float d = gq_fp16_to_fp32(gq_load_u16(blk));
        const uint8_t *qs = blk + 2;
        const uint8_t *qh = qs + QK_K / 4;
        const uint8_t *signs = qh + QK_K / 32;
        const uint8_t *scales = signs + QK_K / 8;
        /* db = d * (1 + 2 * ls) per group; ls: nibble g of the 4 scale bytes */
        float db[8];
        const __m256i ls = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)gq_load_u32(scales)),
                                                              _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                            _mm256_set1_epi32(0xf));
        const __m256 odd = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_add_epi32(ls, ls), _mm256_set1_epi32(1)));
        _mm256_storeu_ps(db, _mm256_mul_ps(_mm256_set1_ps(d), odd));
        uint16_t neg[16];
        memcpy(neg, signs, sizeof neg);
        /* 9-bit index j: qs[j] | bit j of qh << 8 */
        uint64_t high;
        memcpy(&high, qh, sizeof high);
        for (int h = 0; h < 2; ++h) {
            __m512i idx = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * h)));
            idx = _mm512_mask_add_epi16(idx, (__mmask32)(high >> 32 * h), idx, _mm512_set1_epi16(256));
            decode128(dst + 128 * h, gq_iqh_lookup512(idx, grid), db + 4 * h, magnitude, neg + 8 * h);
        }
    }
}
