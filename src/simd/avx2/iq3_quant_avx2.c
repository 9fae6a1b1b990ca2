/*
 * iq3_quant_avx2.c — AVX2 searches of the IQ3 (IQ3_XXS, IQ3_S) quantizers.
 * SIMD twin of the searches of src/quants/iq3.c; iq_quant_avx2.c puts them
 * in its search table (iqsearch.h). How they vectorise, keeping every
 * candidate's arithmetic in the scalar's order:
 *  - IQ3 trials (iq3_trials_avx2): pass 1 rounds a trial's 8 quads in one
 *    vector (lane = quad), looks up list_span (on the grid, or where the
 *    neighbour list is) and queues the off-grid pairs with compress
 *    indices built by pdep/pext. Pass 2 searches pair after pair, lanes =
 *    candidates, from per-pair term tables and the padded list copies of
 *    iq3grid.h (no masks): every pair's first 8 (16 for the 512-grid)
 *    candidates in one branch-free, software-pipelined loop, then the
 *    longer lists by length class. It uses distances as they come and
 *    redoes the group with +inf for NaN / >= FLT_MAX (the scalar never
 *    takes those) only if some distance was one. The refinement of iq3.c
 *    reuses it as a single trial.
 *  - Each trial's sums over its group: one lane per trial, weight by
 *    weight, the levels by transposing 8 trials' rows, q by vpermps.
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
#include "simd/avx2/iq_util_avx2.h"

/* ------------------------------------------------------------------------- */
/* 4-dimensional grids (IQ3)                                                 */
/* ------------------------------------------------------------------------- */

int gq_iq3_round4_avx2(const gq_iq3_search *t, const float *xval, const float *waux,
                       float id, float scale, int8_t *L)
{
    const __m128 x = _mm_loadu_ps(xval);
    const __m128 v = _mm_mul_ps(_mm_set1_ps(0.5f),
                                _mm_sub_ps(_mm_mul_ps(_mm_set1_ps(id), x), _mm_set1_ps(1.0f)));
    __m128i l = gq_x86_nearest_int4(v);
    l = _mm_max_epi32(_mm_setzero_si128(), _mm_min_epi32(_mm_set1_epi32(7), l));
    const uint32_t packed = (uint32_t)_mm_cvtsi128_si32(
        _mm_shuffle_epi8(l, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
    memcpy(L, &packed, 4);
    __m128i k = _mm_sllv_epi32(l, _mm_setr_epi32(0, 3, 6, 9));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0x4E));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0xB1));
    const int key = _mm_cvtsi128_si32(k);
    if (t->grid_index[key] >= 0)
        return 1;

    /* tab[i][l] = waux[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const __m256 q = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    const __m256 s = _mm256_set1_ps(scale);
    __m256 tab[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 d = _mm256_sub_ps(_mm256_mul_ps(s, q), _mm256_set1_ps(xval[i]));
        tab[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(waux[i]), d), d);
    }
    const uint16_t *list = t->neighbours + t->list_start[key];
    const uint32_t *words = t->neighbour_words + t->list_start[key] + 1;
    const int n = list[0];
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 8) {
        const __m256i validv = first_lanes(n - j);
        /* the words of the candidates (8 zeros follow the last list) */
        const __m256i li = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(words + j)), validv);
        /* byte i = 8i + l: vpermd uses its low 3 bits, l. The scalar starts
         * from 0 + term 0: the same but for -0, which compares as +0. */
        __m256 d2 = _mm256_permutevar8x32_ps(tab[0], li);
        for (int i = 1; i < 4; ++i)
            d2 = _mm256_add_ps(d2, _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(li, 8 * i)));
        const int lane = take_best_lane(d2, _mm256_movemask_ps(_mm256_castsi256_ps(validv)), &best_d2);
        if (lane >= 0)
            best = list[1 + j + lane];
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return 0;
}

/* Byte k = k: lane numbers, for vpermd index vectors built with pdep/pext. */
#define IQ3_LANE_BYTES 0x0706050403020100ull
#define IQ3_BYTE_ONES  0x0101010101010101ull

