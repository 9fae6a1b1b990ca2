/*
 * test_quant_iq_corners.c — the SIMD quantizers of the IQ grid types (IQ2_XXS,
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) against scalar, byte for
 * byte, on the corner cases of their searches that test_simd's random rows
 * rarely reach: ties (small integers, constant and symmetric groups, so
 * equal neighbour distances, equal sort keys and equal split scores),
 * all-zero groups and rows, tiny/subnormal and huge magnitudes, NaN/Inf
 * weights (status must match), and importance matrices with zeros, ties
 * and negative entries. Written for the NEON searches (iq_quant_neon.c)
 * but run for every SIMD ISA this CPU has. On AArch64 the NEON searches
 * themselves (static in iq_quant_neon.c, included here) are also compared
 * with the scalar ones of iqsearch.h on random inputs full of exact and
 * near ties, NaN/Inf and negative weights, which reach branches whole rows
 * rarely do (e.g. the split scan's re-comparison after a score drop).
 * Kept small: it runs under qemu.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"

enum { N_PER_ROW = 512, N_DATA_CASES = 11, N_IMAT_CASES = 6 };

static const int iq_types[] = {
    GGUFQ_TYPE_IQ2_XXS, GGUFQ_TYPE_IQ2_XS, GGUFQ_TYPE_IQ2_S, GGUFQ_TYPE_IQ3_XXS,
    GGUFQ_TYPE_IQ3_S,   GGUFQ_TYPE_IQ1_S,  GGUFQ_TYPE_IQ1_M,
};

/* Small integer in [-k, k]. */
static float small_int(tu_rng *rng, int k)
{
    return (float)((int)(tu_rand_u64(rng) % (uint64_t)(2 * k + 1)) - k);
}

/* One group of 32 of a mixed row: zero, constant, symmetric, integer or gaussian. */
static void fill_group(tu_rng *rng, float *x)
{
    const int kind = (int)(tu_rand_u64(rng) % 6);
    const float c = 0.25f * (float)(1 + tu_rand_u64(rng) % 8);
    for (int i = 0; i < 32; i++) {
        switch (kind) {
        case 0: x[i] = 0.0f; break;
        case 1: x[i] = c; break;
        case 2: x[i] = (i & 1) ? c : -c; break;
        case 3: x[i] = small_int(rng, 2); break;
        case 4: x[i] = i == 7 ? c : 0.0f; break; /* one weight in a zero group */
        default: x[i] = tu_rand_gauss(rng); break;
        }
    }
}

static void fill_data(int c, tu_rng *rng, float *x, int n)
{
    for (int i = 0; i < n; i++) {
        const float g = tu_rand_gauss(rng);
        switch (c) {
        case 0: break; /* mixed groups, below */
        case 1: x[i] = small_int(rng, 3); break;
        case 2: x[i] = (tu_rand_u64(rng) & 1 ? 1.0f : -1.0f) * (float)(1 + tu_rand_u64(rng) % 2); break;
        case 3: x[i] = g * 1e-39f; break; /* subnormal */
        case 4: x[i] = g * 1e-20f; break;
        case 5: x[i] = g * 1e30f; break; /* sums of squares overflow */
        case 6: x[i] = (tu_rand_u64(rng) % 4 == 0) ? g : g * 1e-20f; break;
        case 7: x[i] = 0.25f * small_int(rng, 8); break;
        case 8: x[i] = i == 100 ? NAN : g; break;
        case 9: x[i] = i == 300 ? -INFINITY : g; break;
        default: x[i] = 0.0f; break;
        }
    }
    if (c == 0)
        for (int i = 0; i < n; i += 32)
            fill_group(rng, x + i);
}

/* The importance matrix of a case, or NULL. */
static const float *fill_imatrix(int c, tu_rng *rng, float *im, int n)
{
    if (c == 0)
        return NULL;
    for (int i = 0; i < n; i++) {
        const float u = tu_rand_uniform(rng) * 4 + 0.01f;
        switch (c) {
        case 1: im[i] = u; break;
        case 2: im[i] = tu_rand_u64(rng) & 1 ? u : 0.0f; break;
        case 3: im[i] = 0.0f; break;
        case 4: im[i] = (float)(tu_rand_u64(rng) % 3); break;
        default: im[i] = tu_rand_u64(rng) % 8 == 0 ? -u : u; break;
        }
    }
    return im;
}

