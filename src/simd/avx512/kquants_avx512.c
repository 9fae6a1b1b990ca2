/*
 * kquants_avx512.c — AVX-512 dequantizers for the K-quants Q3_K, Q4_K,
 * Q5_K and Q6_K. SIMD twin of src/quants/kquants.c.
 *
 * Q2_K and Q8_K are left to the AVX2 kernels (kquants_avx2.c), which
 * measured as fast as 512-bit ones (%memset, AVX2 vs AVX-512: Q2_K 76 vs
 * 74, both lookups in per-sub-block tables; Q8_K 78 vs 78, widen, convert
 * and multiply: the stores set its pace).
 *
 * How it vectorises: levels are widened sixteen bytes at a time to int32
 * lanes (vpmovzxbd). Each sub-block's outputs are first computed for every
 * possible level (Q3_K: 8, Q4_K: 16, Q5_K: 32), with the scalar kernel's float
 * operations (d*scale*level - dmin*min, same order, same roundings), into one
 * or two registers; the weights are then table lookups (vpermps /
 * vpermt2ps), whose index is the level's bit field in place: those
 * instructions read only the low 4 (5) index bits, so no masking is needed.
 * The lookup returns exactly the float the scalar computes for that level,
 * so results are bit-identical. Q6_K's 64 levels are too many for a
 * table: its levels are made as bytes, widened, converted and multiplied.
 * The per-block factors are staged one block ahead and read back as
 * broadcast memory operands (GQ_REREAD, vec_avx512.h): the shuffle pipes
 * that the lookups and widenings need set the pace of these loops.
 * Uses AVX-512 F/BW/VL/DQ only (no VBMI). Blocks are read through byte
 * offsets (no struct alignment assumed); nothing outside the n / 256 blocks
 * is read or written.
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx512/vec_avx512.h"

/* Byte offsets of the fields in each block (common/blocks.h). */
enum {
    Q4K_BYTES = sizeof(blk_q4_K), Q4K_QS = offsetof(blk_q4_K, qs),
    Q6K_BYTES = sizeof(blk_q6_K), Q6K_QL = offsetof(blk_q6_K, ql), Q6K_QH = offsetof(blk_q6_K, qh),
    Q6K_SCALES = offsetof(blk_q6_K, scales), Q6K_D = offsetof(blk_q6_K, d),
    Q3K_BYTES = sizeof(blk_q3_K), Q3K_HMASK = offsetof(blk_q3_K, hmask),
    Q3K_QS = offsetof(blk_q3_K, qs), Q3K_SCALES = offsetof(blk_q3_K, scales),
    Q3K_D = offsetof(blk_q3_K, d),
    Q5K_BYTES = sizeof(blk_q5_K), Q5K_D = offsetof(blk_q5_K, d),
    Q5K_DMIN = offsetof(blk_q5_K, dmin), Q5K_SCALES = offsetof(blk_q5_K, scales),
    Q5K_QH = offsetof(blk_q5_K, qh), Q5K_QS = offsetof(blk_q5_K, qs),
};

#define ALIGNED64 __attribute__((aligned(64)))

/* see GQ_REREAD (vec_avx512.h) */
#define REREAD_FROM_MEMORY(arr) GQ_REREAD(arr)

