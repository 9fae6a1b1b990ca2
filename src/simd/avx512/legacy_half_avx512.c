/*
 * legacy_half_avx512.c — fused F16 / BF16 output dequantizers for the legacy
 * types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) on AVX-512 F/BW/VL/DQ; scalar
 * twin: gq_dequantize_<t> (src/quants/legacy.c) followed by gq_quantize_f16
 * / gq_quantize_bf16 (src/quants/float.c, fp16.h).
 *
 * A block's 32 weights take at most 16 (Q4_*) or 32 (Q5_*) values. Each
 * block computes that table in F32 with the scalar's operations (as
 * legacy_avx512.c does: (c - 8) * d, c * d + m, never fused), converts it
 * once, and every weight is a VPERMW of its code: no per-weight conversion,
 * the bound of the decode-then-convert route. Q8_* (256 codes) convert
 * every weight, but in registers (q8_block).
 *
 * Two paths, chosen per group of blocks when their scales are staged:
 * - exact (a scale is Inf or NaN, so tables may hold NaNs): the converters
 *   of half_avx512.h, which give ggml's NaNs;
 * - fast (every scale finite: no table entry is NaN): F16 by vcvtps2ph
 *   alone, BF16 by integer rounding in place (fast_halves), and Q4_0's
 *   F16 tables from their magnitudes only (sym_table), halving the
 *   conversions, which are the F16 bound.
 * On Zen 4 every 512-bit operation takes two of the four vector pipes
 * (shuffles, shifts and conversions: both of the two that do them), so
 * these loops are paced by their count of operations, not by the stores.
 * The F16 scales are staged a group of blocks ahead (stage_scales) and
 * re-read as broadcast memory operands (legacy_avx512.c and vec_avx512.h
 * explain why: no shuffle spent on them).
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/avx512/half_avx512.h"
#include "simd/avx512/vec_avx512.h"

#define QK QK_LEGACY
/* gq_fp16_to_fp32 of the F16 at p, as bits: normal numbers by a shift and
 * an add in integer registers, the rest by the scalar function. */
static inline uint32_t scale_bits(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    const uint32_t e = h & 0x7C00u;
    if (e != 0 && e != 0x7C00u)
        return ((uint32_t)(h & 0x8000u) << 16) | (((uint32_t)(h & 0x7FFFu) << 13) + 0x38000000u);
    return gq_f32_bits(gq_fp16_to_fp32(h));
}

/*
 * Blocks whose scales are staged together: as many as have their F16
 * scales (d, or d and m: per halves) in the first 128 bytes, so that two
 * loads and one VPERMT2W gather them; one VCVTPH2PS (exact like
 * gq_fp16_to_fp32) converts them. Per block, converting in integer
 * registers took some 13 instructions, more than the lookup itself.
 */
static inline int group_blocks(int bytes, int per)
{
    return (128 - 2 * per) / bytes + 1;
}

/* Word i: the index (in halves from the group's start) of scale i. */
static inline __m512i scale_index(int bytes, int per)
{
    const __m512i i = _mm512_set_epi32(0x001F001E, 0x001D001C, 0x001B001A, 0x00190018, 0x00170016, 0x00150014,
                                       0x00130012, 0x00110010, 0x000F000E, 0x000D000C, 0x000B000A, 0x00090008,
                                       0x00070006, 0x00050004, 0x00030002, 0x00010000);
    const __m512i k = per == 2 ? _mm512_srli_epi16(i, 1) : i;
    const __m512i j = per == 2 ? _mm512_and_si512(i, _mm512_set1_epi16(1)) : _mm512_setzero_si512();
    return _mm512_add_epi16(_mm512_mullo_epi16(k, _mm512_set1_epi16((short)(bytes / 2))), j);
}

/*
 * The scales of count blocks at blk as floats, out[per * k + j]: by vector
 * when the 128 bytes read lie before end, else one by one. Returns whether
 * one of them is Inf or NaN (the blocks then take the exact path).
 */
