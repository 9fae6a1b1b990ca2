/*
 * kquants_half_avx512.c — AVX-512 K-quant dequantizers straight to F16 and
 * BF16. Scalar twin: gq_dequantize_<t> (src/quants/kquants.c) followed by
 * gq_quantize_f16 / gq_quantize_bf16 (src/quants/float.c).
 *
 * Technique: each sub-block's weights take few distinct values (Q4_K: 16,
 * Q5_K: 32). Those values are computed in F32 for every level with the
 * scalar kernel's operations in its order (d1 * q - m1: a multiply, then a
 * subtract; built with -ffp-contract=off), converted once per sub-block,
 * and the halves are looked up per weight with VPERMT2W (a 64-word table in
 * two registers, 6 index bits). The lookup returns exactly the half the
 * scalar path makes for that level, so NaN/Inf/subnormal scales come out
 * right by construction.
 *  - F16: the table is converted by gq_avx512_f32x16_to_f16 (half_avx512.h);
 *    its 16 halves fill words 0-15 of a register, the index is the level.
 *  - BF16: the table is rounded in its F32 lanes (bf16_high_words below, the
 *    arithmetic of gq_avx512_f32x16_to_bf16 without its final narrowing),
 *    so the BF16 of level q sits in word 2q + 1: no pack, index 2q + 1.
 * The per-block factors (d * sc, dmin * m) are staged one block ahead and
 * re-read as broadcasts, as kquants_avx512.c does. Uses AVX-512 F/BW/VL/DQ
 * only. Blocks are read through byte offsets; nothing outside dst[0..n) is
 * written.
 *
 * Speed (ggufq bench, in cache, x the F32 output's weight rate, F16/BF16):
 * Q2_K 0.94/0.91, Q3_K 0.81/0.75, Q4_K 0.98/0.79, Q5_K 0.96/0.79, Q6_K
 * 0.68/0.54, Q8_K 0.76/0.66 (the decode-then-convert route: 0.4-0.6).
 * Measured and dropped (A/B, same harness): Q4_K's two tables joined by
 * VINSERTI64X4 for one VPERMW (-9 %: a shuffle for an ALU op); Q6_K's
 * levels made floats by OR into 2^23 and a subtract instead of VCVTDQ2PS
 * (-8 %); Q6_K's two F16 halves joined into one 64-byte store (-7 %).
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx512/half_avx512.h"
#include "simd/avx512/vec_avx512.h"

#define ALIGNED64 __attribute__((aligned(64)))
#define INLINE static inline __attribute__((always_inline))

enum {
    Q4K_BYTES = sizeof(blk_q4_K), Q4K_QS = offsetof(blk_q4_K, qs),
    Q5K_BYTES = sizeof(blk_q5_K), Q5K_QH = offsetof(blk_q5_K, qh), Q5K_QS = offsetof(blk_q5_K, qs),
    Q6K_BYTES = sizeof(blk_q6_K), Q6K_QL = offsetof(blk_q6_K, ql), Q6K_QH = offsetof(blk_q6_K, qh),
    Q6K_SCALES = offsetof(blk_q6_K, scales), Q6K_D = offsetof(blk_q6_K, d),
    Q3K_BYTES = sizeof(blk_q3_K), Q3K_HMASK = offsetof(blk_q3_K, hmask), Q3K_QS = offsetof(blk_q3_K, qs),
    Q3K_SCALES = offsetof(blk_q3_K, scales), Q3K_D = offsetof(blk_q3_K, d),
    Q2K_BYTES = sizeof(blk_q2_K), Q2K_SCALES = offsetof(blk_q2_K, scales), Q2K_QS = offsetof(blk_q2_K, qs),
    Q2K_D = offsetof(blk_q2_K, d), Q2K_DMIN = offsetof(blk_q2_K, dmin),
    Q8K_BYTES = sizeof(blk_q8_K), Q8K_D = offsetof(blk_q8_K, d), Q8K_QS = offsetof(blk_q8_K, qs),
};

/* An F16 bit pattern that is not Inf or NaN. */
static inline bool half_is_finite(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7C00) != 0x7C00;
}

/*
 * gq_avx512_f32x16_to_bf16's rounding kept in the 32-bit lanes: the high
 * word of each lane is gq_fp32_to_bf16(x): x + 0x7FFF + lsb rounds to
 * nearest even, a NaN lane takes x | 0x400000 (its high word: (x >> 16) | 64).
 * Without NaN lanes (nan_free) the rounding alone is that.
 */
