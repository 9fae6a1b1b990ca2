/*
 * test_iqsearch_iq1_split_x86.c — the x86 IQ1 split searches (iqsearch.h hooks
 * iq1s_split and iq1m_split of src/simd/avx2 and avx512) against the scalar
 * ones, result for result, on prefix sums that reach their corners: the
 * SIMD searches guess the scalar's winners as the records of the scores and
 * check the guess exactly, redoing the search sequentially when the check
 * fails, so this feeds exact score ties (zero and repeated weights, which
 * make neighbouring prefix sums equal), near ties, negative weights (sumq2 <=
 * 0), Inf/NaN sums (scores that are NaN or Inf), all-zero sums and huge
 * values, continuous values whose sums are ordinary, tiny or huge (range
 * fallbacks) and near-equal weights. Also the nearest8 search (whose
 * candidates' lane words are loaded from the neighbour lists) on all-zero,
 * tied and NaN/Inf inputs.
 *
 * The split searches' fast path (approximate scores, then the exact settling
 * of the near-best candidates, iq1.c) gets its own cases: realistic sums of
 * sorted weights (where it decides), the same with exact ties between the
 * best candidates (zero weights, repeated values: its sequential replay of
 * the scalar's test), many near-best candidates (more than it keeps), sums
 * outside its conditions (a negative weight, sums that start off zero, a
 * total weight below 2^-30, sums at 2^36, scores too small) and near ties
 * down to the last bit (a weight bisected between two values where the
 * winner changes), which it must settle right or leave to the exact search.
 * The IQ1 sort gets distinct values, ties, all-equal values, +-0, infinities
 * and NaN, for n = 16 and 32.
 * The whole quantizers' corners are in test_quant_iq_corners.c.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "simd/simd.h"
#include "quants/tables.h"

#if defined(__x86_64__) || defined(_M_X64)

enum { N_ROUNDS = 3900, N_KINDS = 13 };

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static float unit(void) { return (float)(next_u64() >> 40) / (float)(1 << 24); }

/* One weight or one w*x term of a case: the kinds mix ties, zeros and specials. */
static void fill_terms(int kind, int n, float *w, float *wx)
{
    for (int i = 0; i < n; ++i) {
        const float x = (float)((int)(next_u64() % 7) - 3) * 0.5f;
        float wi = unit() * 3;
        switch (kind) {
        case 0: break;
        case 1: wi = next_u64() % 3 == 0 ? 0.0f : wi; break;    /* zero weights: ties */
        case 2: wi = 1.0f; break;                                /* equal weights */
        case 3: wi = next_u64() % 5 == 0 ? -wi : wi; break;     /* negative weights */
        case 4: wi = next_u64() % 40 == 0 ? INFINITY : wi; break;
        case 5: wi = next_u64() % 40 == 0 ? NAN : wi; break;
        case 6: wi = wi * 1e37f; break;                          /* sums overflow */
        case 7: wi = 0.0f; break;                                /* all zero */
        case 8: wi = wi * 1e-40f; break;                         /* subnormal */
        case 9: break;                                           /* continuous x */
        case 10: wi = wi * 1e-14f; break;                        /* tiny sums */
        case 11: wi = wi * 1e14f; break;                         /* huge sums */
        default: wi = 1.0f + unit() * 0x1p-16f; break;           /* near ties */
        }
        w[i] = wi;
        const float xc = (unit() - 0.5f) * 4;                   /* continuous */
        wx[i] = kind == 8    ? wi
                : kind == 2  ? wi * (float)(i % 3)
                : kind >= 9 && kind <= 11 ? wi * xc
                             : wi * x;
    }
}