static inline __attribute__((always_inline)) bool stage_scales(const uint8_t *blk, const uint8_t *end, int bytes,
                                                               int count, int per, __m512i idx, float *out)
{
    if (end - blk >= 128) {
        const __m512i h = _mm512_permutex2var_epi16(_mm512_loadu_si512(blk), idx, _mm512_loadu_si512(blk + 64));
        const __m512 f = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
        _mm512_store_ps(out, f);
        /* fpclass 0x99: QNaN, +Inf, -Inf, SNaN */
        return (_mm512_fpclass_ps_mask(f, 0x99) & ((1u << (count * per)) - 1)) != 0;
    }
    bool special = false;
    for (int k = 0; k < count; k++)
        for (int j = 0; j < per; j++) {
            const uint32_t v = scale_bits(blk + k * bytes + 2 * j);
            memcpy(&out[per * k + j], &v, sizeof v);
            special |= (v & 0x7F800000u) == 0x7F800000u;
        }
    return special;
}

/* A block's (fast: `step` blocks') output from its d and m as floats. */
typedef void (*half_body_fn)(const uint8_t *blk, uint16_t *dst, const float *dm);

/*
 * For the nb blocks at blk: fast(blocks, output, their d and m) `step`
 * blocks at a time where every scale of the group is finite, else
 * exact(block, ...) block by block. The scales are staged a group ahead
 * into the other half of a double buffer.
 */
static inline __attribute__((always_inline)) void half_blocks(const uint8_t *blk, uint16_t *dst, int64_t nb,
                                                              int bytes, int per, int step, half_body_fn fast,
                                                              half_body_fn exact)
{
    float st[2][16] __attribute__((aligned(64)));
    bool special[2] = { false, false };
    const uint8_t *end = blk + nb * bytes;
    const int group = group_blocks(bytes, per) / step * step;
    const __m512i idx = scale_index(bytes, per);
    const int64_t ng = nb / group;
    if (ng > 0)
        special[0] = stage_scales(blk, end, bytes, group, per, idx, st[0]);
    for (int64_t g = 0; g < ng; g++) {
        if (g + 1 < ng)
            special[(g + 1) & 1] = stage_scales(blk + group * bytes, end, bytes, group, per, idx, st[(g + 1) & 1]);
        GQ_REREAD(st);
        const float *dm = st[g & 1];
        if (!special[g & 1]) {
            for (int k = 0; k < group; k += step, blk += step * bytes, dst += step * QK)
                fast(blk, dst, dm + per * k);
        } else {
            for (int k = 0; k < group; k++, blk += bytes, dst += QK)
                exact(blk, dst, dm + per * k);
        }
    }
    const int rest = (int)(nb % group);
    if (rest) {
        const bool sp = stage_scales(blk, end, bytes, rest, per, idx, st[0]);
        GQ_REREAD(st);
        int k = 0;
        for (; !sp && k + step <= rest; k += step, blk += step * bytes, dst += step * QK)
            fast(blk, dst, st[0] + per * k);
        for (; k < rest; k++, blk += bytes, dst += QK)
            exact(blk, dst, st[0] + per * k);
    }
}

static inline __m512 codes_from(int first)
{
    return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_set1_epi32(first),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
}

/* True when the F16 at p is a NaN. */
static inline bool f16_is_nan(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7FFF) > 0x7C00;
}

/* codes * d + m, not fused; with a NaN m (the F16 at m_f16) the NaN products
 * are kept (the scalar's store_affine() says why). */
static inline __m512 affine_table(__m512 codes, const float *dm, const uint8_t *m_f16)
{
    const __m512 p = _mm512_mul_ps(codes, _mm512_set1_ps(dm[0]));
    const __m512 y = _mm512_add_ps(p, _mm512_set1_ps(dm[1]));
    if (!f16_is_nan(m_f16))
        return y;
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p);
}

/* Exact path: the 16 halves of any table in words 0..15 (half_avx512.h). */
static inline __m512i exact_halves(__m512 table, bool bf16)
{
    return _mm512_castsi256_si512(bf16 ? gq_avx512_f32x16_to_bf16(table) : gq_avx512_f32x16_to_f16(table));
}

/*
 * Fast path, tables without NaN (every scale finite): entry i in word i
 * (F16: vcvtps2ph equals gq_fp32_to_fp16 off NaN) or, BF16, in word 2i + 1,
 * the high half of lane i: gq_fp32_to_bf16's x + 0x7FFF + lsb without the
 * shifts and the pack (no shuffle, nor shift: the lsb by a test into a
 * mask measured faster than by shift and and).
 */