/* Lane indices of the set bits of m (8 bits) in order, packed first: the
 * vpermd index that compresses those lanes to the front (lanes past them 0). */
static inline __m256i compress_index(unsigned m)
{
    const uint64_t bytes = _pdep_u64(m, IQ3_BYTE_ONES) * 0xFF;
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)_pext_u64(IQ3_LANE_BYTES, bytes)));
}

/*
 * The pairs (trial, quad) off the grid of a group, waiting for their
 * neighbour search, in (trial, quad) order. The arrays have 8 entries of
 * room past the last: pass 1 stores 8 at a time, pass 2 reads one ahead.
 */
enum { IQ3_QUEUE_ROOM = 8 * GQ_IQ3_MAX_TRIALS + 8 };
typedef struct iq3_queue {
    int32_t  list[IQ3_QUEUE_ROOM];  /* where its list starts in list_chunks */
    int32_t  span[IQ3_QUEUE_ROOM];  /* list_span of its lattice point (count << 16) */
    int32_t  quad4[IQ3_QUEUE_ROOM]; /* 4 * quad: its magnitudes are xval[quad4 ..] */
    int32_t  out4[IQ3_QUEUE_ROOM];  /* 4 * (8 * trial + quad): its levels go to L[out4 ..] */
    float    scale[IQ3_QUEUE_ROOM];
    /* the positions of the pairs with lists of 8 * head + 1 .. 8 * head + 8
     * candidates (tail[0]), and of longer lists (tail[1]) */
    int32_t  tail[2][IQ3_QUEUE_ROOM];
    float    head_min[IQ3_QUEUE_ROOM];   /* pass 2 loop 1's results */
    uint32_t head_word[IQ3_QUEUE_ROOM];
    int      count, ntail[2];
} iq3_queue;

/*
 * Pass 1 of gq_iq3_trials_avx2: one vector per trial, lane k = quad k (xt[i]
 * lane k = xval[4k + i]). Writes every pair's rounded levels and on-grid
 * flag, queues the pairs off the grid, and lists the queued pairs with more
 * than 8 * head candidates in the tails. The table lookups of all trials
 * come first, so that their latencies overlap.
 */