INLINE __m512i bf16_high_words(__m512 xf, bool nan_free)
{
    const __m512i x = _mm512_castps_si512(xf);
    if (nan_free) { /* x + 0x7FFF, or x + 0x8000 where the lsb (bit 16) is set */
        const __mmask16 odd = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000));
        return _mm512_mask_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), odd, x,
                                     _mm512_set1_epi32(0x8000));
    }
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb);
    const __mmask16 nan = _mm512_cmp_ps_mask(xf, xf, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(rounded, nan, x, _mm512_set1_epi32(0x00400000));
}

/*
 * A 16-entry F32 table as the half lookup's words: F16 in words 0-15,
 * BF16 in the odd words (see the header comment). vcvtps2ph equals
 * gq_fp32_to_fp16 on every non-NaN value, so a table known to hold no NaN
 * (nan_free: its block's factors are finite, then so is d1 * q - m1)
 * skips the NaN folding.
 */
INLINE __m512i half_table16(__m512 t, bool bf16, bool nan_free)
{
    if (bf16)
        return bf16_high_words(t, nan_free);
    if (nan_free)
        return _mm512_castsi256_si512(_mm512_cvtps_ph(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return _mm512_castsi256_si512(gq_avx512_f32x16_to_f16(t));
}

/*
 * The scalar's d1 * q - m1 for the levels lv, as a multiply then a subtract.
 * When d1 and m1 are finite (nan_free), d1 * q is exact (d1 = d * sc has at
 * most 11 + 6 significant bits, q at most 5), so one fused multiply-subtract
 * rounds the same exact difference once, as the subtract does.
 */
INLINE __m512 affine_table(__m512 lv, float d1, float m1, bool nan_free)
{
    if (nan_free)
        return _mm512_fmsub_ps(_mm512_set1_ps(d1), lv, _mm512_set1_ps(m1));
    return _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d1), lv), _mm512_set1_ps(m1));
}

/* Lane k holds k. */
INLINE __m512 levels16(void)
{
    return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/* ------------------------------------------------------------------ Q4_K */

/* One block's factors, staged a block ahead: f[j] = d * sc_j, f[8 + j] =
 * dmin * m_j (the scalar's d1 = d * sc, m1 = min * m); nan_free when d and
 * dmin are finite (then so are all 16: the scales are integers below 64). */
typedef struct {
    float f[16] ALIGNED64;
    int nan_free;
} k4_stage;

INLINE void k4_factors(const uint8_t *b, k4_stage *st)
{
    uint64_t sc, m;
    gq_unpack_scale_min_k4_x8(b + 4, &sc, &m);
    const uint32_t dbits = gq_load_u32(b); /* d, dmin */
    const __m512i lv = _mm512_cvtepu8_epi32(_mm_set_epi64x((long long)m, (long long)sc));
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dbits));
    const __m512 dm = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                            _mm512_castps128_ps512(dd));
    _mm512_store_ps(st->f, _mm512_mul_ps(dm, _mm512_cvtepi32_ps(lv)));
    st->nan_free = (dbits & 0x7C00u) != 0x7C00u && (dbits & 0x7C000000u) != 0x7C000000u;
}

/*
 * 64 weights per 32 bytes of qs: low nibbles are sub-block 2k (table a),
 * high nibbles sub-block 2k + 1 (table b). Each byte is widened to a word
 * once; both indexes are made from it. The high nibble's index is a shift
 * with b as the first table (index bit 5 clear); the low nibble's is masked.
 */
INLINE void q4_K_expand_half(const uint8_t *qs, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m512 lv = levels16();
    for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
        const __m512 ta = affine_table(lv, f[2 * k], f[8 + 2 * k], nan_free);
        const __m512 tb = affine_table(lv, f[2 * k + 1], f[8 + 2 * k + 1], nan_free);
        const __m512i ha = half_table16(ta, bf16, nan_free), hb = half_table16(tb, bf16, nan_free);
        const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)qs));
        __m512i ilo, ihi;
        if (bf16) { /* word 2q + 1; 0xEA is A & B | C */
            ilo = _mm512_ternarylogic_epi32(_mm512_slli_epi16(w, 1), _mm512_set1_epi16(0x1E), _mm512_set1_epi16(1), 0xEA);
            ihi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w, 3), _mm512_set1_epi16(0x1E), _mm512_set1_epi16(1), 0xEA);
        } else {
            ilo = _mm512_and_si512(w, _mm512_set1_epi16(0x0F));
            ihi = _mm512_srli_epi16(w, 4);
        }
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(ha, ilo, hb));
        _mm512_storeu_si512(dst + 32, _mm512_permutex2var_epi16(hb, ihi, ha));
    }
}