static inline __m512i fast_halves(__m512 table, bool bf16)
{
    if (!bf16)
        return _mm512_castsi256_si512(_mm512_cvtps_ph(table, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m512i x = _mm512_castps_si512(table);
    const __m512i r = _mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF));
    return _mm512_mask_add_epi32(r, _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000)), r, _mm512_set1_epi32(1));
}

/*
 * Word j < 16: the index of qs[j]'s low nibble c, word 16 + j: of its high
 * nibble; the index is c + bias, or 2c + 1 + bias (wide: fast BF16 tables).
 * One 128-bit broadcast, the nibbles split per 128-bit half in 256 bits
 * (half the cost of 512-bit operations: on Zen 4 every 512-bit operation
 * takes two of the four vector pipes, and their count sets the pace), then
 * one widening to words.
 */
static inline __m512i nibble_index(const uint8_t *qs, bool wide, int bias)
{
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)qs));
    __m256i c = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
    if (wide)
        c = _mm256_add_epi8(c, c);
    if (wide || bias)
        c = _mm256_or_si256(c, _mm256_set1_epi8((char)(wide + bias)));
    return _mm512_cvtepu8_epi16(c);
}

/* nibble_index plus `bit` where the block's qh (at qh_p) has weight j's bit. */
static inline __m512i q5_index(const uint8_t *qh_p, const uint8_t *qs, bool wide, int bit)
{
    uint32_t qh;
    memcpy(&qh, qh_p, sizeof qh);
    const __m512i i = nibble_index(qs, wide, 0);
    return _mm512_mask_add_epi16(i, (__mmask32)qh, i, _mm512_set1_epi16((short)bit));
}

/*
 * Symmetric tables ((c - center) * d, Q4_0 and Q5_0), fast path: with d
 * finite, (-k) * d is -(k * d) exactly and F16/BF16 rounding is symmetric,
 * and 0 * d is a zero with d's sign. So only the magnitudes k * d,
 * k = 1..center, are converted (half the conversions: the bound of F16),
 * and one VPERMW plus one VPTERNLOG spread them into the table: entry
 * c < center is entry center - c with its sign flipped, entry center is
 * the sign of 1 * d. sym[] holds the VPERMW index, flip and keep the
 * masks (the tables below).
 */
typedef struct {
    uint16_t index[32] __attribute__((aligned(64))), flip[32], keep[32];
} sym_consts;

/* Built for width entries per table, 32 / width tables side by side, the
 * magnitude k of table t in lane (k - 1) * tables + t of the products:
 * word w = t * width + c takes lane (k - 1) * tables + t (F16; BF16: word
 * 2 * lane + 1) with k = center - c below the center, 1 at it (keep leaves
 * only the sign), c - center above (flip is set below the center). */
static const sym_consts q4_0_sym_f16 = {
    {
        14, 12, 10, 8, 6, 4, 2, 0, 0, 0, 2, 4, 6, 8, 10, 12,
        15, 13, 11, 9, 7, 5, 3, 1, 1, 1, 3, 5, 7, 9, 11, 13 },
    {
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000 },
    {
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0x8000, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0x8000, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF } };

static const sym_consts q5_0_sym_f16 = {
    {
        15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
        0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 },
    {
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000 },
    {
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0x8000, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF } };
static const sym_consts q5_0_sym_bf16 = {
    {
        31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1,
        1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29 },
    {
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000, 0x8000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000,
        0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000, 0x0000 },
    {
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0x8000, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF,
        0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF } };

/* The 32-entry half table from the products' halves h (fast_halves). */
static inline __m512i sym_table(__m512i h, const sym_consts *s)
{
    const __m512i spread = _mm512_permutexvar_epi16(_mm512_loadu_si512(s->index), h);
    /* (spread ^ flip) & keep */
    return _mm512_ternarylogic_epi32(spread, _mm512_loadu_si512(s->flip), _mm512_loadu_si512(s->keep), 0x28);
}

/* ---- Q4_0: d, qs[16]; output (c - 8) * d ---- */

static inline __attribute__((always_inline)) void q4_0_exact(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                             bool bf16)
{
    const __m512 table = _mm512_mul_ps(codes_from(-8), _mm512_set1_ps(dm[0]));
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(nibble_index(blk + 2, false, 0), exact_halves(table, bf16)));
}

