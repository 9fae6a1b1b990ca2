/*
 * test_iqsearch_iq3_x86.c — the x86 IQ3 searches (iqsearch.h hooks
 * iq3_trials and iq3_round4 of src/simd/avx2 and avx512) against the scalar
 * ones, result for result and byte for byte, on inputs that reach their
 * corners:
 *  - every off-grid lattice point of both grids, so every neighbour list
 *    length, including those ending exactly at a vector boundary (8, 16,
 *    24, 32) or just past one, and the long lists of the tails;
 *  - exact ties between candidates (integer magnitudes at scale 1, equal
 *    and zero weights), where the first candidate in list order must win;
 *  - distances that are NaN, +inf, overflow for some candidates only, or
 *    -0 (weights of -0): a search with no candidate below FLT_MAX must fail
 *    (-1), one with some must pick among those only (the AVX2 search then
 *    redoes the group exactly);
 *  - every trial count 1 .. 31, so queues of any length.
 * The whole quantizers' corners are in test_quant_iq_corners.c.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "simd/simd.h"

#if defined(__x86_64__) || defined(_M_X64)

typedef struct group {
    float xval[32], weight[32], waux[32];
    float ids[GQ_IQ3_MAX_TRIALS], scales[GQ_IQ3_MAX_TRIALS];
    int   ntrials;
} group;

static tu_rng rng = { 0x1F3D5B79A2C4E6F8ull };

/* The searches of one group: iq3_trials, and iq3_round4 of every quad at
 * the first trial's scale. Returns the number of mismatches. */
static int compare(const char *name, const gq_iq_search_ops *ops, const gq_iq3_search *t,
                   const group *g, const char *what)
{
    static gq_iq3_trial_out a, b;
    memset(&a, 0x5A, sizeof a);
    memset(&b, 0x5A, sizeof b);
    int bad = 0;
    const int ra = gq_iq3_trials_scalar(t, g->xval, g->weight, g->waux, g->ntrials, g->ids,
                                        g->scales, &a);
    const int rb = ops->iq3_trials(t, g->xval, g->weight, g->waux, g->ntrials, g->ids, g->scales,
                                   &b);
    if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof a) != 0)) {
        fprintf(stderr, "%s iq3_trials, grid %d, %s, %d trials: scalar %d, simd %d\n", name,
                t->grid_size, what, g->ntrials, ra, rb);
        bad++;
    }
    for (int k = 0; k < 8; ++k) {
        int8_t la[4] = { 9, 9, 9, 9 }, lb[4] = { 9, 9, 9, 9 };
        const int qa = gq_iq3_round4_scalar(t, g->xval + 4 * k, g->waux + 4 * k, g->ids[0],
                                            g->scales[0], la);
        const int qb = ops->iq3_round4(t, g->xval + 4 * k, g->waux + 4 * k, g->ids[0],
                                       g->scales[0], lb);
        if (qa != qb || memcmp(la, lb, 4) != 0) {
            fprintf(stderr, "%s iq3_round4, grid %d, %s, quad %d: scalar %d, simd %d\n", name,
                    t->grid_size, what, k, qa, qb);
            bad++;
        }
    }
    return bad;
}

/* Trial scales around id0, 1% apart (iq3.c's are 1.3% apart). */
static void set_trials(group *g, float id0, int ntrials)
{
    g->ntrials = ntrials;
    for (int k = 0; k < ntrials; ++k) {
        g->ids[k] = id0 * (1 + 0.01f * (float)(k - ntrials / 2));
        g->scales[k] = 1 / g->ids[k];
    }
}

/* Weights of one kind: random, equal, some zero, all zero. */
static float weight_of(int kind)
{
    switch (kind) {
    case 0: return 0.1f + 2 * tu_rand_uniform(&rng);
    case 1: return 1.0f;
    case 2: return tu_rand_u64(&rng) % 3 ? 1.0f : 0.0f;
    default: return 0.0f;
    }
}

/*
 * Quad k of g rounds to lattice point `key` at inverse scale id0: its
 * magnitudes are (2l + 1 + delta) / id0, delta 0 (exact: integer distances
 * at id0 = 1, so ties) or random in (-0.8, 0.8).
 */
static void put_key(group *g, int k, int key, float id0, bool exact, int wkind)
{
    for (int i = 0; i < 4; ++i) {
        const int l = (key >> 3 * i) & 7;
        const float delta = exact ? 0.0f : 1.6f * (tu_rand_uniform(&rng) - 0.5f);
        g->xval[4 * k + i] = ((float)(2 * l + 1) + delta) / id0;
        g->weight[4 * k + i] = weight_of(wkind);
        g->waux[4 * k + i] = sqrtf(g->weight[4 * k + i]);
    }
}

