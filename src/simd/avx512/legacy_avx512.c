/*
 * legacy_avx512.c — AVX-512 dequantizers and quantizers for Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0 and Q8_1; SIMD twin of src/quants/legacy.c. (The
 * quantizers, at the end, measured 1.3-1.5x the AVX2 ones with
 * `ggufq bench --quantize`.)
 *
 * A 4/5-bit block has only 16 (32) possible outputs, so each block first
 * computes its table of code * d (+ m) with the scalar's exact float
 * operations, then every output is a lane permute of that table (vpermps,
 * which reads only the low 4 index bits, or vpermt2ps for 5-bit codes).
 * The F16 scales go through vcvtph2ps, exact like gq_fp16_to_fp32; those
 * of Q4_1 and the Q5 types four blocks at a time, a group ahead
 * (gq_legacy_blocks, vec_avx512.h): read back as broadcast memory
 * operands, they cost no shuffle, and shuffles (the lookups and the
 * vpmovzxbd widening) limit these loops.
 *
 * Q8_0 and Q8_1 are left to the AVX2 kernels (legacy_avx2.c): a 512-bit
 * widen-convert-multiply measured no faster (74 vs 76 %memset).
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "simd/simd.h"
#include "simd/x86_quant.h"
#include "simd/avx512/vec_avx512.h"

#define QK QK_LEGACY

static inline __m512 codes_from(int first)
{
    return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_set1_epi32(first),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
}

/* The 16 bytes at p, one per 32-bit lane (vpermps ignores bits above 3). */
static inline __m512i bytes_to_lanes(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* True when the F16 at p is a NaN. */
static inline bool f16_is_nan(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return (h & 0x7FFF) > 0x7C00;
}

/*
 * codes * d + m (no fused multiply-add), d and m the staged floats s[0..1];
 * where the product and m are both NaN, the product's NaN (the scalar's
 * store_affine() explains why): compilers may swap the operands of vaddps,
 * so with a NaN m (the F16 at m_f16) the NaN products are put back with a mask.
 */
static inline __m512 affine_table(__m512 codes, const float *s, const uint8_t *m_f16)
{
    const __m512 p = _mm512_mul_ps(codes, _mm512_set1_ps(s[0]));
    const __m512 y = _mm512_add_ps(p, _mm512_set1_ps(s[1]));
    if (!f16_is_nan(m_f16))
        return y;
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q), p);
}

/* dst[0..15] = table[low nibble of qs[j]], dst[16..31] = table[high nibble]. */
static inline void nibble_lookup(float *dst, const uint8_t *qs, __m512 table)
{
    const __m512i q = bytes_to_lanes(qs);
    _mm512_storeu_ps(dst, _mm512_permutexvar_ps(q, table));
    _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
}

/* Block layout: d, qs[16]. Output: (c - 8) * d. With a single scale per
 * block, converting and broadcasting it in registers measured as fast as
 * staging it (gq_legacy_blocks), and is simpler. */
void gq_avx512_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    const __m512 codes = codes_from(-8);
    for (int64_t b = 0; b < n / QK; b++, blk += 18, dst += QK) {
        uint16_t h;
        memcpy(&h, blk, sizeof h);
        nibble_lookup(dst, blk + 2, _mm512_mul_ps(codes, _mm512_set1_ps(_cvtsh_ss(h))));
    }
}

/* Block layout: d, m, qs[16]. Output: c * d + m. */
static inline void q4_1_block(const uint8_t *blk, float *dst, const float *dm)
{
    nibble_lookup(dst, blk + 4, affine_table(codes_from(0), dm, blk + 2));
}

void gq_avx512_dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    gq_legacy_blocks(src, dst, n / QK, 20, QK, q4_1_block);
}

/*
 * 5-bit indices of a Q5 block: low nibbles (weights 0..15) and high nibbles
 * (16..31), with bit 4 set from qh where the mask bit is set. vpermt2ps reads
 * index bits 0..4, picking the first table (codes 0..15) or the second.
 */
