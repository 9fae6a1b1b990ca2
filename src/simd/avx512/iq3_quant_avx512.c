/*
 * iq3_quant_avx512.c — AVX-512 searches of the IQ3 (IQ3_XXS, IQ3_S) quantizers.
 * SIMD twin of the searches of src/quants/iq3.c; iq_quant_avx512.c puts them
 * in its search table (iqsearch.h). How they vectorise, keeping every
 * candidate's arithmetic in the scalar's order:
 *  - IQ3 trials: pass 1 rounds 16 (trial, quad) pairs per vector, looks
 *    up list_span (on the grid, or where the neighbour list is) and
 *    queues the off-grid pairs with register compresses; pass 2 searches
 *    pair after pair, lanes = candidates (lists of 2 to 38 points, 16 at a
 *    time, masked), from the pair's term tables in two registers, the
 *    first 16 of every pair in one branch-free, software-pipelined loop,
 *    the rest of the longer lists after. (Walking the lists one pair per
 *    lane, refilling lanes as lists end, was slower: the refills and their
 *    branches cost more than the lanes idle here.)
 */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx512/iq_util_avx512.h"

/* ------------------------------------------------------------------------- */
/* 4-dimensional grids (IQ3)                                                 */
/* ------------------------------------------------------------------------- */

int gq_iq3_round4_avx512(const gq_iq3_search *t, const float *xval, const float *waux,
                         float id, float scale, int8_t *L)
{
    const __m128 x = _mm_loadu_ps(xval);
    const __m128 v = _mm_mul_ps(_mm_set1_ps(0.5f),
                                _mm_sub_ps(_mm_mul_ps(_mm_set1_ps(id), x), _mm_set1_ps(1.0f)));
    __m128i l = gq_x86_nearest_int4(v);
    l = _mm_max_epi32(_mm_setzero_si128(), _mm_min_epi32(_mm_set1_epi32(7), l));
    const uint32_t packed = (uint32_t)_mm_cvtsi128_si32(_mm_cvtepi32_epi8(l));
    memcpy(L, &packed, 4);
    __m128i k = _mm_sllv_epi32(l, _mm_setr_epi32(0, 3, 6, 9));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0x4E));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0xB1));
    const int key = _mm_cvtsi128_si32(k);
    if (t->grid_index[key] >= 0)
        return 1;

    /* term[8i + l] = waux[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    const __m512 x4 = _mm512_castps128_ps512(x);
    const __m512 w4 = _mm512_castps128_ps512(_mm_loadu_ps(waux));
    const __m512 s = _mm512_set1_ps(scale);
    const __m512 d01 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick01, x4));
    const __m512 d23 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick23, x4));
    const __m512 tab01 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick01, w4), d01), d01);
    const __m512 tab23 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick23, w4), d23), d23);

    const uint16_t *list = t->neighbours + t->list_start[key];
    const int n = list[0];
    const int *lanes = (const int *)t->lane_index;
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 16) {
        const __mmask16 valid = first_lanes(n - j);
        const __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, list + 1 + j));
        const __m512i li = _mm512_i32gather_epi32(idx, lanes, 4);
        __m512 d2 = _mm512_setzero_ps();
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, li, tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 8), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 16), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 24), tab23));
        const int lane = take_best_lane(d2, valid, &best_d2);
        if (lane >= 0)
            best = list[1 + j + lane];
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return 0;
}

/* Lanes 0 .. n-1 for any n (<= 0: none). */
static inline __mmask16 lanes_below(int n)
{
    return (__mmask16)_bzhi_u32(0xFFFF, (unsigned)(n < 0 ? 0 : n));
}

/*
 * The pairs (trial, quad) off the grid of a group, waiting for their
 * neighbour search, in pair order. The arrays have 16 entries of room past
 * the last: pass 1 stores 16 at a time, pass 2 reads one ahead.
 */
enum { IQ3_QUEUE_ROOM = 8 * GQ_IQ3_MAX_TRIALS + 16 };
typedef struct iq3_queue {
    int32_t  list[IQ3_QUEUE_ROOM];  /* where its list starts in list_chunks */
    int32_t  count[IQ3_QUEUE_ROOM]; /* how many candidates it has */
    int32_t  quad4[IQ3_QUEUE_ROOM]; /* 4 * quad: its magnitudes are xval[quad4 ..] */
    int32_t  out4[IQ3_QUEUE_ROOM];  /* 4 * (8 * trial + quad): its levels go to L[out4 ..] */
    float    scale[IQ3_QUEUE_ROOM];
    int32_t  tail[IQ3_QUEUE_ROOM];  /* positions of the pairs with more than 16 */
    float    best[IQ3_QUEUE_ROOM];  /* the least distance found (+inf: none) */
    uint32_t word[IQ3_QUEUE_ROOM];  /* and its candidate */
    int      n, ntail;
} iq3_queue;