static void iq3_round_trials(const gq_iq3_search *t, const __m256 *xt, int ntrials,
                             const float *ids, const float *scales, int head,
                             gq_iq3_trial_out *out, iq3_queue *q)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256i seven = _mm256_set1_epi32(7), zero = _mm256_setzero_si256();
    const int *span_table = (const int *)t->list_span;
    __m256i spans[GQ_IQ3_MAX_TRIALS];
    for (int tr = 0; tr < ntrials; ++tr) {
        const __m256 id = _mm256_set1_ps(ids[tr]);
        __m256i key = zero, word = zero;
        for (int i = 0; i < 4; ++i) {
            const __m256 v = _mm256_mul_ps(half, _mm256_sub_ps(_mm256_mul_ps(id, xt[i]), one));
            const __m256i l = _mm256_max_epi32(zero, _mm256_min_epi32(seven, gq_x86_nearest_int8(v)));
            key = _mm256_or_si256(key, _mm256_slli_epi32(l, 3 * i));
            word = _mm256_or_si256(word, _mm256_slli_epi32(l, 8 * i));
        }
        /* off-grid lanes are rewritten by pass 2 */
        _mm256_storeu_si256((__m256i *)out->L[tr], word);
        spans[tr] = _mm256_i32gather_epi32(span_table, key, 4);
    }
    /* a span is offset / 8 | count << 16 */
    const __m256i head_span = _mm256_set1_epi32(8 * head << 16 | 0xFFFF);
    const __m256i next_span = _mm256_set1_epi32((8 * head + 8) << 16 | 0xFFFF);
    int queued = 0, ntail0 = 0, ntail1 = 0;
    for (int tr = 0; tr < ntrials; ++tr) {
        const unsigned on = (unsigned)_mm256_movemask_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(spans[tr], zero)));
        const uint64_t flags = _pdep_u64(on, IQ3_BYTE_ONES);
        memcpy(out->on_grid[tr], &flags, 8);
        /* stores of 8 entries, of which the first popcount count */
        const unsigned off = ~on & 0xFF;
        const __m256i c = compress_index(off), quad4 = _mm256_slli_epi32(c, 2);
        const __m256i sp = _mm256_permutevar8x32_epi32(spans[tr], c);
        _mm256_storeu_si256((__m256i *)(q->list + queued),
                            _mm256_slli_epi32(_mm256_and_si256(sp, _mm256_set1_epi32(0xFFFF)), 3));
        _mm256_storeu_si256((__m256i *)(q->span + queued), sp);
        _mm256_storeu_si256((__m256i *)(q->quad4 + queued), quad4);
        _mm256_storeu_si256((__m256i *)(q->out4 + queued), _mm256_add_epi32(quad4, _mm256_set1_epi32(32 * tr)));
        _mm256_storeu_ps(q->scale + queued, _mm256_set1_ps(scales[tr]));
        const int n = __builtin_popcount(off);
        const unsigned longer = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
                                    _mm256_cmpgt_epi32(sp, head_span))) & ((1u << n) - 1);
        const unsigned longest = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
                                     _mm256_cmpgt_epi32(sp, next_span))) & longer;
        const __m256i at = _mm256_set1_epi32(queued);
        _mm256_storeu_si256((__m256i *)(q->tail[0] + ntail0),
                            _mm256_add_epi32(compress_index(longer & ~longest), at));
        _mm256_storeu_si256((__m256i *)(q->tail[1] + ntail1),
                            _mm256_add_epi32(compress_index(longest), at));
        ntail0 += __builtin_popcount(longer & ~longest);
        ntail1 += __builtin_popcount(longest);
        queued += n;
    }
    q->count = queued;
    q->ntail[0] = ntail0;
    q->ntail[1] = ntail1;
    /* a harmless entry after the last, for pass 2's look-ahead */
    q->list[queued] = q->quad4[queued] = 0;
    q->scale[queued] = 0;
}

/* A pair's tables: tab[i] lane l = waux[i] * d * d, d = scale * (2l + 1) - xval[i]. */
static inline void pair_tables(const float *x4, const float *w4, float scale, __m256 *tab)
{
    const __m256 sq = _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15));
    for (int i = 0; i < 4; ++i) {
        const __m256 d = _mm256_sub_ps(sq, _mm256_set1_ps(x4[i]));
        tab[i] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w4[i]), d), d);
    }
}

/*
 * Distances of the candidates of chunks first .. first + n - 1 of a list
 * (8 words each): term_0 + term_1 + ... in coordinate order (the scalar's
 * leading 0 + only turns -0 into +0, which compares the same), each term
 * looked up by byte i = 8i + level i of the word (vpermps reads its low 3
 * bits). With `exact`, lanes not below FLT_MAX (the scalar never takes
 * them) become +inf; without, *bad collects the largest bit pattern seen
 * (as unsigned, NaN, -0 and the values >= FLT_MAX are the patterns at or
 * above FLT_MAX's).
 */
static inline __attribute__((always_inline)) void
chunks_d2(const __m256 *tab, const uint32_t *list, int first, int n, bool exact, __m256i *bad,
          __m256 *d2)
{
    for (int c = 0; c < n; ++c) {
        const __m256i li = _mm256_loadu_si256((const __m256i *)(list + 8 * (first + c)));
        __m256 v = _mm256_permutevar8x32_ps(tab[0], li);
        for (int i = 1; i < 4; ++i)
            v = _mm256_add_ps(v, _mm256_permutevar8x32_ps(tab[i], _mm256_srli_epi32(li, 8 * i)));
        if (exact)
            v = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), v,
                                 _mm256_cmp_ps(v, _mm256_set1_ps(FLT_MAX), _CMP_LT_OQ));
        else
            *bad = _mm256_max_epu32(*bad, _mm256_castps_si256(v));
        d2[c] = v;
    }
}

