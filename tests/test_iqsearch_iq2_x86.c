/*
 * test_iqsearch_iq2_x86.c — the x86 IQ2 searches (iqsearch.h hooks
 * iq2_search, iq2_trials and iq2_prep of src/simd/avx2 and avx512) against
 * the scalar ones, result for result, and gq_make_qp_quants against ggml's
 * sequential algorithm (restated here as the reference), on inputs that
 * reach the corners of their lane logic:
 *  - neighbour searches run two (AVX2) or four (AVX-512) to a vector, 4
 *    candidates each, with lists of every length (so lists that end at a
 *    vector boundary, lists of different lengths side by side, searches of
 *    different groups of 8 side by side, an odd last search alone): groups
 *    aimed at random lattice points, both IQ2 group sizes, all three grids;
 *  - exact distance ties (equal weights and magnitudes: the first candidate
 *    of the list must win), zero, negative, huge (overflowing) and NaN
 *    weights (searches that find nothing: status -1);
 *  - the rounding again at the chosen scale (one, two or all groups), tiny,
 *    negative and NaN scale denominators;
 *  - iq2_prep: NaN/Inf/-0 weights, zero/negative/NaN importances, sign
 *    parity ties (the first least weight*x*x) and NaN products; and which
 *    NaN its weights get from two NaN operands, bit for bit, on every
 *    kernel (scalar included: it once depended on the compiler and -O);
 *  - make_qp_quants' vectorised trials and refinement sweeps, and the x86
 *    tables' 32-weight version (qp_quants32): ties, zeros, negative and
 *    NaN importances, levels that wrap as uint8, NaN and overflowing x.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quants/common.h"
#include "quants/iqsearch.h"
#include "simd/simd.h"
#include "quants/qhelpers.h"
#include "quants/tables.h"

static float uniform(tu_rng *r) { return tu_rand_uniform(r); }

#if defined(__x86_64__) || defined(_M_X64)

enum { N_KINDS = 10 };

static const struct {
    ggufq_isa isa;
    const gq_iq_search_ops *ops;
} simd_tables[] = {
    { GGUFQ_ISA_AVX2, &gq_iq_search_avx2 },
    { GGUFQ_ISA_AVX512, &gq_iq_search_avx512 },
};

/*
 * A group of 8 * nsub magnitudes and weights of one kind, aimed at a random
 * lattice point at scale `s` (magnitudes near s * (2l + 1)).
 */
static void fill_group(tu_rng *r, int kind, int nsub, float s, float *xval, float *weight,
                       float *waux)
{
    const int n = 8 * nsub;
    const float c = (float)(1 + tu_rand_u64(r) % 5);
    for (int i = 0; i < n; ++i) {
        const int l = (int)(tu_rand_u64(r) % 3);
        float x = s * (float)(2 * l + 1) * (0.8f + 0.4f * uniform(r));
        float w = 0.1f + uniform(r);
        switch (kind) {
        case 0: break;                                          /* aimed, random weights */
        case 1: x = c; w = 1.0f; break;                         /* all equal: exact ties */
        case 2: x = (float)(tu_rand_u64(r) % 6); w = 1.0f; break; /* integers, midpoints */
        case 3: w = tu_rand_u64(r) % 3 ? w : 0.0f; break;        /* zero weights */
        case 4: w = tu_rand_u64(r) % 11 ? w : 1e38f; break;      /* overflowing distances */
        case 5: w = tu_rand_u64(r) % 29 ? w : NAN; break;        /* NaN: searches fail */
        case 6: w = tu_rand_u64(r) % 4 ? w : -w; break;          /* negative weights */
        case 7: x *= 1e-39f; break;                              /* subnormal magnitudes */
        case 8: x = i < 8 ? 0.0f : x; break;                     /* a zero group of 8 */
        default: w = tu_rand_u64(r) % 13 ? w : INFINITY; break;  /* Inf: Inf * 0 = NaN */
        }
        xval[i] = x;
        weight[i] = w;
        waux[i] = kind == 6 ? w : sqrtf(w);
    }
}