static inline void q5_lookup(float *dst, const uint8_t *qh_p, const uint8_t *qs, __m512 tab_lo, __m512 tab_hi)
{
    uint32_t qh;
    memcpy(&qh, qh_p, sizeof qh);
    const __m512i q = bytes_to_lanes(qs);
    const __m512i sixteen = _mm512_set1_epi32(16);
    const __m512i nib_lo = _mm512_and_si512(q, _mm512_set1_epi32(0x0F));
    const __m512i nib_hi = _mm512_srli_epi32(q, 4);
    const __m512i lo = _mm512_mask_or_epi32(nib_lo, (__mmask16)qh, nib_lo, sixteen);
    const __m512i hi = _mm512_mask_or_epi32(nib_hi, (__mmask16)(qh >> 16), nib_hi, sixteen);
    _mm512_storeu_ps(dst, _mm512_permutex2var_ps(tab_lo, lo, tab_hi));
    _mm512_storeu_ps(dst + 16, _mm512_permutex2var_ps(tab_lo, hi, tab_hi));
}

/* Block layout: d, qh[4], qs[16]. Output: (c - 16) * d. Its one scale is
 * converted and broadcast in registers: staging it (gq_legacy_blocks)
 * measured no faster here (%memset staged vs not: 57 vs 56 with aligned
 * output, 52 vs 53 with unaligned). */
void gq_avx512_dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / QK; b++, blk += 22, dst += QK) {
        uint16_t h;
        memcpy(&h, blk, sizeof h);
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(h));
        q5_lookup(dst, blk + 2, blk + 6, _mm512_mul_ps(codes_from(-16), d), _mm512_mul_ps(codes_from(0), d));
    }
}

/* Block layout: d, m, qh[4], qs[16]. Output: c * d + m. */
static inline void q5_1_block(const uint8_t *blk, float *dst, const float *dm)
{
    q5_lookup(dst, blk + 4, blk + 8, affine_table(codes_from(0), dm, blk + 2), affine_table(codes_from(16), dm, blk + 2));
}

void gq_avx512_dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    gq_legacy_blocks(src, dst, n / QK, 24, QK, q5_1_block);
}

/* ------------------------------------------------------------------------- */
/* Quantizers (without an importance matrix; with one,                       */
/* gq_avx512_quantize_<t>_imatrix)                                           */
/* ------------------------------------------------------------------------- */

/*
 * The AVX2 quantizers' scheme (legacy_avx2.c) at 512 bits: a block is two
 * vectors (weights 0..15 and 16..31, the two nibble halves), scales and
 * inverses are made for 16 blocks in one vector, and vpmovdb truncates
 * each int32 to its low byte: the scalar's (int8_t)/(uint8_t) casts of its
 * cvttss2si results. Same fallbacks to the scalar kernel as the AVX2 ones.
 */
#define QBATCH 16

static inline int qbatch_size(int64_t nb, int64_t b0)
{
    return nb - b0 < QBATCH ? (int)(nb - b0) : QBATCH;
}

static inline __m512 abs512(__m512 v)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)));
}

/* gq_fp32_to_fp16 of 16 lanes: vcvtps2ph rounds to nearest even like it;
 * NaN lanes (vcvtps2ph keeps payloads, ggml does not) are redone by it. */
static inline void fp16x16(__m512 v, uint16_t h[QBATCH])
{
    _mm256_storeu_si256((__m256i *)h, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (nan) {
        float f[QBATCH];
        _mm512_storeu_ps(f, v);
        for (int i = 0; i < QBATCH; i++)
            if (nan >> i & 1)
                h[i] = gq_fp32_to_fp16(f[i]);
    }
}

/* d ? 1 / d : 0 per lane (NaN counts as true, as in C). */
static inline __m512 inverse_or_zero512(__m512 d)
{
    const __mmask16 nz = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    return _mm512_maskz_div_ps(nz, _mm512_set1_ps(1.0f), d);
}

/* The low byte of each int32 lane of the conversions of a and b: 32 bytes. */
static inline __m256i low_bytes(__m512i a, __m512i b)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(a)), _mm512_cvtepi32_epi8(b), 1);
}