static int check_iq1s(const char *name, const gq_iq_search_ops *ops, int kind)
{
    float w[32], wx[32], sumx[33], sumw[33];
    fill_terms(kind, 32, w, wx);
    sumx[0] = sumw[0] = 0;
    for (int j = 0; j < 32; ++j) {
        sumx[j + 1] = sumx[j] + wx[j];
        sumw[j + 1] = sumw[j] + w[j];
    }
    int a1, a2, as, b1, b2, bs;
    float sa = 0.5f, sb = 0.5f;
    const bool ra = gq_iq1s_split_scalar(sumx, sumw, &a1, &a2, &as, &sa);
    const bool rb = ops->iq1s_split(sumx, sumw, &b1, &b2, &bs, &sb);
    if (ra != rb || a1 != b1 || a2 != b2 || as != bs || memcmp(&sa, &sb, sizeof sa) != 0) {
        fprintf(stderr, "%s iq1s_split kind %d: scalar %d (%d,%d,%d,%a), simd %d (%d,%d,%d,%a)\n",
                name, kind, ra, a1, a2, as, sa, rb, b1, b2, bs, sb);
        return 1;
    }
    return 0;
}

static int check_iq1m(const char *name, const gq_iq_search_ops *ops, int kind)
{
    float w[16], wx[16];
    gq_iq1m_sums s;
    fill_terms(kind, 16, w, wx);
    for (int h = 0; h < 2; ++h)
        s.sx[h][0] = s.sw[h][0] = 0;
    for (int j = 0; j < 16; ++j) {
        const int h = (int)(next_u64() & 1), o = 1 - h;
        s.sx[h][j + 1] = s.sx[h][j] + wx[j];
        s.sw[h][j + 1] = s.sw[h][j] + w[j];
        s.sx[o][j + 1] = s.sx[o][j];
        s.sw[o][j + 1] = s.sw[o][j];
    }
    int a1, a2, ak, b1, b2, bk;
    float sa = 0.25f, sb = 0.25f;
    const bool ra = gq_iq1m_split_scalar(&s, &a1, &a2, &ak, &sa);
    const bool rb = ops->iq1m_split(&s, &b1, &b2, &bk, &sb);
    if (ra != rb || a1 != b1 || a2 != b2 || ak != bk || memcmp(&sa, &sb, sizeof sa) != 0) {
        fprintf(stderr, "%s iq1m_split kind %d: scalar %d (%d,%d,%d,%a), simd %d (%d,%d,%d,%a)\n",
                name, kind, ra, a1, a2, ak, sa, rb, b1, b2, bk, sb);
        return 1;
    }
    return 0;
}

/*
 * Realistic IQ1 sums for the fast path: values sorted ascending (as the
 * quantizers sort them) with positive weights; `kind` adds its corners.
 * n = 32 (IQ1_S prefix sums in sumx/sumw) or 16 (IQ1_M, halves by the
 * values' original positions).
 */
enum { N_FAST_KINDS = 12 };

static void fast_terms(int kind, int n, float *w, float *wx, int *half)
{
    float x[32];
    int pos[32];
    const float scale = kind == 7 ? 1e-12f : kind == 8 ? 3e9f : 1.0f;
    for (int i = 0; i < n; ++i) {
        float v = (unit() + unit() + unit() - 1.5f) * 2;
        if (kind == 2)
            v = (float)((int)(next_u64() % 5) - 2) * 0.5f; /* repeated values: exact ties */
        if (kind == 10)
            v = 1.0f + unit() * 0x1p-20f;                  /* all nearly equal */
        if (kind == 11)
            v = 0.25f;                                     /* all equal */
        x[i] = v * scale;
        pos[i] = i;
    }
    for (int i = 1; i < n; ++i) /* insertion sort, keeping the original positions */
        for (int j = i; j > 0 && x[j] < x[j - 1]; --j) {
            const float t = x[j];
            const int p = pos[j];
            x[j] = x[j - 1];
            pos[j] = pos[j - 1];
            x[j - 1] = t;
            pos[j - 1] = p;
        }
    for (int j = 0; j < n; ++j) {
        float wi = (0.1f + unit()) * (kind == 6 ? x[j] * x[j] : 1.0f);
        if (kind == 1 && next_u64() % 4 == 0)
            wi = 0;                                        /* zero weights: exact ties */
        if (kind == 3 && j == (int)(next_u64() % (unsigned)n))
            wi = -1e-30f;                                  /* one negative weight */
        if (kind == 9)
            wi *= 1e-12f;                                  /* total weight < 2^-30 */
        w[j] = wi;
        wx[j] = wi * x[j];
        half[j] = pos[j] >= n / 2;
    }
}