/*
 * Pass 1 of gq_iq3_trials_avx512: 16 pairs p = 8 * trial + quad per vector.
 * Writes every pair's rounded levels and on-grid flag, and queues the pairs
 * off the grid (and those of them with more than 16 candidates in the
 * tail). The table lookups come first, so that their latencies overlap.
 */
static void iq3_round_pairs(const gq_iq3_search *t, const float *xval, int ntrials,
                            const float *ids, const float *scales, gq_iq3_trial_out *out,
                            iq3_queue *q)
{
    int8_t *L = out->L[0];
    uint8_t *on_grid = out->on_grid[0];
    const __m512 xlo = _mm512_loadu_ps(xval), xhi = _mm512_loadu_ps(xval + 16);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i seven = _mm512_set1_epi32(7);
    const __m512i quad4 = _mm512_slli_epi32(_mm512_and_si512(lane, seven), 2);
    const __m512i trial = _mm512_srli_epi32(lane, 3);
    const int npairs = 8 * ntrials;
    __m512i spans[(8 * GQ_IQ3_MAX_TRIALS + 15) / 16];
    __m512 pair_scales[(8 * GQ_IQ3_MAX_TRIALS + 15) / 16];
    for (int p0 = 0, v = 0; p0 < npairs; p0 += 16, ++v) {
        const __mmask16 valid = lanes_below(npairs - p0);
        const __mmask8 two = npairs - p0 > 8 ? 3 : 1;
        const __m512 id = _mm512_permutexvar_ps(
            trial, _mm512_castps128_ps512(_mm_maskz_loadu_ps(two, ids + p0 / 8)));
        pair_scales[v] = _mm512_permutexvar_ps(
            trial, _mm512_castps128_ps512(_mm_maskz_loadu_ps(two, scales + p0 / 8)));
        __m512i key = _mm512_setzero_si512(), word = _mm512_setzero_si512();
        for (int i = 0; i < 4; ++i) {
            const __m512 x = _mm512_permutex2var_ps(xlo, _mm512_add_epi32(quad4, _mm512_set1_epi32(i)), xhi);
            const __m512 r = _mm512_mul_ps(_mm512_set1_ps(0.5f),
                                           _mm512_sub_ps(_mm512_mul_ps(id, x), _mm512_set1_ps(1.0f)));
            const __m512i bits = _mm512_castps_si512(_mm512_add_ps(r, _mm512_set1_ps(12582912.0f)));
            __m512i l = _mm512_sub_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x007FFFFF)),
                                         _mm512_set1_epi32(0x00400000));
            l = _mm512_max_epi32(_mm512_setzero_si512(), _mm512_min_epi32(seven, l));
            key = _mm512_or_si512(key, _mm512_slli_epi32(l, 3 * i));
            word = _mm512_or_si512(word, _mm512_slli_epi32(l, 8 * i));
        }
        /* off-grid lanes are rewritten by pass 2 */
        _mm512_mask_storeu_epi32(L + 4 * p0, valid, word);
        spans[v] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, key,
                                               (const int *)t->list_span, 4);
    }
    int n = 0, ntail = 0;
    for (int p0 = 0, v = 0; p0 < npairs; p0 += 16, ++v) {
        const __mmask16 valid = lanes_below(npairs - p0);
        const __mmask16 on = _mm512_mask_cmpeq_epi32_mask(valid, spans[v], _mm512_setzero_si512());
        const __mmask16 off = valid & (__mmask16)~on;
        _mm512_mask_cvtepi32_storeu_epi8(on_grid + p0, valid,
                                         _mm512_maskz_mov_epi32(on, _mm512_set1_epi32(1)));
        /* a span is offset / 8 | count << 16; stores of 16, popcount count */
        const __m512i span = _mm512_maskz_compress_epi32(off, spans[v]);
        const __m512i count = _mm512_srli_epi32(span, 16);
        _mm512_storeu_si512(q->list + n, _mm512_slli_epi32(_mm512_and_si512(span, _mm512_set1_epi32(0xFFFF)), 3));
        _mm512_storeu_si512(q->count + n, count);
        _mm512_storeu_si512(q->quad4 + n, _mm512_maskz_compress_epi32(off, quad4));
        _mm512_storeu_si512(q->out4 + n, _mm512_maskz_compress_epi32(
                                             off, _mm512_slli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(p0)), 2)));
        _mm512_storeu_ps(q->scale + n, _mm512_maskz_compress_ps(off, pair_scales[v]));
        const __mmask16 longer = _mm512_cmpgt_epi32_mask(count, _mm512_set1_epi32(16));
        _mm512_storeu_si512(q->tail + ntail, _mm512_maskz_compress_epi32(
                                                 longer, _mm512_add_epi32(lane, _mm512_set1_epi32(n))));
        ntail += __builtin_popcount(longer);
        n += __builtin_popcount(off);
    }
    q->n = n;
    q->ntail = ntail;
    /* a harmless entry after the last, for pass 2's look-ahead */
    q->list[n] = q->count[n] = q->quad4[n] = 0;
    q->scale[n] = 0;
}