/* Every off-grid lattice point, 8 per group, at a few trial counts. */
static int check_every_key(const char *name, const gq_iq_search_ops *ops, const gq_iq3_search *t)
{
    int bad = 0, k = 0, round = 0;
    group g;
    for (int key = 0; key < GQ_IQ3_LATTICE_SIZE; ++key) {
        if (t->grid_index[key] >= 0)
            continue;
        const bool exact = round % 2 == 0;
        const float id0 = exact ? 1.0f : 0.5f + tu_rand_uniform(&rng);
        put_key(&g, k, key, exact ? 1.0f : id0, exact, round % 4);
        if (++k < 8)
            continue;
        static const int counts[4] = { 1, 3, 19, 31 };
        set_trials(&g, exact ? 1.0f : id0, counts[round % 4]);
        bad += compare(name, ops, t, &g, exact ? "every key, ties" : "every key");
        k = 0;
        round++;
    }
    return bad;
}

/* A random group: gaussian magnitudes, so a mix of on- and off-grid quads. */
static void random_group(group *g, int ntrials)
{
    float max = 0;
    for (int i = 0; i < 32; ++i) {
        g->xval[i] = fabsf(tu_rand_gauss(&rng));
        g->weight[i] = g->xval[i] * g->xval[i];
        g->waux[i] = sqrtf(g->weight[i]);
        max = g->xval[i] > max ? g->xval[i] : max;
    }
    set_trials(g, 15 / max, ntrials);
}

/*
 * Special weights in some quads of random groups: NaN, +inf, -0, 0, huge
 * (distances overflow for the candidates far enough only), tiny, or
 * FLT_MAX on one coordinate of an even magnitude at scale 1 (distances
 * exactly FLT_MAX, which the scalar never takes, or +inf).
 */
static int check_specials(const char *name, const gq_iq_search_ops *ops, const gq_iq3_search *t)
{
    static const char *kinds[8] = { "NaN", "inf", "-0", "zero", "huge", "huge one", "tiny",
                                    "FLT_MAX" };
    int bad = 0;
    for (int r = 0; r < 800; ++r) {
        group g;
        const int kind = r % 8;
        random_group(&g, kind == 7 ? 1 : 1 + r % GQ_IQ3_MAX_TRIALS);
        if (kind == 7) {
            g.ids[0] = g.scales[0] = 1;
            for (int i = 0; i < 32; ++i)
                g.xval[i] *= 4;
        }
        const int nquads = 1 + (int)(tu_rand_u64(&rng) % 3);
        for (int n = 0; n < nquads; ++n) {
            const int k = (int)(tu_rand_u64(&rng) % 8);
            for (int i = 0; i < 4; ++i) {
                float *w = &g.waux[4 * k + i];
                switch (kind) {
                case 0: *w = i == 2 ? NAN : *w; break;
                case 1: *w = i == 1 ? INFINITY : *w; break;
                case 2: *w = -0.0f; break;
                case 3: *w = 0.0f; break;
                case 4: *w = 5e37f; break;
                case 5: *w = i == 3 ? 1e38f : *w; break;
                case 6: *w = 1e-30f * *w; break;
                default:
                    *w = i == 0 ? FLT_MAX : 0.0f;
                    if (i == 0)
                        g.xval[4 * k] = (float)(2 * (tu_rand_u64(&rng) % 8));
                    break;
                }
            }
        }
        bad += compare(name, ops, t, &g, kinds[kind]);
    }
    return bad;
}

/* Random groups at every trial count (queues of every length). */
static int check_random(const char *name, const gq_iq_search_ops *ops, const gq_iq3_search *t)
{
    int bad = 0;
    for (int r = 0; r < 3 * GQ_IQ3_MAX_TRIALS; ++r) {
        group g;
        random_group(&g, 1 + r % GQ_IQ3_MAX_TRIALS);
        bad += compare(name, ops, t, &g, "random");
    }
    return bad;
}

static void test_x86_iq3_searches_match_scalar(void **state)
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
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; ++i) {
        if (!ggufq_isa_supported(tables[i].isa))
            continue;
        const char *name = ggufq_isa_name(tables[i].isa);
        for (int size = 256; size <= 512; size += 256) {
            const gq_iq3_search *t = gq_iq3_search_tables(size);
            assert_non_null(t);
            bad += check_every_key(name, tables[i].ops, t);
            bad += check_specials(name, tables[i].ops, t);
            bad += check_random(name, tables[i].ops, t);
        }
        printf("%s: IQ3 trial and round4 searches compared against scalar\n", name);
        ran++;
    }
    if (!ran)
        skip();
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_iq3_searches_match_scalar),
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