INLINE void q4_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) k4_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q4_K_expand_half((B_) + Q4K_QS, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(k4_stage, nan_free, src, dst, n, Q4K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx512_dequantize_q4_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q4_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q4_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q4_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q5_K */

/* Q5_K's stage: the factors (as Q4_K's) and each weight's index byte. */
typedef struct {
    k4_stage k;
    uint8_t idx[2][2][64] ALIGNED64; /* see q5_K_prepare */
} q5_stage;

/*
 * Index bytes, 64 at a time, from level L = nibble | qh bit << 4 (made as
 * in kquants_avx512.c's q5_K_prepare; bits 7:5 are don't-care there):
 * F16 keeps L (VPERMW reads index bits 4:0); BF16 makes 2L + 1 (VPERMT2W
 * reads bits 5:0; the 16-bit shift's carry into bit 0 of the next byte is
 * overwritten by the | 1). idx[p][0]: low nibbles of sub-blocks 4p, 4p + 2;
 * idx[p][1]: their high nibbles (sub-blocks 4p + 1, 4p + 3).
 */
INLINE void q5_K_prepare(const uint8_t *b, q5_stage *st, bool bf16)
{
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const __m512i shl01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr23 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    k4_factors(b, &st->k);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(b + Q5K_QH)));
    for (int p = 0; p < 2; p++) {
        const __m512i qs = _mm512_loadu_si512(b + Q5K_QS + 64 * p);
        const __m512i h = p == 0 ? _mm512_sllv_epi16(qh, shl01) : _mm512_srlv_epi16(qh, shr23);
        __m512i lo = _mm512_ternarylogic_epi32(nib, qs, h, 0xCA);
        __m512i hi = _mm512_ternarylogic_epi32(nib, _mm512_srli_epi16(qs, 4), _mm512_srli_epi16(h, 1), 0xCA);
        if (bf16) {
            lo = _mm512_or_si512(_mm512_slli_epi16(lo, 1), _mm512_set1_epi8(1));
            hi = _mm512_or_si512(_mm512_slli_epi16(hi, 1), _mm512_set1_epi8(1));
        }
        _mm512_store_si512(st->idx[p][0], lo);
        _mm512_store_si512(st->idx[p][1], hi);
    }
}

/* 32 index bytes widened to words. */
INLINE __m512i widen32(const uint8_t *p)
{
    return _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(const void *)p));
}

/* Sub-block j's 32-entry table (levels 0-15 in t0, 16-31 in t1) and its 32 weights. */
INLINE void q5_K_subblock(__m512 t0, __m512 t1, const uint8_t *idx, uint16_t *dst, bool bf16, bool nan_free)
{
    __m512i h;
    if (bf16)
        h = _mm512_permutex2var_epi16(bf16_high_words(t0, nan_free), widen32(idx), bf16_high_words(t1, nan_free));
    else
        h = _mm512_permutexvar_epi16(widen32(idx),
                                     _mm512_inserti64x4(half_table16(t0, false, nan_free),
                                                        _mm512_castsi512_si256(half_table16(t1, false, nan_free)), 1));
    _mm512_storeu_si512(dst, h);
}

INLINE void q5_K_expand_half(const q5_stage *st, uint16_t *dst, bool bf16, bool nan_free)
{
    const __m512 lv0 = levels16(), lv1 = _mm512_add_ps(levels16(), _mm512_set1_ps(16));
    const float *f = st->k.f;
    for (int j = 0; j < 8; j++, dst += 32) {
        const float d1 = f[j], m1 = f[8 + j];
        const uint8_t *idx = st->idx[j / 4][j % 2] + 32 * ((j / 2) % 2);
        q5_K_subblock(affine_table(lv0, d1, m1, nan_free), affine_table(lv1, d1, m1, nan_free), idx, dst, bf16,
                      nan_free);
    }
}

INLINE void q5_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q5_K_prepare(B_, S_, bf16)
#define EXPAND(B_, S_, Y_, NF_) q5_K_expand_half(S_, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q5_stage, k.nan_free, src, dst, n, Q5K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx512_dequantize_q5_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q5_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q5_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q6_K */