static int check_search(const char *name, const gq_iq_search_ops *ops, tu_rng *r, int kind,
                        const gq_iqgrid *g, int nsub, int nhalf, int all)
{
    float xval[32], weight[32], waux[32];
    const float s = 0.5f + 2 * uniform(r);
    fill_group(r, kind, nsub, s, xval, weight, waux);
    float max = 0;
    for (int i = 0; i < 8 * nsub; ++i)
        max = xval[i] > max ? xval[i] : max;
    const int d = (int)(tu_rand_u64(r) % 8);
    const float denom = d == 0 ? 1e-30f : d == 1 ? -max : d == 2 ? NAN : max;
    const float scale0 = max / 5;
    int8_t la[32], lb[32];
    for (int i = 0; i < 32; ++i)
        la[i] = lb[i] = all ? (int8_t)(tu_rand_u64(r) % 5) : 0;
    float sa = scale0, sb = scale0;
    const int ra = gq_iq2_search_scalar(&gq_iq_search_scalar, g, xval, weight, waux, nsub, nhalf,
                                        denom, all, &sa, la);
    const int rb = ops->iq2_search(ops, g, xval, weight, waux, nsub, nhalf, denom, all, &sb, lb);
    if (ra != rb || (ra == 0 && (memcmp(&sa, &sb, 4) != 0 || memcmp(la, lb, (size_t)(8 * nsub)) != 0))) {
        fprintf(stderr, "%s iq2_search kind %d grid %d nsub %d nhalf %d all %d: %d %a vs %d %a\n",
                name, kind, g->size, nsub, nhalf, all, ra, sa, rb, sb);
        return 1;
    }
    return 0;
}

static int check_trials(const char *name, const gq_iq_search_ops *ops, tu_rng *r, int kind,
                        const gq_iqgrid *g, int nsub, int ntrials)
{
    float xval[32], weight[32], waux[32], ids[GQ_IQ2_MAX_TRIALS], scales[GQ_IQ2_MAX_TRIALS];
    const float s = 0.5f + 2 * uniform(r);
    fill_group(r, kind, nsub, s, xval, weight, waux);
    for (int t = 0; t < ntrials; ++t) {
        ids[t] = (0.6f + 0.05f * (float)t) / s;
        scales[t] = 1 / ids[t];
    }
    static gq_iq2_trial_out a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const int ra = gq_iq2_trials_scalar(g, xval, weight, waux, nsub, ntrials, ids, scales, &a);
    const int rb = ops->iq2_trials(g, xval, weight, waux, nsub, ntrials, ids, scales, &b);
    if (ra != rb || (ra == 0 && (memcmp(a.L, b.L, (size_t)(8 * nsub * ntrials)) != 0 ||
                                 memcmp(a.on_grid, b.on_grid, (size_t)(nsub * ntrials)) != 0 ||
                                 memcmp(a.sumqx, b.sumqx, 4 * (size_t)ntrials) != 0 ||
                                 memcmp(a.sumq2, b.sumq2, 4 * (size_t)ntrials) != 0))) {
        fprintf(stderr, "%s iq2_trials kind %d grid %d nsub %d ntrials %d: %d vs %d\n", name, kind,
                g->size, nsub, ntrials, ra, rb);
        return 1;
    }
    return 0;
}

static float special(tu_rng *r)
{
    static const float v[] = { 0.0f, -0.0f, NAN, -NAN, INFINITY, -INFINITY, 1e-40f, -3.0f };
    return v[tu_rand_u64(r) % 8];
}