static int check_fast(const char *name, const gq_iq_search_ops *ops, int kind)
{
    float w[32], wx[32], sumx[33], sumw[33];
    int half[32];
    fast_terms(kind, 32, w, wx, half);
    sumx[0] = sumw[0] = kind == 4 ? 0x1p-30f : 0; /* kind 4: sums that start off zero */
    for (int j = 0; j < 32; ++j) {
        sumx[j + 1] = sumx[j] + wx[j];
        sumw[j + 1] = sumw[j] + w[j];
    }
    if (kind == 5)
        sumx[17] = 0x1p36f; /* at the 2^36 limit */
    int a1, a2, as, b1, b2, bs;
    float sa = 0.5f, sb = 0.5f;
    int bad = 0;
    bool ra = gq_iq1s_split_scalar(sumx, sumw, &a1, &a2, &as, &sa);
    bool rb = ops->iq1s_split(sumx, sumw, &b1, &b2, &bs, &sb);
    if (ra != rb || a1 != b1 || a2 != b2 || as != bs || memcmp(&sa, &sb, sizeof sa) != 0) {
        fprintf(stderr, "%s iq1s fast kind %d: scalar %d (%d,%d,%d,%a), simd %d (%d,%d,%d,%a)\n",
                name, kind, ra, a1, a2, as, sa, rb, b1, b2, bs, sb);
        bad++;
    }

    gq_iq1m_sums s;
    fast_terms(kind, 16, w, wx, half);
    for (int h = 0; h < 2; ++h)
        s.sx[h][0] = s.sw[h][0] = 0;
    for (int j = 0; j < 16; ++j) {
        const int h = half[j], o = 1 - h;
        s.sx[h][j + 1] = s.sx[h][j] + wx[j];
        s.sw[h][j + 1] = s.sw[h][j] + w[j];
        s.sx[o][j + 1] = s.sx[o][j];
        s.sw[o][j + 1] = s.sw[o][j];
    }
    if (kind == 5)
        s.sx[1][9] = 0x1p36f;
    sa = sb = 0.5f;
    ra = gq_iq1m_split_scalar(&s, &a1, &a2, &as, &sa);
    rb = ops->iq1m_split(&s, &b1, &b2, &bs, &sb);
    if (ra != rb || a1 != b1 || a2 != b2 || as != bs || memcmp(&sa, &sb, sizeof sa) != 0) {
        fprintf(stderr, "%s iq1m fast kind %d: scalar %d (%d,%d,%d,%a), simd %d (%d,%d,%d,%a)\n",
                name, kind, ra, a1, a2, as, sa, rb, b1, b2, bs, sb);
        bad++;
    }
    return bad;
}

/*
 * Near ties the fast path must settle right or leave to the exact search:
 * realistic terms with one weight scaled by lambda, lambda bisected between
 * two values where the scalar's winners differ, so that the two best
 * candidates' scores close in on each other down to the last bit; the SIMD
 * search must agree at every step.
 */
typedef struct split_result {
    bool ok;
    int  i1, i2, v;
    float scale;
} split_result;