/*
 * Q6_K takes 64 levels per 16 weights: a table would convert more values
 * than it has weights, so each weight is computed (the scalar's d * sc * q:
 * the staged d * sc times the level) and converted: F16 by vcvtps2ph, 16 a
 * time; BF16 rounded in its F32 lanes, the high words of two vectors then
 * gathered by one VPERMT2W.
 */
typedef struct {
    float f[16] ALIGNED64; /* d * sc_j, the scalar's first rounding */
    int nan_free;          /* d is finite: so is every d * sc * q */
} q6_stage;

INLINE void q6_K_factors(const uint8_t *b, q6_stage *st)
{
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + Q6K_SCALES)));
    uint16_t d;
    memcpy(&d, b + Q6K_D, sizeof d);
    _mm512_store_ps(st->f, _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(d)), _mm512_cvtepi32_ps(sc)));
    st->nan_free = (d & 0x7C00) != 0x7C00;
}

/* 32 floats (a, then b) to 32 halves: F16 by vcvtps2ph, 16 at a time; BF16
 * rounded in the F32 lanes, then the high words of both gathered by one VPERMT2W. */
INLINE void store_halves32(uint16_t *dst, __m512 a, __m512 b, bool bf16, bool nan_free)
{
    if (bf16) {
        const __m512i odd = _mm512_setr_epi32(0x00030001, 0x00070005, 0x000B0009, 0x000F000D, 0x00130011,
                                              0x00170015, 0x001B0019, 0x001F001D, 0x00230021, 0x00270025,
                                              0x002B0029, 0x002F002D, 0x00330031, 0x00370035, 0x003B0039,
                                              0x003F003D);
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(bf16_high_words(a, nan_free), odd,
                                                           bf16_high_words(b, nan_free)));
    } else {
        _mm256_storeu_si256((__m256i *)(void *)dst, _mm512_castsi512_si256(half_table16(a, false, nan_free)));
        _mm256_storeu_si256((__m256i *)(void *)(dst + 16), _mm512_castsi512_si256(half_table16(b, false, nan_free)));
    }
}

/* 32 signed byte levels (two sub-blocks, factors f[0], f[1]) to 32 halves. */
INLINE void q6_K_store32(uint16_t *dst, __m256i lv, const float *f, bool bf16, bool nan_free)
{
    const __m512 a = _mm512_mul_ps(_mm512_set1_ps(f[0]),
                                   _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(lv))));
    const __m512 b = _mm512_mul_ps(_mm512_set1_ps(f[1]),
                                   _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(lv, 1))));
    store_halves32(dst, a, b, bf16, nan_free);
}

/* Levels (4 low bits | 2 high bits << 4) - 32 made as bytes, 32 at a time, as kquants_avx512.c's q6_K_expand. */
INLINE void q6_K_expand_half(const uint8_t *b, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++, dst += 128) {
        const uint8_t *ql = b + Q6K_QL + 64 * h;
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ql);
        const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
        const __m256i hv = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q6K_QH + 32 * h));
        /* (x & 0x0F) | (y & 0x30), then - 32 */
        const __m256i q[4] = {
            _mm256_ternarylogic_epi32(low4, a, _mm256_and_si256(_mm256_slli_epi16(hv, 4), top2), 0xCA),
            _mm256_ternarylogic_epi32(low4, c, _mm256_and_si256(_mm256_slli_epi16(hv, 2), top2), 0xCA),
            _mm256_ternarylogic_epi32(low4, _mm256_srli_epi16(a, 4), _mm256_and_si256(hv, top2), 0xCA),
            _mm256_ternarylogic_epi32(low4, _mm256_srli_epi16(c, 4), _mm256_and_si256(_mm256_srli_epi16(hv, 2), top2),
                                      0xCA),
        };
        for (int r = 0; r < 4; r++)
            q6_K_store32(dst + 32 * r, _mm256_sub_epi8(q[r], off), f + 8 * h + 2 * r, bf16, nan_free);
    }
}

INLINE void q6_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q6_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q6_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q6_stage, nan_free, src, dst, n, Q6K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx512_dequantize_q6_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q6_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q6_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q6_K_half(src, dst, n, true);
}

/* ------------------------------------------------- Q3_K and Q2_K lookups */

/*
 * Q3_K and Q2_K share their layout: weight 128h + 32s + 16g + l is the bit
 * field 2s of qs[32h + 16g + l], in sub-block 8h + 2s + g. Their tables
 * interleave sub-blocks: one register's 16 F32 lanes hold the values of 2
 * (Q3_K: 8 levels) or 4 (Q2_K: 4 levels) sub-blocks, lane = level * count
 * + sub-block, so the factors come in by one broadcast load. The 16 halves
 * are then one VPERMW table: F16 in word `lane`, BF16 in word 2 lane + 1,
 * both below 32.
 */