/* The scalar's signed absmax: NaN skipped (max(|x|, acc) returns acc for a
 * NaN), then the first x with |x| == amax, or +0 when amax is 0. */
static inline float signed_absmax512(const float *x, __m512 a, __m512 b)
{
    const __m512 acc = _mm512_max_ps(abs512(b), _mm512_max_ps(abs512(a), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(acc);
    if (amax == 0.0f)
        return 0.0f;
    const __m512 m = _mm512_set1_ps(amax);
    const uint32_t eq = (uint32_t)_mm512_cmp_ps_mask(abs512(a), m, _CMP_EQ_OQ)
                      | (uint32_t)_mm512_cmp_ps_mask(abs512(b), m, _CMP_EQ_OQ) << 16;
    return x[__builtin_ctz(eq)];
}

/* Q4_0 (half 8) / Q5_0 (half 16) scales of the n blocks at x. */
static inline void symmetric_scales512(const float *x, int n, float half, uint16_t h[QBATCH], float ids[QBATCH])
{
    float mx[QBATCH] = { 0 };
    for (int i = 0; i < n; i++) {
        const float *xb = x + QK * i;
        mx[i] = signed_absmax512(xb, _mm512_loadu_ps(xb), _mm512_loadu_ps(xb + 16));
    }
    const __m512 d = _mm512_div_ps(_mm512_loadu_ps(mx), _mm512_set1_ps(-half));
    fp16x16(d, h);
    _mm512_storeu_ps(ids, inverse_or_zero512(d));
}

/* min(top, (int8)(x * id + bias)) of one block as 32 bytes (signed byte min). */
static inline __m256i symmetric_codes512(const float *xb, float id, float bias, int top)
{
    const __m512 vid = _mm512_set1_ps(id), vbias = _mm512_set1_ps(bias);
    const __m512i a = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(xb), vid), vbias));
    const __m512i b = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(xb + 16), vid), vbias));
    return _mm256_min_epi8(low_bytes(a, b), _mm256_set1_epi8((char)top));
}

/* Q4_0 (levels 8, codes 0..15, nibbles) or Q5_0 (levels 16, codes 0..31,
 * bit 4 in qh) without imatrix; specialised per type by the compiler. */
static inline void quantize_symmetric512(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 16.0f : 8.0f;
    const size_t bytes = five_bit ? 22 : 18;
    for (int64_t b0 = 0; b0 < nb; b0 += QBATCH) {
        const int n = qbatch_size(nb, b0);
        uint16_t h[QBATCH];
        float ids[QBATCH];
        symmetric_scales512(src, n, levels, h, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            memcpy(y, &h[i], 2);
            const __m256i c = symmetric_codes512(src, ids[i], levels + 0.5f, five_bit ? 31 : 15);
            if (five_bit)
                gq_x86_store_5bit(c, y + 2, y + 6);
            else
                _mm_storeu_si128((__m128i *)(y + 2), gq_x86_nibble_pairs(c));
        }
    }
}

/* Q4_1 (levels 15) / Q5_1 (31) scales; bit i set for blocks whose min or
 * max is a zero (the scalar keeps the first zero it meets: its kernel's). */