/* The minimum of v in every lane. */
static inline __m256 all_min(__m256 v)
{
    v = _mm256_min_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_min_ps(v, _mm256_shuffle_ps(v, v, 0x4E));
    return _mm256_min_ps(v, _mm256_shuffle_ps(v, v, 0xB1));
}

/*
 * The scalar's strict `<` scan over n chunks of distances d2[] (none NaN)
 * of the candidates list[0 .. 8n): the first candidate holding their
 * minimum. Returns its word; the minimum goes to *min.
 */
static inline __attribute__((always_inline)) uint32_t
first_minimum(const __m256 *d2, int n, const uint32_t *list, float *min)
{
    __m256 v = d2[0];
    for (int c = 1; c < n; ++c)
        v = _mm256_min_ps(v, d2[c]);
    const __m256 m = all_min(v);
    uint64_t eq = 1ull << 8 * n; /* never 0 for ctz */
    for (int c = 0; c < n; ++c)
        eq |= (uint64_t)_mm256_movemask_ps(_mm256_cmp_ps(d2[c], m, _CMP_EQ_OQ)) << 8 * c;
    *min = _mm256_cvtss_f32(m);
    const int at = __builtin_ctzll(eq); /* 8n only if some lane was NaN */
    return list[at < 8 * n ? at : 0];
}

/*
 * Pass 2 of gq_iq3_trials_avx2: each queued pair's neighbour search, one lane
 * per candidate, 8 at a time from list_chunks (padded lists: no masks). The
 * scalar's strict `<` scan keeps the first candidate of least distance below
 * FLT_MAX: first_minimum of the chunks, a later group of chunks winning only
 * with a smaller minimum. Loop 1 looks at every pair's first `head` chunks
 * (1 or 2), branch-free; loop 2 at the rest of the tail's lists: chunks
 * head .. 3 (lists longer than 8 have 32 words), then, rarely, more.
 *
 * Without `exact`, distances are used as they come and the search returns
 * 1 if any was NaN or not below FLT_MAX (the caller then searches again
 * with `exact`, where those are +inf). Returns -1 if a list had no
 * candidate below FLT_MAX (only with `exact`), else 0.
 */