static int check_prep(const char *name, const gq_iq_search_ops *ops, tu_rng *r, int kind)
{
    const int nsub = tu_rand_u64(r) & 1 ? 4 : 2, parity = (int)(tu_rand_u64(r) & 1);
    float xb[32], qw[32];
    const float c = 0.5f + uniform(r);
    for (int i = 0; i < 32; ++i) {
        xb[i] = tu_rand_gauss(r);
        qw[i] = 0.1f + uniform(r);
        switch (kind) {
        case 0: break;
        case 1: xb[i] = tu_rand_u64(r) & 1 ? c : -c; qw[i] = 1.0f; break; /* parity ties */
        case 2: xb[i] = tu_rand_u64(r) % 7 ? xb[i] : special(r); break;
        case 3: qw[i] = tu_rand_u64(r) % 5 ? qw[i] : special(r); break;
        case 4: xb[i] = tu_rand_u64(r) % 3 ? -0.0f : 0.0f; break;
        case 5: qw[i] = 0.0f; break;
        case 6: xb[i] = -fabsf(xb[i]); break;                           /* all negative */
        case 7: xb[i] = (float)((int)(tu_rand_u64(r) % 5) - 2); break;
        case 8: xb[i] = i == 31 ? NAN : xb[i]; break;                   /* NaN last */
        default: break;
        }
    }
    const float *qp = kind == 9 ? NULL : qw;
    const float sigma2 = kind == 3 && tu_rand_u64(r) % 4 == 0 ? NAN : uniform(r);
    float wa[32], wb[32], aa[32], ab[32], xa[32], xv[32];
    uint8_t sa[4], sb[4];
    const float ma = gq_iq2_prep_scalar(nsub, xb, qp, sigma2, parity, wa, aa, xa, sa);
    const float mb = ops->iq2_prep(nsub, xb, qp, sigma2, parity, wb, ab, xv, sb);
    const size_t n = (size_t)(8 * nsub);
    /* a zero maximum may come back with either sign (iqsearch.h) */
    const int max_ok = ma == 0 ? mb == 0 : memcmp(&ma, &mb, 4) == 0;
    if (!max_ok || memcmp(wa, wb, 4 * n) != 0 || memcmp(aa, ab, 4 * n) != 0 ||
        memcmp(xa, xv, 4 * n) != 0 || memcmp(sa, sb, (size_t)nsub) != 0) {
        fprintf(stderr, "%s iq2_prep kind %d nsub %d parity %d: max %a vs %a\n", name, kind, nsub,
                parity, ma, mb);
        return 1;
    }
    return 0;
}

static void test_x86_iq2_searches_match_scalar(void **state)
{
    (void)state;
    static const gq_iqgrid_id grids[] = { GQ_IQGRID_IQ2XXS, GQ_IQGRID_IQ2XS, GQ_IQGRID_IQ2S };
    int bad = 0, ran = 0;
    for (size_t t = 0; t < sizeof simd_tables / sizeof simd_tables[0]; ++t) {
        if (!ggufq_isa_supported(simd_tables[t].isa))
            continue;
        const char *name = ggufq_isa_name(simd_tables[t].isa);
        const gq_iq_search_ops *ops = simd_tables[t].ops;
        tu_rng r = { 0x1A2B3C4D5E6F7081ull };
        for (size_t gi = 0; gi < 3; ++gi) {
            const gq_iqgrid *g = gq_iqgrid_get(grids[gi]);
            assert_non_null(g);
            for (int round = 0; round < 400; ++round) {
                const int kind = round % N_KINDS;
                for (int nsub = 2; nsub <= 4; nsub += 2) {
                    static const int halves[] = { 9, 6, 0, 3, 8 };
                    const int nhalf = halves[round % 5];
                    bad += check_search(name, ops, &r, kind, g, nsub, nhalf, round & 1);
                    bad += check_search(name, ops, &r, kind, g, nsub, 9 - (round & 3), !(round & 1));
                    bad += check_trials(name, ops, &r, kind, g, nsub, 1 + round % GQ_IQ2_MAX_TRIALS);
                }
            }
        }
        for (int round = 0; round < 2000; ++round)
            bad += check_prep(name, ops, &r, round % 10);
        printf("%s: IQ2 trial searches and group preparation compared against scalar\n", name);
        ran++;
    }
    if (!ran)
        skip();
    assert_int_equal(bad, 0);
}

#else