static inline uint32_t affine_scales512(const float *x, int n, float levels, uint16_t hd[QBATCH],
                                        uint16_t hm[QBATCH], float mins[QBATCH], float ids[QBATCH])
{
    float mx[QBATCH] = { 0 };
    uint32_t scalar_blocks = 0;
    memset(mins, 0, sizeof(float) * QBATCH);
    for (int i = 0; i < n; i++) {
        const __m512 a = _mm512_loadu_ps(x + QK * i), b = _mm512_loadu_ps(x + QK * i + 16);
        /* min(v, acc) / max(v, acc) return acc for a NaN v: NaN is skipped */
        const __m512 mn = _mm512_min_ps(b, _mm512_min_ps(a, _mm512_set1_ps(3.402823466e+38f)));
        const __m512 mxv = _mm512_max_ps(b, _mm512_max_ps(a, _mm512_set1_ps(-3.402823466e+38f)));
        mins[i] = _mm512_reduce_min_ps(mn);
        mx[i] = _mm512_reduce_max_ps(mxv);
    }
    const __m512 vmin = _mm512_loadu_ps(mins), vmax = _mm512_loadu_ps(mx), zero = _mm512_setzero_ps();
    scalar_blocks = (uint32_t)(_mm512_cmp_ps_mask(vmin, zero, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(vmax, zero, _CMP_EQ_OQ));
    const __m512 d = _mm512_div_ps(_mm512_sub_ps(vmax, vmin), _mm512_set1_ps(levels));
    fp16x16(d, hd);
    fp16x16(vmin, hm);
    _mm512_storeu_ps(ids, inverse_or_zero512(d));
    return scalar_blocks & ((1u << n) - 1);
}

/* (uint8)((x - min) * id + 0.5) of one block as 32 bytes. */
static inline __m256i affine_levels512(const float *xb, float min, float id)
{
    const __m512 vmin = _mm512_set1_ps(min), vid = _mm512_set1_ps(id), half = _mm512_set1_ps(0.5f);
    const __m512i a = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xb), vmin), vid), half));
    const __m512i b = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xb + 16), vmin), vid), half));
    return low_bytes(a, b);
}

/* Q4_1 (levels 15, codes clamped to 15) or Q5_1 (levels 31, no clamp, as the
 * scalar) without imatrix; blocks the scalar's first-zero rule decides go
 * to the scalar kernel. */
static inline void quantize_affine512(const float *src, uint8_t *y, int64_t nb, bool five_bit)
{
    const float levels = five_bit ? 31.0f : 15.0f;
    const size_t bytes = five_bit ? 24 : 20;
    for (int64_t b0 = 0; b0 < nb; b0 += QBATCH) {
        const int n = qbatch_size(nb, b0);
        uint16_t hd[QBATCH], hm[QBATCH];
        float mins[QBATCH], ids[QBATCH];
        const uint32_t scalar_blocks = affine_scales512(src, n, levels, hd, hm, mins, ids);
        for (int i = 0; i < n; i++, src += QK, y += bytes) {
            if (scalar_blocks >> i & 1) {
                (five_bit ? gq_quantize_q5_1 : gq_quantize_q4_1)(src, y, 1, QK, NULL);
                continue;
            }
            memcpy(y, &hd[i], 2);
            memcpy(y + 2, &hm[i], 2);
            const __m256i c = affine_levels512(src, mins[i], ids[i]);
            if (five_bit)
                gq_x86_store_5bit(c, y + 4, y + 8);
            else   /* (int8) then MIN(15, .): a signed byte min */
                _mm_storeu_si128((__m128i *)(y + 4), gq_x86_nibble_pairs(_mm256_min_epi8(c, _mm256_set1_epi8(15))));
        }
    }
}

#define LEGACY_QUANTIZER(t, body, five_bit)                                                        \
    int gq_avx512_quantize_##t(const float *src, void *dst, int64_t nrows, int64_t n_per_row,      \
                            const float *imatrix)                                                  \
    {                                                                                              \
        if (imatrix)                                                                               \
            return gq_avx512_quantize_##t##_imatrix(src, dst, nrows, n_per_row, imatrix);          \
        body(src, dst, nrows * (n_per_row / QK), five_bit);                                        \
        return GGUFQ_OK;                                                                           \
    }
LEGACY_QUANTIZER(q4_0, quantize_symmetric512, false)
LEGACY_QUANTIZER(q5_0, quantize_symmetric512, true)
LEGACY_QUANTIZER(q4_1, quantize_affine512, false)
LEGACY_QUANTIZER(q5_1, quantize_affine512, true)
#undef LEGACY_QUANTIZER