/* Sixteen bytes widened to sixteen int32 lanes. */
static inline __m512i widen16(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* Lane k holds (k & 7) - 4, k + base: the levels the tables are built for. */
static inline __m512 levels_3bit_signed(void)
{
    return _mm512_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3, -4, -3, -2, -1, 0, 1, 2, 3);
}
static inline __m512 levels_4bit(int base)
{
    return _mm512_add_ps(_mm512_set1_ps((float)base),
                         _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/* ------------------------------------------------------------------ Q3_K */

/* The 16 signed 6-bit scales as bytes 0..63 (scale + 32); see kquants_avx2.c. */
static inline __m128i unpack_q3_K_scales(const uint8_t *s)
{
    const uint32_t w0 = gq_load_u32(s), w1 = gq_load_u32(s + 4), w2 = gq_load_u32(s + 8);
    const uint32_t s0 = (w0 & 0x0F0F0F0Fu) | ((w2 << 4) & 0x30303030u);
    const uint32_t s1 = (w1 & 0x0F0F0F0Fu) | ((w2 << 2) & 0x30303030u);
    const uint32_t s2 = ((w0 >> 4) & 0x0F0F0F0Fu) | (w2 & 0x30303030u);
    const uint32_t s3 = ((w1 >> 4) & 0x0F0F0F0Fu) | ((w2 >> 2) & 0x30303030u);
    return _mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3);
}

/* f[j] = d * (scale_j - 32), the scalar's dl. */
static inline void q3_K_factors(const uint8_t *b, float f[16])
{
    const __m512i sc = _mm512_sub_epi32(_mm512_cvtepu8_epi32(unpack_q3_K_scales(b + Q3K_SCALES)),
                                        _mm512_set1_epi32(32));
    _mm512_store_ps(f, _mm512_mul_ps(_mm512_set1_ps(gq_x86_half_at(b + Q3K_D)), _mm512_cvtepi32_ps(sc)));
}

/* weight 128h + 32s + 16g + l: bits 2s of qs[32h + 16g + l], sub-block 8h + 2s + g;
 * its high bit is bit 4h + s of hmask[16g + l].
 * Index bits 1:0 = the 2 low bits, bit 2 = the high bit; table lane k holds
 * dl * ((k & 7) - 4), i.e. dl * (q - (hbit ? 0 : 4)). The index bytes of
 * 32 weights are built at once in a ymm (16-bit shifts: the bits kept
 * never cross a byte), then widened 16 at a time: one op per 16 weights
 * where shifting and merging int32 lanes took three. */
static inline void q3_K_expand(const uint8_t *b, const float dla[16], float *dst)
{
    const __m512 lv = levels_3bit_signed();
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_HMASK));
    for (int h = 0; h < 2; h++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q3K_QS + 32 * h));
        float *y = dst + 128 * h;
        for (int s = 0; s < 4; s++) {
            const int hb = 4 * h + s; /* the hmask bit, moved to bit 2 */
            const __m256i hi = hb >= 2 ? _mm256_srli_epi16(hm, hb - 2) : _mm256_slli_epi16(hm, 2 - hb);
            const __m256i idx = _mm256_ternarylogic_epi32(_mm256_srli_epi16(q, 2 * s), hi, low2, 0xE4);
            for (int g = 0; g < 2; g++) {
                const __m512 t = _mm512_mul_ps(_mm512_set1_ps(dla[8 * h + 2 * s + g]), lv);
                const __m512i ix = _mm512_cvtepu8_epi32(g ? _mm256_extracti128_si256(idx, 1)
                                                          : _mm256_castsi256_si128(idx));
                _mm512_storeu_ps(y + 32 * s + 16 * g, _mm512_permutexvar_ps(ix, t));
            }
        }
    }
}

/* Factors staged one block ahead (see k4_stage below for why). */
void gq_avx512_dequantize_q3_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    float f[2][16] ALIGNED64;
    if (nb <= 0)
        return;
    q3_K_factors(b, f[0]);
    for (int64_t i = 0; i < nb; i++, b += Q3K_BYTES, dst += QK_K) {
        if (i + 1 < nb)
            q3_K_factors(b + Q3K_BYTES, f[(i + 1) & 1]);
        REREAD_FROM_MEMORY(f);
        q3_K_expand(b, f[i & 1], dst);
    }
}

/* ------------------------------------------------------------------ Q5_K */

/*
 * Per-block factors of Q5_K: f[j] = d * sc_j and f[8 + j] = dmin * m_j
 * (the scalar's d1 = d * sc, m1 = min * m), in one 16-lane multiply.
 */
static inline void k4_factors(const uint8_t *b, float f[16])
{
    uint64_t sc, m;
    gq_unpack_scale_min_k4_x8(b + 4, &sc, &m);
    const __m512i lv = _mm512_cvtepu8_epi32(_mm_set_epi64x((long long)m, (long long)sc));
    /* halves d, dmin at bytes 0 and 2 -> lanes 0-7 get d, lanes 8-15 dmin */
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)gq_load_u32(b)));
    const __m512 dm = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                            _mm512_castps128_ps512(dd));
    _mm512_store_ps(f, _mm512_mul_ps(dm, _mm512_cvtepi32_ps(lv)));
}

/*
 * Per-block staging buffer. Its elements are re-read with broadcast and
 * widening loads (load port), which keeps the shuffle port for the lookups.
 * Q5_K is software-pipelined: block i + 1 is staged while block i is
 * expanded from the other buffer, so those loads read stores that have long
 * retired (no store-forwarding stalls).
 */