static split_result run_split(const gq_iq_search_ops *ops, bool m, const float *w, const float *wx,
                              const int *half, int j, float lambda)
{
    split_result r = { false, 0, 0, 0, 0.5f };
    if (!m) {
        float sumx[33], sumw[33];
        sumx[0] = sumw[0] = 0;
        for (int i = 0; i < 32; ++i) {
            sumx[i + 1] = sumx[i] + (i == j ? wx[i] * lambda : wx[i]);
            sumw[i + 1] = sumw[i] + (i == j ? w[i] * lambda : w[i]);
        }
        r.ok = ops ? ops->iq1s_split(sumx, sumw, &r.i1, &r.i2, &r.v, &r.scale)
                   : gq_iq1s_split_scalar(sumx, sumw, &r.i1, &r.i2, &r.v, &r.scale);
        return r;
    }
    gq_iq1m_sums s;
    for (int h = 0; h < 2; ++h)
        s.sx[h][0] = s.sw[h][0] = 0;
    for (int i = 0; i < 16; ++i) {
        const int h = half[i], o = 1 - h;
        s.sx[h][i + 1] = s.sx[h][i] + (i == j ? wx[i] * lambda : wx[i]);
        s.sw[h][i + 1] = s.sw[h][i] + (i == j ? w[i] * lambda : w[i]);
        s.sx[o][i + 1] = s.sx[o][i];
        s.sw[o][i + 1] = s.sw[o][i];
    }
    r.ok = ops ? ops->iq1m_split(&s, &r.i1, &r.i2, &r.v, &r.scale)
               : gq_iq1m_split_scalar(&s, &r.i1, &r.i2, &r.v, &r.scale);
    return r;
}

static bool same_result(split_result a, split_result b)
{
    return a.ok == b.ok && a.i1 == b.i1 && a.i2 == b.i2 && a.v == b.v &&
           memcmp(&a.scale, &b.scale, sizeof a.scale) == 0;
}

static int check_near_ties(const char *name, const gq_iq_search_ops *ops)
{
    int bad = 0, ties = 0;
    for (int round = 0; round < 60; ++round) {
        const bool m = round % 2;
        const int n = m ? 16 : 32;
        float w[32], wx[32];
        int half[32];
        fast_terms(round % 3 == 2 ? 6 : 0, n, w, wx, half);
        /* a weight whose scaling (by 1 .. 8) changes the winner */
        int j = 0;
        float lo = 1.0f, hi = 8.0f;
        split_result rlo = run_split(NULL, m, w, wx, half, 0, lo), rhi;
        for (j = 0; j < n; ++j) {
            rhi = run_split(NULL, m, w, wx, half, j, hi);
            if (rlo.i1 != rhi.i1 || rlo.i2 != rhi.i2 || rlo.v != rhi.v)
                break;
        }
        if (j == n)
            continue;
        ties++;
        for (int step = 0; step < 40; ++step) {
            const float mid = lo + (hi - lo) / 2;
            if (mid == lo || mid == hi)
                break;
            const split_result a = run_split(NULL, m, w, wx, half, j, mid);
            const split_result b = run_split(ops, m, w, wx, half, j, mid);
            if (!same_result(a, b)) {
                fprintf(stderr, "%s %s near tie: scalar (%d,%d,%d,%a), simd (%d,%d,%d,%a)\n", name,
                        m ? "iq1m" : "iq1s", a.i1, a.i2, a.v, a.scale, b.i1, b.i2, b.v, b.scale);
                bad++;
            }
            if (a.i1 == rlo.i1 && a.i2 == rlo.i2 && a.v == rlo.v)
                lo = mid;
            else
                hi = mid;
        }
    }
    return bad + (ties < 10); /* the bisection must have found near ties */
}