/* 32 weights (index bytes in idx: the level in bits 0..lbits-1, don't-care
 * bits above) looked up in table: word ((level << shift) & mask) | base. */
INLINE void lookup32_words(__m256i idx, __m512i table, int shift, int mask, __m512i base, uint16_t *dst)
{
    const __m512i w = _mm512_slli_epi16(_mm512_cvtepu8_epi16(idx), shift);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(_mm512_ternarylogic_epi32(w, _mm512_set1_epi16((short)mask),
                                                                                 base, 0xEA), table));
}

/* Word bases of the 32 weights of sub-blocks t (first 16) and t + 1, table
 * lane = level * count + sub-block: F16 words t, t + 1; BF16 2t + 1, 2t + 3. */
INLINE __m512i lane_base(int t, bool bf16)
{
    return bf16 ? _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * t + 1)), _mm256_set1_epi16((short)(2 * t + 3)), 1)
                : _mm512_inserti64x4(_mm512_set1_epi16((short)t), _mm256_set1_epi16((short)(t + 1)), 1);
}

/* ------------------------------------------------------------------ Q3_K */

/* f[j] = d * scale_j (signed 6-bit scales: the scalar's dl); nan_free when d is finite. */
typedef struct {
    float f[16] ALIGNED64;
    int nan_free;
} q3_stage;

/* The 16 scales as bytes 0..63 (scale + 32), as kquants_avx512.c's unpack_q3_K_scales. */
INLINE void q3_K_factors(const uint8_t *b, q3_stage *st)
{
    const uint8_t *s = b + Q3K_SCALES;
    const uint32_t w0 = gq_load_u32(s), w1 = gq_load_u32(s + 4), w2 = gq_load_u32(s + 8);
    const __m128i sc = _mm_setr_epi32((int)((w0 & 0x0F0F0F0Fu) | ((w2 << 4) & 0x30303030u)),
                                      (int)((w1 & 0x0F0F0F0Fu) | ((w2 << 2) & 0x30303030u)),
                                      (int)(((w0 >> 4) & 0x0F0F0F0Fu) | (w2 & 0x30303030u)),
                                      (int)(((w1 >> 4) & 0x0F0F0F0Fu) | ((w2 >> 2) & 0x30303030u)));
    const __m512i sc32 = _mm512_sub_epi32(_mm512_cvtepu8_epi32(sc), _mm512_set1_epi32(32));
    _mm512_store_ps(st->f, _mm512_mul_ps(_mm512_set1_ps(gq_x86_half_at(b + Q3K_D)), _mm512_cvtepi32_ps(sc32)));
    st->nan_free = half_is_finite(b + Q3K_D);
}

/*
 * Level k = the 2 low bits | the hmask bit << 2 (index bytes made as
 * kquants_avx512.c's q3_K_expand), value dl * ((k & 7) - 4), the scalar's
 * dl * (q - (hbit ? 0 : 4)): a product of small integers and dl, exact
 * when finite. Table lanes 2k + g: sub-blocks 8h + 2s + g, g = 0, 1.
 */
INLINE void q3_K_expand_half(const uint8_t *b, const float f[16], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m512 lv = _mm512_setr_ps(-4, -4, -3, -3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_HMASK));
    const __m512i base = lane_base(0, bf16);
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_QS + 32 * h));
        for (int s = 0; s < 4; s++) {
            const int hb = 4 * h + s; /* the hmask bit, moved to bit 2 */
            const __m256i hi = hb >= 2 ? _mm256_srli_epi16(hm, hb - 2) : _mm256_slli_epi16(hm, 2 - hb);
            const __m256i idx = _mm256_ternarylogic_epi32(_mm256_srli_epi16(q, 2 * s), hi, low2, 0xE4);
            const __m512 dl = _mm512_castpd_ps(_mm512_broadcastsd_pd(
                _mm_load_sd((const double *)(const void *)(f + 8 * h + 2 * s))));
            const __m512i table = half_table16(_mm512_mul_ps(dl, lv), bf16, nan_free);
            lookup32_words(idx, table, bf16 ? 2 : 1, bf16 ? 0x1C : 0x0E, base, dst + 128 * h + 32 * s);
        }
    }
}