typedef struct {
    float f[16];           /* k4_factors */
    uint8_t idx[2][2][64]; /* see q5_K_prepare */
} k4_stage;

/*
 * Level indexes as bytes, 64 at a time: bits 3:0 the nibble, bit 4 the qh
 * bit, bits 7:5 don't care (vpermt2ps reads index bits 4:0).
 * idx[p][0] = low nibbles of k = 2p, 2p + 1; idx[p][1] = their high nibbles.
 */
static inline void q5_K_prepare(const uint8_t *b, k4_stage *st)
{
    const __m512i nib = _mm512_set1_epi8(0x0F);
    /* 16-bit shift counts that bring qh bit 2k to bit 4 of each byte, for the
     * two k of each 64-byte half of qs (k = 0, 1: left; k = 2, 3: right) */
    const __m512i shl01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr23 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    k4_factors(b, st->f);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(b + Q5K_QH)));
    for (int p = 0; p < 2; p++) {
        const __m512i qs = _mm512_loadu_si512(b + Q5K_QS + 64 * p);
        const __m512i h = p == 0 ? _mm512_sllv_epi16(qh, shl01) : _mm512_srlv_epi16(qh, shr23);
        _mm512_store_si512(st->idx[p][0], _mm512_ternarylogic_epi32(nib, qs, h, 0xCA));
        _mm512_store_si512(st->idx[p][1], _mm512_ternarylogic_epi32(nib, _mm512_srli_epi16(qs, 4),
                                                                     _mm512_srli_epi16(h, 1), 0xCA));
    }
}

static inline void q5_K_expand(const k4_stage *st, float *dst)
{
    const __m512 lv_lo = levels_4bit(0), lv_hi = levels_4bit(16);
    for (int k = 0; k < 4; k++, dst += 64) {
        /* 32-entry tables: lane k of lo/hi = d * level - m for level k / k + 16 */
        const __m512 d1 = _mm512_set1_ps(st->f[2 * k]), m1 = _mm512_set1_ps(st->f[8 + 2 * k]);
        const __m512 d2 = _mm512_set1_ps(st->f[2 * k + 1]), m2 = _mm512_set1_ps(st->f[8 + 2 * k + 1]);
        const __m512 t1lo = _mm512_sub_ps(_mm512_mul_ps(d1, lv_lo), m1);
        const __m512 t1hi = _mm512_sub_ps(_mm512_mul_ps(d1, lv_hi), m1);
        const __m512 t2lo = _mm512_sub_ps(_mm512_mul_ps(d2, lv_lo), m2);
        const __m512 t2hi = _mm512_sub_ps(_mm512_mul_ps(d2, lv_hi), m2);
        const uint8_t *lo = st->idx[k / 2][0] + 32 * (k % 2), *hi = st->idx[k / 2][1] + 32 * (k % 2);
        _mm512_storeu_ps(dst, _mm512_permutex2var_ps(t1lo, widen16(lo), t1hi));
        _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(t1lo, widen16(lo + 16), t1hi));
        _mm512_storeu_ps(dst + 32, _mm512_permutex2var_ps(t2lo, widen16(hi), t2hi));
        _mm512_storeu_ps(dst + 48, _mm512_permutex2var_ps(t2lo, widen16(hi + 16), t2hi));
    }
}

void gq_avx512_dequantize_q5_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    k4_stage st[2] ALIGNED64;
    if (nb <= 0)
        return;
    q5_K_prepare(b, &st[0]);
    for (int64_t i = 0; i < nb; i++, b += Q5K_BYTES, dst += QK_K) {
        if (i + 1 < nb) /* stage the next block while this one is expanded */
            q5_K_prepare(b + Q5K_BYTES, &st[(i + 1) & 1]);
        REREAD_FROM_MEMORY(st);
        q5_K_expand(&st[i & 1], dst);
    }
}

/* ------------------------------------------------------------------ Q4_K */

/* 64 weights per 32 bytes of qs: low nibbles are sub-block 2k, high ones 2k + 1;
 * table lane c holds d_j * c - m_j, the scalar's d1 * (q & 0xF) - m1. */