/* roundf per lane, as legacy_avx2.c's round_half_away (checked on all 2^32
 * floats): trunc, then +-1 where |v - trunc(v)| >= 0.5. */
static inline __m512 round_half_away512(__m512 v)
{
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 step = _mm512_cmp_ps_mask(abs512(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
    return _mm512_mask_add_ps(t, step, t, one);
}

/* Q8_0 / Q8_1 as legacy_avx2.c: NaN blocks go to the scalar kernel; Q8_1's
 * s = F16(int sum of the int8 codes * d), for the batch in one vector. */
static void quantize_q8_blocks512(const float *src, uint8_t *y, int64_t nb, bool with_sum)
{
    const int bytes = with_sum ? 36 : 34, qs_at = with_sum ? 4 : 2;
    for (int64_t b0 = 0; b0 < nb; b0 += QBATCH) {
        const int n = qbatch_size(nb, b0);
        float amax[QBATCH] = { 0 }, ids[QBATCH];
        int32_t sums[QBATCH] = { 0 };
        uint16_t h[QBATCH], hs[QBATCH];
        uint32_t scalar_blocks = 0;
        for (int i = 0; i < n; i++) {
            const __m512 a = _mm512_loadu_ps(src + QK * i), b = _mm512_loadu_ps(src + QK * i + 16);
            amax[i] = _mm512_reduce_max_ps(_mm512_max_ps(abs512(a), abs512(b)));
            const __mmask16 nan = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
            scalar_blocks |= (uint32_t)(nan != 0) << i;
        }
        const __m512 d = _mm512_div_ps(_mm512_loadu_ps(amax), _mm512_set1_ps(127.0f));
        fp16x16(d, h);
        _mm512_storeu_ps(ids, inverse_or_zero512(d));
        uint8_t *yb = y;
        for (int i = 0; i < n; i++, src += QK, yb += bytes) {
            if (scalar_blocks >> i & 1) {
                if (with_sum)
                    gq_quantize_q8_1(src, yb, 1, QK, NULL);
                else
                    gq_quantize_q8_0(src, yb, 1, QK, NULL);
                continue;
            }
            memcpy(yb, &h[i], 2);
            const __m512 vid = _mm512_set1_ps(ids[i]);
            const __m512i a = _mm512_cvttps_epi32(round_half_away512(_mm512_mul_ps(_mm512_loadu_ps(src), vid)));
            const __m512i b = _mm512_cvttps_epi32(round_half_away512(_mm512_mul_ps(_mm512_loadu_ps(src + 16), vid)));
            const __m256i q = low_bytes(a, b);
            _mm256_storeu_si256((__m256i *)(yb + qs_at), q);
            if (with_sum) {
                /* signed bytes + 128 summed by vpsadbw, then - 32 * 128 */
                const __m256i s4 = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)),
                                                   _mm256_setzero_si256());
                const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
                sums[i] = (int32_t)_mm_cvtsi128_si32(_mm_add_epi64(s2, _mm_unpackhi_epi64(s2, s2))) - QK * 128;
            }
        }
        if (with_sum) {
            fp16x16(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(sums)), d), hs);
            for (int i = 0; i < n; i++)
                if (!(scalar_blocks >> i & 1))
                    memcpy(y + (size_t)bytes * i + 2, &hs[i], 2);
        }
        y = yb;
    }
}

int gq_avx512_quantize_q8_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix; /* as the scalar: Q8_0 has no imatrix path */
    quantize_q8_blocks512(src, dst, nrows * (n_per_row / QK), false);
    return GGUFQ_OK;
}

int gq_avx512_quantize_q8_1(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{
    (void)imatrix;
    quantize_q8_blocks512(src, dst, nrows * (n_per_row / QK), true);
    return GGUFQ_OK;
}