static void test_x86_iq2_searches_match_scalar(void **state)
{
    (void)state;
    skip(); /* x86 only */
}

#endif

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/*
 * iq2_prep's weights from NaN operands on both sides of an operation (qw *
 * sqrtf(sigma2 + xb * xb), 0.25f * sigma2 + xb * xb): qw's NaN, then xb *
 * xb's over sigma2's, and 0.25f * sigma2's over xb * xb's (iqsearch.h), made
 * quiet; waux is their square root (the same NaN). Every kernel, whatever
 * the compiler made of the operand order.
 */
static int check_prep_nan_pairs(const char *name, gq_iq2_prep_fn prep)
{
    /* lane: qw, xb -> weight with sigma2 = NaN 0x7FC00005 */
    static const uint32_t with_qw[][3] = {
        { 0xFFC00002u, 0x3F800000u, 0xFFC00002u }, /* -NaN qw over sigma2's NaN */
        { 0x7F800001u, 0xBF800000u, 0x7FC00001u }, /* signalling qw: made quiet */
        { 0x3F800000u, 0x7FC00003u, 0x7FC00003u }, /* xb * xb's NaN over sigma2's */
        { 0xFFC00004u, 0xFF800003u, 0xFFC00004u }, /* three NaNs: qw's */
        { 0x40000000u, 0x3F800000u, 0x7FC00005u }, /* sigma2's alone */
        { 0x00000000u, 0xFF800009u, 0xFFC00009u }, /* xb's, quiet, sign kept */
    };
    float xb[16], qw[16], w[16], waux[16], xval[16];
    uint8_t signs[2];
    int bad = 0;
    for (int i = 0; i < 16; ++i) {
        const int c = i % 6;
        qw[i] = from_bits(with_qw[c][0]);
        xb[i] = from_bits(with_qw[c][1]);
    }
    prep(2, xb, qw, from_bits(0x7FC00005u), 0, w, waux, xval, signs);
    for (int i = 0; i < 16; ++i) {
        const uint32_t want = with_qw[i % 6][2];
        uint32_t got, got_aux;
        memcpy(&got, &w[i], 4);
        memcpy(&got_aux, &waux[i], 4);
        if (got != want || got_aux != want) {
            fprintf(stderr, "%s iq2_prep with qw, weight %d: %08x, waux %08x, expected %08x\n",
                    name, i, got, got_aux, want);
            bad++;
        }
    }
    /* no qw: 0.25f * sigma2's NaN over xb * xb's; xb's alone with sigma2 finite */
    for (int i = 0; i < 16; ++i)
        xb[i] = from_bits(i & 1 ? 0xFF800007u : 0x3F800000u);
    const float sigmas[2] = { from_bits(0xFFC00006u), 1.0f };
    for (int k = 0; k < 2; ++k) {
        prep(2, xb, NULL, sigmas[k], 0, w, waux, xval, signs);
        for (int i = 0; i < 16; ++i) {
            const uint32_t want = k == 0 ? 0xFFC00006u : i & 1 ? 0xFFC00007u : 0x3FA00000u;
            uint32_t got;
            memcpy(&got, &w[i], 4);
            if (got != want) {
                fprintf(stderr, "%s iq2_prep without qw, sigma2 %s, weight %d: %08x, expected %08x\n",
                        name, k == 0 ? "NaN" : "1", i, got, want);
                bad++;
            }
        }
    }
    return bad;
}

static void test_iq2_prep_nan_operands(void **state)
{
    (void)state;
    int bad = check_prep_nan_pairs("scalar", gq_iq2_prep_scalar);
#if defined(__x86_64__) || defined(_M_X64)
    for (size_t t = 0; t < sizeof simd_tables / sizeof simd_tables[0]; ++t)
        if (ggufq_isa_supported(simd_tables[t].isa))
            bad += check_prep_nan_pairs(ggufq_isa_name(simd_tables[t].isa),
                                        simd_tables[t].ops->iq2_prep);
#endif
    assert_int_equal(bad, 0);
}