/* The IQ1 sort against the scalar's (the C library's qsort). */
static int check_sort(const char *name, const gq_iq_search_ops *ops, int kind)
{
    int bad = 0;
    for (int n = 16; n <= 32; n += 16) {
        float x[32];
        for (int i = 0; i < n; ++i) {
            switch (kind) {
            case 0: x[i] = unit() - 0.5f; break;                           /* distinct */
            case 1: x[i] = (float)(int)(next_u64() % 6); break;            /* ties */
            case 2: x[i] = 0.75f; break;                                   /* all equal */
            case 3: x[i] = next_u64() % 2 ? 0.0f : -0.0f; break;           /* +-0 */
            case 4: x[i] = next_u64() % 5 == 0 ? (next_u64() % 2 ? INFINITY : -INFINITY)
                                               : unit() - 0.5f; break;
            default: x[i] = next_u64() % 9 == 0 ? NAN : unit(); break;
            }
        }
        if (kind == 0 && n == 32)
            x[31] = x[0] + 0x1p-23f; /* distinct but one ulp apart */
        int32_t a[32], b[32];
        gq_iq1_sort_scalar(n, x, a);
        ops->iq1_sort(n, x, b);
        if (memcmp(a, b, sizeof(int32_t) * (size_t)n) != 0) {
            fprintf(stderr, "%s iq1_sort kind %d n %d differs\n", name, kind, n);
            bad++;
        }
    }
    return bad;
}

/* nearest8 over every off-grid lattice point of the IQ1 and IQ2 grids. */
static int check_nearest8(const char *name, const gq_iq_search_ops *ops, int kind)
{
    static const float q_iq2[3] = { 1, 3, 5 };
    static const float q_iq1[3] = { -1 + GQ_IQ1S_DELTA, GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
    int bad = 0;
    for (int id = 0; id < GQ_IQGRID_COUNT; ++id) {
        const gq_iqgrid *g = gq_iqgrid_get((gq_iqgrid_id)id);
        if (!g)
            return 1;
        const float *q = id == GQ_IQGRID_IQ1S ? q_iq1 : q_iq2;
        for (int key = (int)(next_u64() % 97); key < GQ_IQGRID_NPOINTS; key += 97) {
            const int32_t m = g->map[key];
            if (m >= 0)
                continue;
            float w[8], xv[8];
            fill_terms(kind, 8, w, xv);
            for (int i = 0; i < 8; ++i)
                xv[i] = kind == 2 ? 1.0f : fabsf(xv[i]) * 2;
            const float scale = kind == 7 ? 0.0f : 0.5f + unit();
            int8_t la[8] = { 0 }, lb[8] = { 0 };
            const int ra = gq_iq_nearest8_scalar(g, m, xv, w, scale, q, la);
            const int rb = ops->nearest8(g, m, xv, w, scale, q, lb);
            if (ra != rb || memcmp(la, lb, sizeof la) != 0) {
                fprintf(stderr, "%s nearest8 grid %d key %d kind %d: %d vs %d\n", name, id, key,
                        kind, ra, rb);
                bad++;
            }
        }
    }
    return bad;
}

static void test_x86_iq_searches_match_scalar(void **state)
{
    (void)state;
    const struct {
        ggufq_isa isa;
        const gq_iq_search_ops *ops;
    } tables[] = {
        { GGUFQ_ISA_AVX2, &gq_iq_search_avx2 },
        { GGUFQ_ISA_AVX512, &gq_iq_search_avx512 },
    };
    int bad = 0, ran = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; ++t) {
        if (!ggufq_isa_supported(tables[t].isa))
            continue;
        const char *name = ggufq_isa_name(tables[t].isa);
        for (int r = 0; r < N_ROUNDS; ++r) {
            const int kind = r % N_KINDS;
            bad += check_iq1s(name, tables[t].ops, kind);
            bad += check_iq1m(name, tables[t].ops, kind);
            bad += check_fast(name, tables[t].ops, r % N_FAST_KINDS);
            bad += check_sort(name, tables[t].ops, r % 6);
            if (r < 3 * N_KINDS)
                bad += check_nearest8(name, tables[t].ops, kind);
        }
        bad += check_near_ties(name, tables[t].ops);
        printf("%s: IQ1 split (exact and fast paths), sort and nearest8 compared\n", name);
        ran++;
    }
    if (!ran)
        skip();
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_iq_searches_match_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    printf("x86 only: nothing to test here\n");
    return 0;
}

#endif
