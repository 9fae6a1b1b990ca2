/*
 * test_quant_iq_split.c — the x86 IQ1 split searches (iqsearch.h hooks
 * iq1s_split and iq1m_split of src/simd/avx2 and avx512) against the scalar
 * ones, result for result, on prefix sums that reach their corners: the
 * SIMD searches guess the scalar's winners as the records of the scores and
 * check the guess exactly, redoing the search sequentially when the check
 * fails, so this feeds exact score ties (zero and repeated weights, which
 * make neighbouring prefix sums equal), near ties, negative weights (sumq2 <=
 * 0), Inf/NaN sums (scores that are NaN or Inf), all-zero sums and huge
 * values; and, for the AVX-512 whole-search shortcut (IQ1_S), continuous
 * values whose sums are ordinary, tiny or huge (its range fallbacks) and
 * near-equal weights (its exact-score path). Also the nearest8 search (whose candidates' lane words are now
 * loaded from the neighbour lists) on all-zero, tied and NaN/Inf inputs.
 * The whole quantizers' corners are in test_quant_iq_neon.c.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quants/iqsearch.h"
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
            if (r < 3 * N_KINDS)
                bad += check_nearest8(name, tables[t].ops, kind);
        }
        printf("%s: IQ1 split and nearest8 searches compared against scalar\n", name);
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