/* ggml's make_qp_quants as written there: one trial scale after the other,
 * each element's refinement step in turn. */
static float qp_reference(int n, int nmax, const float *x, uint8_t *L, const float *qw)
{
    float max = 0;
    for (int i = 0; i < n; ++i)
        max = max > x[i] ? max : x[i];
    if (max < GQ_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; ++i)
        L[i] = (uint8_t)gq_nearest_int(iscale * x[i]);
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * L[i];
        best_mse += qw[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0)
            continue;
        const float iscale_is = (0.1f * is + nmax) / max, scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            int l = gq_nearest_int(iscale_is * x[i]);
            l = l < nmax ? l : nmax;
            const float diff = x[i] - scale_is * l;
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = gq_nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * l;
        suml2 += qw[i] * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = qw[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = gq_nearest_int(x[i] * sl2 / slx);
                new_l = new_l < nmax ? new_l : nmax;
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static void test_make_qp_quants_matches_sequential(void **state)
{
    (void)state;
    static const int sizes[][2] = { { 8, 63 }, { 16, 15 }, { 32, 4 }, { 32, 63 }, { 5, 7 } };
    tu_rng r = { 0x0F1E2D3C4B5A6978ull };
    int bad = 0;
    for (int round = 0; round < 6000; ++round) {
        const int n = sizes[round % 5][0], nmax = sizes[round % 5][1], kind = (round / 5) % 10;
        float x[32], qw[32];
        for (int i = 0; i < n; ++i) {
            x[i] = fabsf(tu_rand_gauss(&r)) * (kind == 5 ? 1e-3f : 1.0f);
            qw[i] = 0.1f + uniform(&r);
            switch (kind) {
            case 1: x[i] = (float)(1 + tu_rand_u64(&r) % 3); qw[i] = 1.0f; break; /* ties */
            case 2: qw[i] = tu_rand_u64(&r) % 3 ? qw[i] : 0.0f; break;
            case 3: qw[i] = tu_rand_u64(&r) % 4 ? qw[i] : -qw[i]; break;
            case 4: x[i] = tu_rand_u64(&r) % 4 ? x[i] : -x[i]; break; /* levels wrap */
            case 6: x[i] = tu_rand_u64(&r) % 17 ? x[i] : NAN; break;
            case 7: x[i] = round < 40 ? 0.0f : x[i]; break;
            case 8: x[i] *= 1e37f; break; /* sums overflow to inf */
            case 9: qw[i] = tu_rand_u64(&r) % 13 ? qw[i] : NAN; break;
            default: break;
            }
        }
        uint8_t la[32], lb[32];
        const float a = qp_reference(n, nmax, x, la, qw);
        const float b = gq_make_qp_quants(n, nmax, x, lb, qw);
        if (memcmp(&a, &b, 4) != 0 || memcmp(la, lb, (size_t)n) != 0) {
            fprintf(stderr, "make_qp_quants n %d nmax %d kind %d: %a vs %a\n", n, nmax, kind, a, b);
            bad++;
        }
#if defined(__x86_64__) || defined(_M_X64)
        /* the x86 tables' IQ2_XXS version (n = 32) */
        for (size_t t = 0; n == 32 && t < sizeof simd_tables / sizeof simd_tables[0]; ++t) {
            if (!ggufq_isa_supported(simd_tables[t].isa) || !simd_tables[t].ops->qp_quants32)
                continue;
            uint8_t lc[32];
            const float c = simd_tables[t].ops->qp_quants32(nmax, x, lc, qw);
            if (memcmp(&a, &c, 4) != 0 || memcmp(la, lc, 32) != 0) {
                fprintf(stderr, "%s qp_quants32 nmax %d kind %d: %a vs %a\n",
                        ggufq_isa_name(simd_tables[t].isa), nmax, kind, a, c);
                bad++;
            }
        }
#endif
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_iq2_searches_match_scalar),
        cmocka_unit_test(test_iq2_prep_nan_operands),
        cmocka_unit_test(test_make_qp_quants_matches_sequential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