static inline __attribute__((always_inline)) int
iq3_search_queue(const gq_iq3_search *t, const float *xval, const float *waux, iq3_queue *q,
                 int head, bool exact, int8_t *L)
{
    enum { LONG_CHUNKS = GQ_IQ3_LONG_LIST_WORDS / 8 };
    const uint32_t *chunks = t->list_chunks;
    __m256i bad = _mm256_setzero_si256();
    /* software-pipelined: pair j + 1's distances are computed while pair
     * j's are reduced, so the long dependency chains of the two overlap */
    __m256 d2[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int j = -1; j < q->count; ++j) {
        const int jn = j + 1;
        __m256 tab[4], next_d2[2];
        pair_tables(xval + q->quad4[jn], waux + q->quad4[jn], q->scale[jn], tab);
        chunks_d2(tab, chunks + q->list[jn], 0, head, exact, &bad, next_d2);
        if (j >= 0) {
            const uint32_t word = first_minimum(d2, head, chunks + q->list[j], &q->head_min[j]);
            const uint32_t levels = word & 0x07070707u;
            memcpy(L + q->out4[j], &levels, 4);
            q->head_word[j] = word;
        }
        for (int c = 0; c < head; ++c)
            d2[c] = next_d2[c];
    }
    /* one more chunk */
    for (int e = 0; e < q->ntail[0]; ++e) {
        const int j = q->tail[0][e];
        const uint32_t *list = chunks + q->list[j];
        __m256 tab[4], rest[1];
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], tab);
        chunks_d2(tab, list, head, 1, exact, &bad, rest);
        float mn = q->head_min[j], mc;
        const uint32_t w = first_minimum(rest, 1, list + 8 * head, &mc);
        const uint32_t word = mc < mn ? w : q->head_word[j];
        q->head_min[j] = mc < mn ? mc : mn;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    /* chunks head .. 3, then, rarely, more */
    for (int e = 0; e < q->ntail[1]; ++e) {
        const int j = q->tail[1][e], count = q->span[j] >> 16;
        const uint32_t *list = chunks + q->list[j];
        __m256 tab[4], rest[LONG_CHUNKS];
        pair_tables(xval + q->quad4[j], waux + q->quad4[j], q->scale[j], tab);
        chunks_d2(tab, list, head, LONG_CHUNKS - head, exact, &bad, rest);
        float mn = q->head_min[j], mc;
        uint32_t word = q->head_word[j];
        uint32_t w = first_minimum(rest, LONG_CHUNKS - head, list + 8 * head, &mc);
        word = mc < mn ? w : word;
        mn = mc < mn ? mc : mn;
        for (int c = LONG_CHUNKS; 8 * c < count; ++c) {
            chunks_d2(tab, list, c, 1, exact, &bad, rest);
            w = first_minimum(rest, 1, list + 8 * c, &mc);
            word = mc < mn ? w : word;
            mn = mc < mn ? mc : mn;
        }
        q->head_min[j] = mn;
        const uint32_t levels = word & 0x07070707u;
        memcpy(L + q->out4[j], &levels, 4);
    }
    if (exact) {
        for (int j = 0; j < q->count; ++j)
            if (!(q->head_min[j] < INFINITY))
                return -1;
        return 0;
    }
    /* any lane at or above FLT_MAX's bits 0x7F7FFFFF, as unsigned? */
    const __m256i limit = _mm256_set1_epi32(0x7F7FFFFE);
    const __m256i below = _mm256_cmpeq_epi32(_mm256_max_epu32(bad, limit), limit);
    return _mm256_movemask_ps(_mm256_castsi256_ps(below)) != 0xFF;
}