static int check_type(ggufq_isa isa, int type)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_kernels *simd = gq_kernels_for_isa(isa, type);
    const gq_kernels *ref = gq_scalar_kernels(type);
    if (!tt || !simd || !ref || !simd->quantize || simd->quantize == ref->quantize)
        return 0;
    const size_t bytes = (size_t)(N_PER_ROW / tt->block_size) * tt->block_bytes;
    float x[N_PER_ROW], im[N_PER_ROW];
    uint8_t *qa = malloc(bytes), *qb = malloc(bytes);
    int bad = 0;
    for (int dc = 0; dc < N_DATA_CASES; dc++) {
        for (int ic = 0; ic < N_IMAT_CASES; ic++) {
            tu_rng rng = { 0x1A0000u + (uint64_t)type * 131 + (uint64_t)dc * 17 + (uint64_t)ic };
            fill_data(dc, &rng, x, N_PER_ROW);
            const float *imat = fill_imatrix(ic, &rng, im, N_PER_ROW);
            memset(qa, 0, bytes);
            memset(qb, 0xFF, bytes);
            const int ra = ref->quantize(x, qa, 1, N_PER_ROW, imat);
            const int rb = simd->quantize(x, qb, 1, N_PER_ROW, imat);
            if (ra != rb || (ra == GGUFQ_OK && memcmp(qa, qb, bytes) != 0)) {
                size_t at = 0;
                while (at < bytes && qa[at] == qb[at])
                    at++;
                fprintf(stderr, "%s quantize %s: data case %d imatrix case %d: status %d/%d, "
                        "first differing byte %zu of %zu\n", ggufq_isa_name(isa), tt->name, dc, ic,
                        ra, rb, at, bytes);
                bad++;
            }
        }
    }
    free(qa);
    free(qb);
    return bad;
}

static void test_iq_quant_corners_match_scalar(void **state)
{
    (void)state;
    int bad = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        for (size_t k = 0; k < sizeof iq_types / sizeof iq_types[0]; k++)
            bad += check_type((ggufq_isa)isa, iq_types[k]);
        printf("%s: IQ quantizer corner cases compared against scalar\n",
               ggufq_isa_name((ggufq_isa)isa));
    }
    assert_int_equal(bad, 0);
}

#if defined(__aarch64__)
/* The NEON searches, under test by name (-std=c11: no FMA contraction, as
 * in the library build); the file's quantizers, which the library exports
 * too, are renamed. */
#define gq_neon_quantize_iq2_xxs test_copy_of_quantize_iq2_xxs
#define gq_neon_quantize_iq2_xs test_copy_of_quantize_iq2_xs
#define gq_neon_quantize_iq2_s test_copy_of_quantize_iq2_s
#define gq_neon_quantize_iq3_xxs test_copy_of_quantize_iq3_xxs
#define gq_neon_quantize_iq3_s test_copy_of_quantize_iq3_s
#define gq_neon_quantize_iq1_s test_copy_of_quantize_iq1_s
#define gq_neon_quantize_iq1_m test_copy_of_quantize_iq1_m
#include "simd/neon/iq_quant_neon.c"
#undef gq_neon_quantize_iq2_xxs
#undef gq_neon_quantize_iq2_xs
#undef gq_neon_quantize_iq2_s
#undef gq_neon_quantize_iq3_xxs
#undef gq_neon_quantize_iq3_s
#undef gq_neon_quantize_iq1_s
#undef gq_neon_quantize_iq1_m

static uint64_t fuzz_state = 88172645463325252ull;

static uint64_t fuzz_u64(void)
{
    fuzz_state ^= fuzz_state << 13;
    fuzz_state ^= fuzz_state >> 7;
    fuzz_state ^= fuzz_state << 17;
    return fuzz_state;
}

static float fuzz_unit(void) { return (float)(fuzz_u64() >> 40) / (float)(1 << 24); }

/* A magnitude: spread, small integers (ties), rare NaN/Inf, constant, huge. */
static float fuzz_value(int kind)
{
    switch (kind) {
    case 0: return fuzz_unit() * 6;
    case 1: return (float)(fuzz_u64() % 6);
    case 2: return fuzz_u64() % 50 == 0 ? (fuzz_u64() & 1 ? NAN : INFINITY) : fuzz_unit() * 4;
    case 3: return 2.0f;
    default: return fuzz_unit() * 1e20f;
    }
}

/* A weight: spread, 0..2 (zeros and ties), some negative, or all 1. */
static float fuzz_weight(int kind)
{
    switch (kind) {
    case 0: return fuzz_unit();
    case 1: return (float)(fuzz_u64() % 3);
    case 2: return fuzz_u64() % 4 ? fuzz_unit() : -fuzz_unit();
    default: return 1.0f;
    }
}