static inline void q4_K_expand(const uint8_t *qs, const float f[16], float *dst)
{
    const __m512 lv = levels_4bit(0);
    for (int k = 0; k < 4; k++, qs += 32, dst += 64) {
        const __m512 t1 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(f[2 * k]), lv), _mm512_set1_ps(f[8 + 2 * k]));
        const __m512 t2 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(f[2 * k + 1]), lv),
                                        _mm512_set1_ps(f[8 + 2 * k + 1]));
        for (int l = 0; l < 32; l += 16) {
            const __m512i q = widen16(qs + l);
            _mm512_storeu_ps(dst + l, _mm512_permutexvar_ps(q, t1));
            _mm512_storeu_ps(dst + 32 + l, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), t2));
        }
    }
}

/* Factors staged one block ahead, as Q5_K's. */
void gq_avx512_dequantize_q4_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    float f[2][16] ALIGNED64;
    if (nb <= 0)
        return;
    k4_factors(b, f[0]);
    for (int64_t i = 0; i < nb; i++, b += Q4K_BYTES, dst += QK_K) {
        if (i + 1 < nb)
            k4_factors(b + Q4K_BYTES, f[(i + 1) & 1]);
        REREAD_FROM_MEMORY(f);
        q4_K_expand(b + Q4K_QS, f[i & 1], dst);
    }
}

/* ------------------------------------------------------------------ Q6_K */

/* f[j] = d * sc_j, the scalar's first rounding of d * sc * q. */
static inline void q6_K_factors(const uint8_t *b, float f[16])
{
    const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + Q6K_SCALES)));
    _mm512_store_ps(f, _mm512_mul_ps(_mm512_set1_ps(gq_x86_half_at(b + Q6K_D)), _mm512_cvtepi32_ps(sc)));
}

/* 16 signed byte levels widened, converted and times f: the scalar's second rounding. */
static inline void q6_K_store16(float *dst, __m128i lv, const float *f)
{
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_set1_ps(*f), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lv))));
}

/*
 * Per 128 weights: levels (4 low bits | 2 high bits << 4) - 32 made as
 * bytes, 32 at a time (16-bit shifts: the bits kept never cross a byte),
 * then widened 16 at a time: the int32 lanes see only the widening, the
 * conversion and the multiply.
 */
static inline void q6_K_expand(const uint8_t *b, const float f[16], float *dst)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++, dst += 128) {
        const uint8_t *ql = b + Q6K_QL + 64 * h;
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ql);
        const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
        const __m256i hv = _mm256_loadu_si256((const __m256i *)(const void *)(b + Q6K_QH + 32 * h));
        /* (x & 0x0F) | (y & 0x30), then - 32 */
        const __m256i q[4] = {
            _mm256_sub_epi8(_mm256_ternarylogic_epi32(low4, a, _mm256_and_si256(_mm256_slli_epi16(hv, 4), top2), 0xCA), off),
            _mm256_sub_epi8(_mm256_ternarylogic_epi32(low4, c, _mm256_and_si256(_mm256_slli_epi16(hv, 2), top2), 0xCA), off),
            _mm256_sub_epi8(_mm256_ternarylogic_epi32(low4, _mm256_srli_epi16(a, 4), _mm256_and_si256(hv, top2), 0xCA), off),
            _mm256_sub_epi8(_mm256_ternarylogic_epi32(low4, _mm256_srli_epi16(c, 4),
                                                      _mm256_and_si256(_mm256_srli_epi16(hv, 2), top2), 0xCA), off),
        };
        const float *fh = f + 8 * h;
        for (int r = 0; r < 4; r++) {
            q6_K_store16(dst + 32 * r, _mm256_castsi256_si128(q[r]), fh + 2 * r);
            q6_K_store16(dst + 32 * r + 16, _mm256_extracti128_si256(q[r], 1), fh + 2 * r + 1);
        }
    }
}

void gq_avx512_dequantize_q6_K(const void *src, float *dst, int64_t n)
{
    const uint8_t *b = src;
    const int64_t nb = n / QK_K;
    float f[2][16] ALIGNED64;
    if (nb <= 0)
        return;
    q6_K_factors(b, f[0]);
    for (int64_t i = 0; i < nb; i++, b += Q6K_BYTES, dst += QK_K) {
        if (i + 1 < nb)
            q6_K_factors(b + Q6K_BYTES, f[(i + 1) & 1]);
        REREAD_FROM_MEMORY(f);
        q6_K_expand(b, f[i & 1], dst);
    }
}