/* Transposes 8 rows of 8 ints: r[j] lane i becomes r[i] lane j. */
static inline void transpose8(__m256i *r)
{
    __m256i a[8], b[8];
    for (int j = 0; j < 8; j += 2) {
        a[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]);
        a[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
    }
    for (int j = 0; j < 8; j += 4) {
        b[j] = _mm256_unpacklo_epi64(a[j], a[j + 2]);
        b[j + 1] = _mm256_unpackhi_epi64(a[j], a[j + 2]);
        b[j + 2] = _mm256_unpacklo_epi64(a[j + 1], a[j + 3]);
        b[j + 3] = _mm256_unpackhi_epi64(a[j + 1], a[j + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        r[j] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x20);
        r[j + 4] = _mm256_permute2x128_si256(b[j], b[j + 4], 0x31);
    }
}

/*
 * Each trial's sums over the group (see trial_sums; lane = trial), the
 * blocks of 8 trials interleaved so their add chains overlap. A block's
 * levels come as the transpose of its rows' 4-level words; q = 2L+1 is
 * looked up by level with vpermps, which reads the low 3 bits of a byte.
 */
static inline __attribute__((always_inline)) void
iq3_sums_blocks(const float *xval, const float *weight, int ntrials, const int8_t *L, int nb,
                float *sumqx, float *sumq2)
{
    const __m256 qtab = _mm256_setr_ps(1, 3, 5, 7, 9, 11, 13, 15);
    __m256 sx[4], s2[4];
    for (int b = 0; b < nb; ++b)
        sx[b] = s2[b] = _mm256_setzero_ps();
    for (int half = 0; half < 2; ++half) {
        /* words 4 * half .. 4 * half + 3 of each row: levels 16 * half .. + 15 */
        __m256i four[4][8];
        for (int b = 0; b < nb; ++b) {
            for (int r = 0; r < 8; ++r) {
                const int row = 8 * b + r < ntrials ? 8 * b + r : 0; /* rows past: unused */
                four[b][r] = _mm256_castsi128_si256(
                    _mm_loadu_si128((const __m128i *)(L + 32 * row + 16 * half)));
            }
            transpose8(four[b]);
        }
        for (int i4 = 0; i4 < 4; ++i4) {
            for (int j = 0; j < 4; ++j) {
                const int i = 16 * half + 4 * i4 + j;
                const __m256 w = _mm256_set1_ps(weight[i]);
                const __m256 wx = _mm256_set1_ps(weight[i] * xval[i]);
                for (int b = 0; b < nb; ++b) {
                    const __m256i l = j ? _mm256_srli_epi32(four[b][i4], 8 * j) : four[b][i4];
                    const __m256 q = _mm256_permutevar8x32_ps(qtab, l);
                    sx[b] = _mm256_add_ps(sx[b], _mm256_mul_ps(wx, q));
                    s2[b] = _mm256_add_ps(s2[b], _mm256_mul_ps(_mm256_mul_ps(w, q), q));
                }
            }
        }
    }
    for (int b = 0; b < nb; ++b) {
        const __m256i valid = first_lanes(ntrials - 8 * b);
        _mm256_maskstore_ps(sumqx + 8 * b, valid, sx[b]);
        _mm256_maskstore_ps(sumq2 + 8 * b, valid, s2[b]);
    }
}

static void iq3_sums(const float *xval, const float *weight, int ntrials, const int8_t *L,
                     float *sumqx, float *sumq2)
{
    switch ((ntrials + 7) / 8) {
    case 4: iq3_sums_blocks(xval, weight, ntrials, L, 4, sumqx, sumq2); break;
    case 3: iq3_sums_blocks(xval, weight, ntrials, L, 3, sumqx, sumq2); break;
    case 2: iq3_sums_blocks(xval, weight, ntrials, L, 2, sumqx, sumq2); break;
    default: iq3_sums_blocks(xval, weight, ntrials, L, 1, sumqx, sumq2); break;
    }
}

/* The 256-grid's lists are mostly short (2/3 of the pairs have at most 8
 * candidates), the 512-grid's longer: loop 1 takes 1 or 2 chunks. */
static int iq3_search_256(const gq_iq3_search *t, const float *xval, const float *waux,
                          iq3_queue *q, bool exact, int8_t *L)
{
    return exact ? iq3_search_queue(t, xval, waux, q, 1, true, L)
                 : iq3_search_queue(t, xval, waux, q, 1, false, L);
}

static int iq3_search_512(const gq_iq3_search *t, const float *xval, const float *waux,
                          iq3_queue *q, bool exact, int8_t *L)
{
    return exact ? iq3_search_queue(t, xval, waux, q, 2, true, L)
                 : iq3_search_queue(t, xval, waux, q, 2, false, L);
}

int gq_iq3_trials_avx2(const gq_iq3_search *t, const float *xval, const float *weight,
                       const float *waux, int ntrials, const float *ids, const float *scales,
                       gq_iq3_trial_out *out)
{
    const __m256i quad = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    __m256 xt[4];
    for (int i = 0; i < 4; ++i)
        xt[i] = _mm256_i32gather_ps(xval, _mm256_add_epi32(quad, _mm256_set1_epi32(i)), 4);
    const bool wide = t->grid_size == 512;
    iq3_queue q;
    iq3_round_trials(t, xt, ntrials, ids, scales, wide ? 2 : 1, out, &q);
    int rc = wide ? iq3_search_512(t, xval, waux, &q, false, out->L[0])
                  : iq3_search_256(t, xval, waux, &q, false, out->L[0]);
    if (rc > 0)
        rc = wide ? iq3_search_512(t, xval, waux, &q, true, out->L[0])
                  : iq3_search_256(t, xval, waux, &q, true, out->L[0]);
    if (rc < 0)
        return -1;
    iq3_sums(xval, weight, ntrials, out->L[0], out->sumqx, out->sumq2);
    return 0;
}
