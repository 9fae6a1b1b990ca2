/*
 * test_quant_small_corners.c — corner cases for the SIMD quantizers of the
 * small families (Q1_0, Q2_0, TQ1_0, TQ2_0, MXFP4, NVFP4, IQ4_NL, IQ4_XS),
 * written for the NEON kernels but run on every SIMD ISA this CPU has (on
 * x86 the AVX2 / AVX-512 kernels get the same inputs; with no SIMD ISA the
 * test passes with a message).
 *
 * test_simd feeds random finite rows. Here each block of a row is built by
 * one of many recipes aimed at the kernels' special paths: NaN (quiet,
 * signalling, either sign; one, several, all), +-Inf, all-zero and all -0
 * blocks, all-equal blocks, huge values whose sums overflow, subnormal and
 * tiny maxima (1/amax overflowing: the TQ/Q2_0 scalar fallbacks and x86
 * conversions), values on exact rounding ties (x * id = k + 0.5, FP4
 * codebook midpoints, IQ4 codebook midpoints), groups below IQ4's epsilon,
 * and an MXFP4/NVFP4 sweep of the scale over every float exponent with the
 * mantissas around the exponent shortcut's bound (checked against this
 * platform's libm log2f through the scalar kernel). IQ4 types run without
 * imatrix, with a random one, and with one holding zeros, huge values and a
 * NaN. Block counts 1..11 exercise the tails of multi-block steps, and the
 * destination is offset by 0..3 bytes. Outputs must match the scalar
 * quantizer byte for byte, with the same status.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"

static const int small_types[] = {
    GGUFQ_TYPE_Q1_0,  GGUFQ_TYPE_Q2_0,  GGUFQ_TYPE_TQ1_0,  GGUFQ_TYPE_TQ2_0,
    GGUFQ_TYPE_MXFP4, GGUFQ_TYPE_NVFP4, GGUFQ_TYPE_IQ4_NL, GGUFQ_TYPE_IQ4_XS,
};
#define N_TYPES ((int)(sizeof small_types / sizeof small_types[0]))
#define N_RECIPES 24

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int rand_int(tu_rng *rng, int lo, int hi) /* lo..hi inclusive */
{
    return lo + (int)(tu_rand_u64(rng) % (uint64_t)(hi - lo + 1));
}

static float rand_pow2(tu_rng *rng, int lo, int hi)
{
    return ldexpf(1.0f, rand_int(rng, lo, hi));
}

static float any_nan(tu_rng *rng)
{
    const uint32_t payload = (uint32_t)(tu_rand_u64(rng) & 0x7FFFFFu);
    uint32_t u = 0x7F800000u | (payload ? payload : 1u); /* quiet or signalling */
    if (tu_rand_u64(rng) & 1)
        u |= 0x80000000u;
    return from_bits(u);
}