/* Two blocks: magnitudes k * d_A in lanes 2k - 2, k * d_B in 2k - 1. */
static inline __attribute__((always_inline)) void q4_0_fast_pair(const uint8_t *blk, uint16_t *dst, const float *dm)
{
    const sym_consts *s = &q4_0_sym_f16;
    double dd;
    memcpy(&dd, dm, sizeof dd);
    const __m512 k = _mm512_setr_ps(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8);
    const __m512i table = sym_table(fast_halves(_mm512_mul_ps(k, _mm512_castpd_ps(_mm512_set1_pd(dd))), false), s);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(nibble_index(blk + 2, false, 0), table));
    _mm512_storeu_si512(dst + QK, _mm512_permutexvar_epi16(nibble_index(blk + 18 + 2, false, 16), table));
}

/* F16: two blocks at a time (q4_0_fast_pair). BF16: each block's whole
 * table (integer rounding, no shuffle) and one lookup measured faster than
 * the symmetric table's extra VPERMW. */
static inline __attribute__((always_inline)) void q4_0_fast(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                            bool bf16)
{
    if (!bf16) {
        q4_0_fast_pair(blk, dst, dm);
        return;
    }
    for (int b = 0; b < 2; b++) {
        const __m512 table = _mm512_mul_ps(codes_from(-8), _mm512_set1_ps(dm[b]));
        _mm512_storeu_si512(dst + b * QK, _mm512_permutexvar_epi16(nibble_index(blk + b * 18 + 2, true, 0),
                                                                   fast_halves(table, true)));
    }
}

/* ---- Q4_1: d, m, qs[16]; output c * d + m ---- */

static inline __attribute__((always_inline)) void q4_1_exact(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                             bool bf16)
{
    const __m512i table = exact_halves(affine_table(codes_from(0), dm, blk + 2), bf16);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(nibble_index(blk + 4, false, 0), table));
}

static inline __attribute__((always_inline)) void q4_1_fast(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                            bool bf16)
{
    const __m512 p = _mm512_mul_ps(codes_from(0), _mm512_set1_ps(dm[0]));
    const __m512i table = fast_halves(_mm512_add_ps(p, _mm512_set1_ps(dm[1])), bf16);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(nibble_index(blk + 4, bf16, 0), table));
}

/* ---- Q5_0: d, qh[4], qs[16]; output (c - 16) * d ---- */

static inline __attribute__((always_inline)) void q5_0_exact(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                             bool bf16)
{
    const __m512 d = _mm512_set1_ps(dm[0]);
    const __m512i lo = exact_halves(_mm512_mul_ps(codes_from(-16), d), bf16);
    const __m512i hi = exact_halves(_mm512_mul_ps(codes_from(0), d), bf16);
    _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(lo, q5_index(blk + 2, blk + 6, false, 32), hi));
}

/* The 32-entry table from the 16 magnitudes k * d, k = 1..16 (sym_table). */
static inline __attribute__((always_inline)) void q5_0_fast(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                            bool bf16)
{
    const __m512 mag = _mm512_mul_ps(codes_from(1), _mm512_set1_ps(dm[0]));
    const __m512i table = sym_table(fast_halves(mag, bf16), bf16 ? &q5_0_sym_bf16 : &q5_0_sym_f16);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(q5_index(blk + 2, blk + 6, false, 16), table));
}

/* ---- Q5_1: d, m, qh[4], qs[16]; output c * d + m ---- */

static inline __attribute__((always_inline)) void q5_1_exact(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                             bool bf16)
{
    const __m512i lo = exact_halves(affine_table(codes_from(0), dm, blk + 2), bf16);
    const __m512i hi = exact_halves(affine_table(codes_from(16), dm, blk + 2), bf16);
    _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(lo, q5_index(blk + 4, blk + 8, false, 32), hi));
}

static inline __attribute__((always_inline)) void q5_1_fast(const uint8_t *blk, uint16_t *dst, const float *dm,
                                                            bool bf16)
{
    const __m512 d = _mm512_set1_ps(dm[0]), m = _mm512_set1_ps(dm[1]);
    const __m512i lo = fast_halves(_mm512_add_ps(_mm512_mul_ps(codes_from(0), d), m), bf16);
    const __m512i hi = fast_halves(_mm512_add_ps(_mm512_mul_ps(codes_from(16), d), m), bf16);
    _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(lo, q5_index(blk + 4, blk + 8, bf16, 32), hi));
}