INLINE void q3_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q3_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q3_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q3_stage, nan_free, src, dst, n, Q3K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx512_dequantize_q3_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q3_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q3_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q3_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q2_K */

/* f[j] = d * (sc_j & 15), f[16 + j] = dmin * (sc_j >> 4): the scalar's dl, ml;
 * nan_free when d and dmin are finite. */
typedef struct {
    float f[32] ALIGNED64;
    int nan_free;
} q2_stage;

INLINE void q2_K_factors(const uint8_t *b, q2_stage *st)
{
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + Q2K_SCALES)));
    const __m512i lo = _mm512_and_si512(sc, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(sc, 4);
    _mm512_store_ps(st->f, _mm512_mul_ps(_mm512_set1_ps(gq_x86_half_at(b + Q2K_D)), _mm512_cvtepi32_ps(lo)));
    _mm512_store_ps(st->f + 16, _mm512_mul_ps(_mm512_set1_ps(gq_x86_half_at(b + Q2K_DMIN)), _mm512_cvtepi32_ps(hi)));
    st->nan_free = half_is_finite(b + Q2K_D) && half_is_finite(b + Q2K_DMIN);
}

/*
 * Table lanes 4q + t: level q of sub-block 8h + 4p + t (t < 4), the
 * scalar's dl * q - ml (a multiply then a subtract; with finite factors dl
 * * q is exact, so one fused multiply-subtract rounds the same value).
 * The 64 weights of s = 2p, 2p + 1 share it.
 */
INLINE void q2_K_expand_half(const uint8_t *b, const float f[32], uint16_t *dst, bool bf16, bool nan_free)
{
    const __m512 lv = _mm512_setr_ps(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q2K_QS + 32 * h));
        for (int p = 0; p < 2; p++) {
            const int j = 8 * h + 4 * p;
            const __m512 dl = _mm512_broadcast_f32x4(_mm_load_ps(f + j));
            const __m512 ml = _mm512_broadcast_f32x4(_mm_load_ps(f + 16 + j));
            const __m512 t = nan_free ? _mm512_fmsub_ps(dl, lv, ml) : _mm512_sub_ps(_mm512_mul_ps(dl, lv), ml);
            const __m512i table = half_table16(t, bf16, nan_free);
            for (int u = 0; u < 2; u++) {
                const int s = 2 * p + u;
                lookup32_words(_mm256_srli_epi16(q, 2 * s), table, bf16 ? 3 : 2, bf16 ? 0x18 : 0x0C,
                               lane_base(2 * u, bf16), dst + 128 * h + 32 * s);
            }
        }
    }
}

INLINE void q2_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
#define STAGE(B_, S_) q2_K_factors(B_, S_)
#define EXPAND(B_, S_, Y_, NF_) q2_K_expand_half(B_, (S_)->f, Y_, bf16, NF_)
    GQ_HALF_STAGED_BLOCKS(q2_stage, nan_free, src, dst, n, Q2K_BYTES, STAGE, EXPAND);
#undef STAGE
#undef EXPAND
}

void gq_avx512_dequantize_q2_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q2_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q2_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q2_K_half(src, dst, n, true);
}

/* ------------------------------------------------------------------ Q8_K */

/* d * q for 256 int8 levels per block (the scalar's one rounding), converted
 * 32 at a time as Q6_K's; nan_free when the F32 d is finite. */
INLINE void q8_K_half(const void *src, uint16_t *dst, int64_t n, bool bf16)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += Q8K_BYTES, dst += QK_K) {
        const uint32_t dbits = gq_load_u32(b + Q8K_D);
        float df;
        memcpy(&df, &dbits, sizeof df);
        const __m512 d = _mm512_set1_ps(df);
        const bool nan_free = (dbits & 0x7F800000u) != 0x7F800000u;
        for (int j = 0; j < QK_K; j += 32) {
            const uint8_t *q = b + Q8K_QS + j;
            const __m512 lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(const void *)q))));
            const __m512 hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(const void *)(q + 16)))));
            if (nan_free)
                store_halves32(dst + j, lo, hi, bf16, true);
            else
                store_halves32(dst + j, lo, hi, bf16, false);
        }
    }
}

void gq_avx512_dequantize_q8_K_f16(const void *src, uint16_t *dst, int64_t n)
{
    q8_K_half(src, dst, n, false);
}

void gq_avx512_dequantize_q8_K_bf16(const void *src, uint16_t *dst, int64_t n)
{
    q8_K_half(src, dst, n, true);
}