/* One block of n weights by recipe r. */
static void fill_block(tu_rng *rng, float *x, int n, int r)
{
    const int at = rand_int(rng, 0, n - 1);
    for (int j = 0; j < n; j++)
        x[j] = tu_rand_gauss(rng);
    switch (r) {
    case 0: break;                                                     /* plain */
    case 1: memset(x, 0, sizeof(float) * (size_t)n); break;           /* +0 */
    case 2: for (int j = 0; j < n; j++) x[j] = -0.0f; break;
    case 3: { const float c = (tu_rand_u64(rng) & 1) ? 0.5f : -3.0f;    /* all equal */
              for (int j = 0; j < n; j++) x[j] = c; } break;
    case 4: x[at] = any_nan(rng); break;                               /* one NaN */
    case 5: for (int k = 0; k < 4; k++) x[rand_int(rng, 0, n - 1)] = any_nan(rng);
            x[0] = any_nan(rng); x[n - 1] = any_nan(rng); break;
    case 6: for (int j = 0; j < n; j++) x[j] = any_nan(rng); break;
    case 7: x[at] = INFINITY; break;
    case 8: x[at] = -INFINITY; x[rand_int(rng, 0, n - 1)] = INFINITY; break;
    case 9: x[at] = any_nan(rng); x[rand_int(rng, 0, n - 1)] = -INFINITY; break;
    case 10: for (int j = 0; j < n; j++) x[j] *= 1e38f;                /* sums overflow */
             x[at] = (tu_rand_u64(rng) & 1) ? FLT_MAX : -FLT_MAX; break;
    case 11: for (int j = 0; j < n; j++) x[j] *= 1e-40f; break;       /* subnormal amax */
    case 12: { const float s = rand_pow2(rng, -149, -120);             /* 1/amax near overflow */
               for (int j = 0; j < n; j++) x[j] = s * (float)rand_int(rng, -3, 3); } break;
    case 13: for (int j = 0; j < n; j++) x[j] *= 1e-41f;              /* one normal, rest tiny */
             x[at] = 1.0f; break;
    case 14: { const float s = rand_pow2(rng, -20, 20);                /* x * id on k/8: ties at .5 */
               for (int j = 0; j < n; j++) x[j] = s * (float)rand_int(rng, -8, 8) / 4.0f;
               x[at] = (tu_rand_u64(rng) & 1) ? 2 * s : -2 * s; } break;
    case 15: { const float s = rand_pow2(rng, -20, 20);                /* FP4 entries and midpoints */
               for (int j = 0; j < n; j++) x[j] = s * (float)rand_int(rng, -26, 26) / 2.0f;
               x[at] = 12 * s; } break;
    case 16: { const float s = rand_pow2(rng, -12, 12);                /* IQ4: v = half-integers */
               for (int j = 0; j < n; j++) x[j] = s * (float)rand_int(rng, -254, 254) / 2.0f;
               for (int g = 0; g < n; g += 32) x[g + rand_int(rng, 0, 31)] = -127 * s; } break;
    case 17: { const float s = powf(10.0f, tu_rand_uniform(rng) * 83.0f - 45.0f);
               for (int j = 0; j < n; j++) x[j] *= s; } break;
    case 18: for (int j = 0; j < n; j++) if (tu_rand_u64(rng) % 8) x[j] = 0.0f; break;
    case 19: { const float c = tu_rand_gauss(rng);                     /* equal |x|, both signs */
               for (int j = 0; j < n; j++) x[j] = (tu_rand_u64(rng) & 1) ? c : -c; } break;
    case 20: { const float s = from_bits((uint32_t)rand_int(rng, 1, 3) << 23);  /* amax ~ 2^-125 */
               for (int j = 0; j < n; j++) x[j] = s * tu_rand_uniform(rng);
               x[at] = s; } break;
    case 21: for (int j = 0; j < n; j++) x[j] *= 1e-16f; break;       /* below IQ4's epsilon */
    case 22: for (int j = 0; j < n; j++) x[j] = tu_rand_uniform(rng) * 2 - 1;  /* rounding near 1 */
             x[at] = 1.0f; break;
    default: for (int j = 0; j < n; j++)                               /* random bit patterns */
                 x[j] = from_bits((uint32_t)tu_rand_u64(rng));
             break;
    }
}

/* imatrix variant v: 0 none, 1 random, 2 with zeros, huge values and a NaN. */
static const float *make_imatrix(tu_rng *rng, float *im, int64_t n, int v)
{
    if (v == 0)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        im[i] = tu_rand_uniform(rng) * 4 + 0.01f;
    if (v == 2)
        for (int64_t i = 0; i < n; i++) {
            const uint64_t u = tu_rand_u64(rng) % 16;
            im[i] = u < 3 ? 0.0f : u == 3 ? 1e30f : im[i];
        }
    if (v == 2 && n > 5)
        im[5] = NAN;
    return im;
}

/* Quantize x (nrows x n_per_row) with both kernels; returns 1 on a mismatch (reported). */
static int compare_quant(ggufq_isa isa, int type, const float *x, int64_t nrows, int64_t n_per_row,
                         const float *im, int dst_off, const char *what)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_quant_fn simd = gq_kernels_for_isa(isa, type)->quantize;
    const gq_quant_fn ref = gq_scalar_kernels(type)->quantize;
    const size_t bytes = (size_t)(nrows * n_per_row / tt->block_size) * tt->block_bytes;
    uint8_t *qa = malloc(bytes + 8), *qb = malloc(bytes + 8);
    assert_non_null(qa);
    assert_non_null(qb);
    memset(qa, 0x00, bytes + 8);
    memset(qb, 0xA5, bytes + 8);
    const int ra = ref(x, qa + dst_off, nrows, n_per_row, im);
    const int rb = simd(x, qb + dst_off, nrows, n_per_row, im);
    int bad = ra != rb || (ra == GGUFQ_OK && memcmp(qa + dst_off, qb + dst_off, bytes) != 0);
    for (int i = 0; i < dst_off; i++) /* nothing written before dst */
        bad |= qb[i] != 0xA5;
    for (size_t i = bytes + (size_t)dst_off; i < bytes + 8; i++) /* nor after it */
        bad |= qb[i] != 0xA5;
    if (bad) {
        size_t at = 0;
        while (at < bytes && qa[dst_off + at] == qb[dst_off + at])
            at++;
        fprintf(stderr, "%s quantize %s (%s): status %d/%d, first differing byte %zu of %zu "
                "(block %zu: scalar %02x, simd %02x)\n", ggufq_isa_name(isa), tt->name, what, ra, rb,
                at, bytes, at / tt->block_bytes, at < bytes ? qa[dst_off + at] : 0,
                at < bytes ? qb[dst_off + at] : 0);
    }
    free(qa);
    free(qb);
    return bad;
}