/* ---- Q8_0: d, qs[32]; Q8_1: d, s, qs[32]; output q * d ---- */

/*
 * 256 codes: no table. Each weight is widened, converted, multiplied
 * (the scalar's (float)q * d) and converted to its half in registers; the
 * staged route stored and reloaded the floats. F16 by vcvtps2ph (no NaN
 * on the fast path), BF16 rounded in place and the high halves of the two
 * vectors gathered by one VPERMT2W.
 */
static inline __attribute__((always_inline)) void q8_block(const uint8_t *qs, uint16_t *dst, const float *dm,
                                                           bool bf16, bool exact)
{
    static const uint16_t odd_words[32] __attribute__((aligned(64))) = {
        1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
        33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63 };
    const __m512 d = _mm512_set1_ps(dm[0]);
    __m512 v[2];
    for (int h = 0; h < 2; h++)
        v[h] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                 _mm_loadu_si128((const __m128i *)(const void *)(qs + 16 * h)))), d);
    if (exact) {
        for (int h = 0; h < 2; h++)
            _mm256_storeu_si256((__m256i *)(void *)(dst + 16 * h), _mm512_castsi512_si256(exact_halves(v[h], bf16)));
    } else if (!bf16) {
        for (int h = 0; h < 2; h++)
            _mm256_storeu_si256((__m256i *)(void *)(dst + 16 * h), _mm512_castsi512_si256(fast_halves(v[h], false)));
    } else {
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(fast_halves(v[0], true), _mm512_load_si512(odd_words),
                                                           fast_halves(v[1], true)));
    }
}

#define Q8_BODIES(t, qs_at)                                                                          \
    static inline __attribute__((always_inline)) void t##_fast(const uint8_t *blk, uint16_t *dst,    \
                                                               const float *dm, bool bf16)           \
    {                                                                                                \
        q8_block(blk + (qs_at), dst, dm, bf16, false);                                               \
    }                                                                                                \
    static inline __attribute__((always_inline)) void t##_exact(const uint8_t *blk, uint16_t *dst,   \
                                                                const float *dm, bool bf16)          \
    {                                                                                                \
        q8_block(blk + (qs_at), dst, dm, bf16, true);                                                \
    }

Q8_BODIES(q8_0, 2)
Q8_BODIES(q8_1, 4)

/*
 * gq_avx512_dequantize_<t>_f16 and _bf16: half_blocks over <t>_fast (step
 * blocks at a time) and <t>_exact, bytes per block, per scales per block.
 */
#define LEGACY_HALF(t, bytes, per, step)                                                             \
    static void t##_fast_f16(const uint8_t *blk, uint16_t *dst, const float *dm)                    \
    {                                                                                                \
        t##_fast(blk, dst, dm, false);                                                               \
    }                                                                                                \
    static void t##_fast_bf16(const uint8_t *blk, uint16_t *dst, const float *dm)                   \
    {                                                                                                \
        t##_fast(blk, dst, dm, true);                                                                \
    }                                                                                                \
    static void t##_exact_f16(const uint8_t *blk, uint16_t *dst, const float *dm)                   \
    {                                                                                                \
        t##_exact(blk, dst, dm, false);                                                              \
    }                                                                                                \
    static void t##_exact_bf16(const uint8_t *blk, uint16_t *dst, const float *dm)                  \
    {                                                                                                \
        t##_exact(blk, dst, dm, true);                                                               \
    }                                                                                                \
    void gq_avx512_dequantize_##t##_f16(const void *src, uint16_t *dst, int64_t n)                   \
    {                                                                                                \
        half_blocks(src, dst, n / QK, bytes, per, step, t##_fast_f16, t##_exact_f16);                \
    }                                                                                                \
    void gq_avx512_dequantize_##t##_bf16(const void *src, uint16_t *dst, int64_t n)                  \
    {                                                                                                \
        half_blocks(src, dst, n / QK, bytes, per, step, t##_fast_bf16, t##_exact_bf16);              \
    }

LEGACY_HALF(q4_0, 18, 1, 2)
LEGACY_HALF(q4_1, 20, 2, 1)
LEGACY_HALF(q5_0, 22, 1, 1)
LEGACY_HALF(q5_1, 24, 2, 1)
LEGACY_HALF(q8_0, 34, 1, 1)
LEGACY_HALF(q8_1, 36, 1, 1)