static int check_grid_searches(const float *x, const float *w, const float *wa, float scale)
{
    static const float q_iq1[3] = { -1 + GQ_IQ1S_DELTA, GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
    const gq_iqgrid *g = gq_iqgrid_get((gq_iqgrid_id)(fuzz_u64() % GQ_IQGRID_COUNT));
    const gq_iq3_search *t = gq_iq3_search_tables(fuzz_u64() & 1 ? 512 : 256);
    if (!g || !t)
        return 1;
    int bad = 0, key;
    do
        key = (int)(fuzz_u64() % GQ_IQGRID_NPOINTS);
    while (g->map[key] >= 0);
    int8_t la[8], lb[8];
    memset(la, 9, sizeof la);
    memset(lb, 9, sizeof lb);
    const float *q = g == gq_iqgrid_get(GQ_IQGRID_IQ1S) ? q_iq1 : iq2_q;
    int ra = gq_iq_nearest8_scalar(g, g->map[key], x, wa, scale, q, la);
    int rb = nearest8_neon(g, g->map[key], x, wa, scale, q, lb);
    bad += ra != rb || memcmp(la, lb, 8) != 0;
    ra = gq_iq2_round8_scalar(g, x, wa, 1 / scale, scale, la);
    rb = iq2_round8_neon(g, x, wa, 1 / scale, scale, lb);
    bad += ra != rb || memcmp(la, lb, 8) != 0;
    const float id3 = fuzz_unit() * 20;
    ra = gq_iq3_round4_scalar(t, x, wa, id3, scale, la);
    rb = iq3_round4_neon(t, x, wa, id3, scale, lb);
    bad += ra != rb || memcmp(la, lb, 4) != 0;
    (void)w;
    return bad;
}

static int check_trials(const float *x, const float *w, const float *wa)
{
    static gq_iq2_trial_out a2, b2;
    static gq_iq3_trial_out a3, b3;
    float ids[GQ_IQ3_MAX_TRIALS], scales[GQ_IQ3_MAX_TRIALS];
    const float max = 1 + fuzz_unit() * 3;
    const int nsub = fuzz_u64() & 1 ? 4 : 2, nt2 = nsub == 4 ? 13 : 19;
    for (int k = 0; k < nt2; ++k) {
        ids[k] = (5 + (float)(k - 9) * 0.1f) / max;
        scales[k] = 1 / ids[k];
    }
    static const gq_iqgrid_id iq2_grids[3] = { GQ_IQGRID_IQ2XXS, GQ_IQGRID_IQ2XS, GQ_IQGRID_IQ2S };
    const gq_iqgrid *g = gq_iqgrid_get(iq2_grids[fuzz_u64() % 3]);
    const gq_iq3_search *t = gq_iq3_search_tables(fuzz_u64() & 1 ? 512 : 256);
    if (!g || !t)
        return 1;
    int bad = 0;
    memset(&a2, 0, sizeof a2);
    memset(&b2, 0, sizeof b2);
    int ra = gq_iq2_trials_scalar(g, x, w, wa, nsub, nt2, ids, scales, &a2);
    int rb = iq2_trials_neon(g, x, w, wa, nsub, nt2, ids, scales, &b2);
    bad += ra != rb || (ra == 0 && memcmp(&a2, &b2, sizeof a2) != 0);
    const int nt3 = fuzz_u64() & 1 ? 31 : 19;
    for (int k = 0; k < nt3; ++k) {
        ids[k] = (15 + (float)(k - nt3 / 2) * 0.2f) / max;
        scales[k] = 1 / ids[k];
    }
    memset(&a3, 0, sizeof a3);
    memset(&b3, 0, sizeof b3);
    ra = gq_iq3_trials_scalar(t, x, w, wa, nt3, ids, scales, &a3);
    rb = iq3_trials_neon(t, x, w, wa, nt3, ids, scales, &b3);
    bad += ra != rb || (ra == 0 && memcmp(&a3, &b3, sizeof a3) != 0);
    return bad;
}

static int check_splits(const float *x, const float *w)
{
    float sumx[33] = { 0 }, sumw[33] = { 0 };
    gq_iq1m_sums ms;
    for (int j = 0; j < 32; ++j) {
        sumx[j + 1] = sumx[j] + w[j] * x[j];
        sumw[j + 1] = sumw[j] + w[j];
    }
    for (int h = 0; h < 2; ++h) {
        ms.sx[h][0] = ms.sw[h][0] = 0;
        for (int j = 0; j < 16; ++j) {
            ms.sx[h][j + 1] = ms.sx[h][j] + w[16 * h + j] * x[16 * h + j];
            ms.sw[h][j + 1] = ms.sw[h][j] + w[16 * h + j];
        }
    }
    int a1, a2, a3, b1, b2, b3, bad = 0;
    float sa = 0.5f, sb = 0.5f;
    bool ra = gq_iq1s_split_scalar(sumx, sumw, &a1, &a2, &a3, &sa);
    bool rb = iq1s_split_neon(sumx, sumw, &b1, &b2, &b3, &sb);
    bad += ra != rb || a1 != b1 || a2 != b2 || a3 != b3 || memcmp(&sa, &sb, 4) != 0;
    sa = sb = 0.5f;
    ra = gq_iq1m_split_scalar(&ms, &a1, &a2, &a3, &sa);
    rb = iq1m_split_neon(&ms, &b1, &b2, &b3, &sb);
    bad += ra != rb || a1 != b1 || a2 != b2 || a3 != b3 || memcmp(&sa, &sb, 4) != 0;
    int32_t oa[32], ob[32];
    const int n = fuzz_u64() & 1 ? 32 : 16;
    gq_iq1_sort_scalar(n, x, oa);
    iq1_sort_neon(n, x, ob);
    bad += memcmp(oa, ob, sizeof(int32_t) * (size_t)n) != 0;
    return bad;
}

/* A float moved by -2..2 ulps: candidates whose scores nearly tie. */
static float ulps_off(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    u += (uint32_t)(fuzz_u64() % 5) - 2;
    memcpy(&v, &u, 4);
    return v;
}

/* scan_chunk against the scalar's sequential loop over one chunk of nearly
 * tied candidates, so that a taken score can fall below the entry score. */
static int check_scan_chunk(void)
{
    const int nv = fuzz_u64() & 1 ? 4 : 2;
    const float bx = 1.0f + (float)(fuzz_u64() % 1000000) * 1e-5f;
    const float b2 = 0.5f + (float)(fuzz_u64() % 1000000) * 1e-5f;
    float qx[4][4], q2[4][4];
    for (int v = 0; v < nv; ++v)
        for (int l = 0; l < 4; ++l) {
            qx[v][l] = ulps_off(bx);
            q2[v][l] = fuzz_u64() % 17 == 0 ? -ulps_off(b2) : ulps_off(b2);
        }
    float s0 = ulps_off(ulps_off((bx / b2) * bx));
    if (fuzz_u64() % 5 == 0)
        s0 = -FLT_MAX;
    const unsigned valid = fuzz_u64() % 3 ? 0xFu : (unsigned)(fuzz_u64() % 16);
    split_best ref = { s0, 0.5f, -1, -1, -1 }, got = ref;
    for (int l = 0; l < 4; ++l)
        for (int v = 0; v < nv; ++v)
            if ((valid >> l & 1) && q2[v][l] > 0 && qx[v][l] * qx[v][l] > ref.score * q2[v][l]) {
                ref.scale = qx[v][l] / q2[v][l];
                ref.score = ref.scale * qx[v][l];
                ref.i1 = 3;
                ref.i2 = 10 + l;
                ref.variant = v;
            }
    float32x4_t vx[4], v2[4];
    for (int v = 0; v < nv; ++v) {
        vx[v] = vld1q_f32(qx[v]);
        v2[v] = vld1q_f32(q2[v]);
    }
    scan_chunk(vx, v2, nv, valid, 3, 10, &got);
    return memcmp(&ref.score, &got.score, 4) != 0 || memcmp(&ref.scale, &got.scale, 4) != 0 ||
           ref.i1 != got.i1 || ref.i2 != got.i2 || ref.variant != got.variant;
}

static void test_neon_searches_match_scalar(void **state)
{
    (void)state;
    int bad = 0;
    for (int it = 0; it < 3000; ++it) {
        const int xk = (int)(fuzz_u64() % 5), wk = (int)(fuzz_u64() % 4);
        float x[32], w[32], wa[32];
        for (int i = 0; i < 32; ++i) {
            x[i] = fuzz_value(xk);
            w[i] = fuzz_weight(wk);
            wa[i] = fuzz_weight(wk);
        }
        const float scale = xk == 1 || xk == 3 ? 0.5f * (float)(1 + fuzz_u64() % 4)
                                               : 0.05f + fuzz_unit();
        bad += check_grid_searches(x, w, wa, scale);
        if (it % 8 == 0)
            bad += check_trials(x, w, wa);
        if (it % 4 == 0)
            bad += check_splits(x, w);
    }
    for (int it = 0; it < 300000; ++it)
        bad += check_scan_chunk();
    assert_int_equal(bad, 0);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iq_quant_corners_match_scalar),
#if defined(__aarch64__)
        cmocka_unit_test(test_neon_searches_match_scalar),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