static int is_iq4(int type)
{
    return type == GGUFQ_TYPE_IQ4_NL || type == GGUFQ_TYPE_IQ4_XS;
}

/* Each recipe on whole rows, then rows mixing all recipes block by block. */
static int check_recipes(ggufq_isa isa, int type, tu_rng *rng)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const int bs = (int)tt->block_size;
    const int64_t n_per_row = bs * (bs >= 256 ? 2 : 5), nrows = 2, n = n_per_row * nrows;
    float *x = malloc(sizeof(float) * (size_t)n), *im = malloc(sizeof(float) * (size_t)n_per_row);
    assert_non_null(x);
    assert_non_null(im);
    int bad = 0;
    char what[64];
    for (int r = 0; r <= N_RECIPES; r++) { /* r == N_RECIPES: a different recipe per block */
        for (int64_t b = 0; b < n / bs; b++)
            fill_block(rng, x + b * bs, bs, r < N_RECIPES ? r : (int)(b % N_RECIPES));
        for (int v = 0; v < (is_iq4(type) ? 3 : 1); v++) {
            const float *imat = make_imatrix(rng, im, n_per_row, v);
            snprintf(what, sizeof what, "recipe %d, imatrix %d", r, v);
            bad += compare_quant(isa, type, x, nrows, n_per_row, imat, r % 4, what);
        }
    }
    free(x);
    free(im);
    return bad;
}

/* One row of 1..11 blocks, mixed recipes: the tails of multi-block steps. */
static int check_block_counts(ggufq_isa isa, int type, tu_rng *rng)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const int bs = (int)tt->block_size;
    float *x = malloc(sizeof(float) * (size_t)bs * 11);
    assert_non_null(x);
    int bad = 0;
    char what[64];
    for (int nb = 1; nb <= 11; nb++) {
        for (int b = 0; b < nb; b++)
            fill_block(rng, x + b * bs, bs, rand_int(rng, 0, N_RECIPES - 1));
        snprintf(what, sizeof what, "%d blocks", nb);
        bad += compare_quant(isa, type, x, 1, (int64_t)bs * nb, NULL, nb % 4, what);
    }
    free(x);
    return bad;
}

/* MXFP4 / NVFP4: the block maximum at every float exponent, with mantissas
 * around the exponent shortcut's bound 0x7FF000. */
static int check_fp4_scale_sweep(ggufq_isa isa, int type, tu_rng *rng)
{
    static const uint32_t mants[] = { 0, 1, 0x400000, 0x7FEFFF, 0x7FF000, 0x7FF001, 0x7FFFFF };
    const int nm = (int)(sizeof mants / sizeof mants[0]);
    const int bs = (int)gq_type_traits_of(type)->block_size;
    const int64_t nblocks = 255 * nm;
    float *x = malloc(sizeof(float) * (size_t)(nblocks * bs));
    assert_non_null(x);
    for (int e = 0; e < 255; e++)
        for (int m = 0; m < nm; m++) {
            float *xb = x + (int64_t)(e * nm + m) * bs;
            const float amax = from_bits((uint32_t)e << 23 | mants[m]);
            for (int j = 0; j < bs; j++)
                xb[j] = amax * (tu_rand_uniform(rng) * 2 - 1);
            for (int g = 0; g < bs; g += 16) /* every NVFP4 sub-block reaches it */
                xb[g + rand_int(rng, 0, 15)] = (tu_rand_u64(rng) & 1) ? amax : -amax;
        }
    const int bad = compare_quant(isa, type, x, 1, nblocks * bs, NULL, 1, "scale sweep");
    free(x);
    return bad;
}

static void test_small_quantizers_corner_cases(void **state)
{
    (void)state;
    int checked_isas = 0, bad = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        checked_isas++;
        int simd_types = 0;
        for (int k = 0; k < N_TYPES; k++) {
            const int type = small_types[k];
            const gq_kernels *kern = gq_kernels_for_isa((ggufq_isa)isa, type);
            const gq_kernels *ref = gq_scalar_kernels(type);
            assert_non_null(ref);
            if (!kern || !kern->quantize || kern->quantize == ref->quantize)
                continue;
            simd_types++;
            tu_rng rng = { 0xC0FFEE00u + (uint64_t)type * 131 + (uint64_t)isa };
            bad += check_recipes((ggufq_isa)isa, type, &rng);
            bad += check_block_counts((ggufq_isa)isa, type, &rng);
            if (type == GGUFQ_TYPE_MXFP4 || type == GGUFQ_TYPE_NVFP4)
                bad += check_fp4_scale_sweep((ggufq_isa)isa, type, &rng);
        }
        printf("%s: %d of %d small types have SIMD quantizers, compared against scalar\n",
               ggufq_isa_name((ggufq_isa)isa), simd_types, N_TYPES);
    }
    if (!checked_isas)
        printf("no SIMD ISA runs on this CPU: nothing to compare\n");
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_quantizers_corner_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