/* A pair's tables, [tab01, tab23] lane 8i + l = waux[i] * d * d,
 * d = scale * (2l + 1) - xval[i]: the scalar's operations. */
static inline void pair_tables(const float *x4, const float *w4, float scale, __m512 *tab01,
                               __m512 *tab23)
{
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    const __m512 x = _mm512_castps128_ps512(_mm_loadu_ps(x4));
    const __m512 w = _mm512_castps128_ps512(_mm_loadu_ps(w4));
    const __m512 sq = _mm512_mul_ps(_mm512_set1_ps(scale), q);
    const __m512 d01 = _mm512_sub_ps(sq, _mm512_permutexvar_ps(pick01, x));
    const __m512 d23 = _mm512_sub_ps(sq, _mm512_permutexvar_ps(pick23, x));
    *tab01 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick01, w), d01), d01);
    *tab23 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick23, w), d23), d23);
}

/*
 * Distances of the candidates list[0 .. left) (up to 16): term_0 + term_1
 * + ... in coordinate order (the scalar's leading 0 + only turns -0 into
 * +0, which compares the same), each term looked up by byte i = 8i + level
 * i of the word (vpermt2ps reads its low 5 bits). Lanes past the list or
 * not below FLT_MAX (the scalar never takes them) are +inf.
 */
static inline __m512 candidates_d2(__m512 tab01, __m512 tab23, const uint32_t *list, int left)
{
    const __mmask16 valid = lanes_below(left);
    const __m512i li = _mm512_maskz_loadu_epi32(valid, list);
    __m512 d2 = _mm512_permutex2var_ps(tab01, li, tab23);
    for (int i = 1; i < 4; ++i)
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 8 * i), tab23));
    const __mmask16 ok = _mm512_mask_cmp_ps_mask(valid, d2, _mm512_set1_ps(FLT_MAX), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(ok, _mm512_set1_ps(INFINITY), d2);
}

/* The first lane holding the minimum of d2 (none NaN): its word in
 * list[]; the minimum goes to *min. */
static inline uint32_t first_minimum(__m512 d2, const uint32_t *list, float *min)
{
    __m512 m = _mm512_min_ps(d2, _mm512_shuffle_f32x4(d2, d2, 0x4E));
    m = _mm512_min_ps(m, _mm512_shuffle_f32x4(m, m, 0xB1));
    m = _mm512_min_ps(m, _mm512_shuffle_ps(m, m, 0x4E));
    m = _mm512_min_ps(m, _mm512_shuffle_ps(m, m, 0xB1));
    const unsigned eq = _mm512_cmpeq_ps_mask(d2, m) | 0x10000u; /* never 0 for ctz */
    *min = _mm512_cvtss_f32(m);
    return list[__builtin_ctz(eq) & 15];
}

/*
 * Pass 2: each queued pair's neighbour search, one lane per candidate, 16
 * at a time. The scalar's strict `<` scan keeps the first candidate of
 * least distance below FLT_MAX: first_minimum of each 16, a later 16
 * winning only with a smaller minimum. Loop 1 takes every pair's first 16,
 * branch-free and software-pipelined (pair j + 1's distances are computed
 * while pair j's are reduced, so their dependency chains overlap); loop 2
 * the rest of the tail's lists. Returns -1 if a list had no candidate below
 * FLT_MAX, else 0.
 */
static int iq3_search_queue(const gq_iq3_search *t, const float *xval, const float *waux,
                            iq3_queue *q, int8_t *L)
{
    const uint32_t *chunks = t->list_chunks;
    __m512 d2 = _mm512_setzero_ps();
    for (int j = -1; j < q->n; ++j) {
        const int jn = j + 1;
        __m512 tab01, tab23;
        pair_tables(xval + q->quad4[jn], waux + q->quad4[jn], q->scale[jn], &tab01, &tab23);
        const __m512 next_d2 = candidates_d2(tab01, tab23, chunks + q->list[jn], q->count[jn]);
        if (j >= 0) {
            const uint32_t word = first_minimum(d2, chunks + q->list[j], &q->best[j]);
            const uint32_t levels = word & 0x07070707u;
            memcpy(L + q->out4[j], &levels, 4);
            q->word[j] = word;
        }
        d2 = next_d2;
    }
    for (int e = 0; e < q->ntail; ++e) {
        const int j = q->tail[e];
        __m512 tab01, tab23;
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], &tab01, &tab23);
        float best = q->best[j];
        uint32_t word = q->word[j];
        for (int c = 16; c < q->count[j]; c += 16) {
            float mc;
            const __m512 e2 = candidates_d2(tab01, tab23, chunks + q->list[j] + c,
                                            q->count[j] - c);
            const uint32_t w = first_minimum(e2, chunks + q->list[j] + c, &mc);
            word = mc < best ? w : word;
            best = mc < best ? mc : best;
        }
        q->best[j] = best;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    for (int j = 0; j < q->n; j += 16) {
        const __m512 b = _mm512_maskz_loadu_ps(lanes_below(q->n - j), q->best + j);
        if (_mm512_cmp_ps_mask(b, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ))
            return -1;
    }
    return 0;
}

/*
 * Each trial's sums over the group (as trial_sums, lane = trial), the two
 * blocks of 16 trials interleaved so their add chains overlap, q = 2L+1
 * looked up by level (vpermps reads the low 4 bits of a byte: 8 entries
 * twice over).
 */
static void iq3_sums(const float *xval, const float *weight, int ntrials, const int8_t *L,
                     float *sumqx, float *sumq2)
{
    const __m512 qtab = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i rows = _mm512_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320,
                                           352, 384, 416, 448, 480);
    const int nb = ntrials > 16 ? 2 : 1;
    __mmask16 valid[2] = { lanes_below(ntrials), lanes_below(ntrials - 16) };
    __m512 sx[2] = { _mm512_setzero_ps(), _mm512_setzero_ps() }, s2[2] = { sx[0], sx[0] };
    for (int i4 = 0; i4 < 32; i4 += 4) {
        __m512i four[2];
        for (int b = 0; b < nb; ++b)
            four[b] = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid[b], rows,
                                                  L + 512 * b + i4, 1);
        for (int k = 0; k < 4; ++k) {
            const int i = i4 + k;
            const __m512 w = _mm512_set1_ps(weight[i]);
            const __m512 wx = _mm512_set1_ps(weight[i] * xval[i]);
            for (int b = 0; b < nb; ++b) {
                const __m512 qv = _mm512_permutexvar_ps(k ? _mm512_srli_epi32(four[b], 8 * k) : four[b], qtab);
                sx[b] = _mm512_add_ps(sx[b], _mm512_mul_ps(wx, qv));
                s2[b] = _mm512_add_ps(s2[b], _mm512_mul_ps(_mm512_mul_ps(w, qv), qv));
            }
        }
    }
    for (int b = 0; b < nb; ++b) {
        _mm512_mask_storeu_ps(sumqx + 16 * b, valid[b], sx[b]);
        _mm512_mask_storeu_ps(sumq2 + 16 * b, valid[b], s2[b]);
    }
}

/*
 * Every trial of a group at once: pass 1 rounds all (trial, quad) pairs
 * and queues those off the grid, pass 2 searches their neighbours, then
 * each trial's sums.
 */
int gq_iq3_trials_avx512(const gq_iq3_search *t, const float *xval, const float *weight,
                         const float *waux, int ntrials, const float *ids,
                         const float *scales, gq_iq3_trial_out *out)
{
    iq3_queue q;
    iq3_round_pairs(t, xval, ntrials, ids, scales, out, &q);
    if (iq3_search_queue(t, xval, waux, &q, out->L[0]) < 0)
        return -1;
    iq3_sums(xval, weight, ntrials, out->L[0], out->sumqx, out->sumq2);
    return 0;
}
