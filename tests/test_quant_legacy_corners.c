/*
 * test_quant_legacy_corners.c — the SIMD quantizers of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
 * and Q8_1 (no imatrix; Q8 also with one, which it ignores) against the
 * scalar kernels, byte for byte, on blocks built to hit their corner cases:
 * NaN (quiet and signalling, first/middle/last), +-Inf, zeros of both signs
 * as the min or max (the scalar keeps the first zero it meets), +m and -m
 * ties (the scalar keeps the first), exact .5 ties for roundf and the
 * truncations, huge values (max - min overflows, F16 scale overflows) and
 * tiny ones (the scale underflows, or 1/d overflows). Every ISA this CPU
 * runs is checked, with block counts 1..9 (batch tails), an unaligned
 * destination and a guard against writes past the end. When ggml's library
 * is there (x86), the scalar kernels are checked against it on the same rows.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"

#define QK 32
#define NPAT 40 /* corner-case block patterns */

static float f_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Block pattern p (0..NPAT-1) at x; r varies the values around it. */
static void fill_pattern(float *x, int p, tu_rng *r)
{
    const float qnan = f_bits(0x7FC00000u), snan = f_bits(0x7F800001u), nnan = f_bits(0xFFC12345u);
    for (int j = 0; j < QK; j++)
        x[j] = tu_rand_gauss(r);
    const int at = (int)(tu_rand_u64(r) % QK);
    switch (p) {
    case 0: for (int j = 0; j < QK; j++) x[j] = 0.0f; break;
    case 1: for (int j = 0; j < QK; j++) x[j] = -0.0f; break;
    case 2: for (int j = 0; j < QK; j++) x[j] = (tu_rand_u64(r) & 1) ? 0.0f : -0.0f; break;
    case 3: x[0] = qnan; break;
    case 4: x[at] = snan; break;
    case 5: x[QK - 1] = nnan; break;
    case 6: for (int j = 0; j < QK; j++) x[j] = (j & 1) ? qnan : snan; break;
    case 7: x[at] = INFINITY; break;
    case 8: x[at] = -INFINITY; break;
    case 9: x[0] = INFINITY; x[QK - 1] = -INFINITY; break;
    case 10: x[at] = INFINITY; x[(at + 5) % QK] = qnan; break;
    case 11: for (int j = 0; j < QK; j++) x[j] = INFINITY; break;
    /* zeros as min (non-negative blocks) or max (non-positive), sign order varies */
    case 12: case 13: case 14: case 15: {
        const float sign = p < 14 ? 1.0f : -1.0f;
        for (int j = 0; j < QK; j++)
            x[j] = sign * fabsf(x[j]);
        x[at] = (p & 1) ? -0.0f : 0.0f;
        x[(at + 7) % QK] = (p & 1) ? 0.0f : -0.0f;
        break;
    }
    /* +m / -m ties, either first */
    case 16: x[3] = 5.0f; x[9] = -5.0f; break;
    case 17: x[3] = -5.0f; x[9] = 5.0f; break;
    case 18: for (int j = 0; j < QK; j++) x[j] = (j % 3) ? 2.0f : -2.0f; break;
    case 19: for (int j = 0; j < QK; j++) x[j] = 0.5f; break;
    /* exact ties: Q8 with amax 127 has d = 1 (roundf of k + 0.5); Q4/Q5 grids */
    case 20: for (int j = 0; j < QK; j++) x[j] = (float)((int)(tu_rand_u64(r) % 254) - 127) + 0.5f;
             x[0] = 127.0f; break;
    case 21: for (int j = 0; j < QK; j++) x[j] = (float)((int)(tu_rand_u64(r) % 33) - 16) * 0.25f;
             x[at] = -8.0f; break;
    case 22: for (int j = 0; j < QK; j++) x[j] = (float)((int)(tu_rand_u64(r) % 63)) * 0.5f - 15.5f; break;
    case 23: for (int j = 0; j < QK; j++) x[j] = (float)(tu_rand_u64(r) % 32) * 0.5f; break;
    /* huge: max - min overflows; scales beyond F16 */
    case 24: x[at] = 3.0e38f; x[(at + 1) % QK] = -3.0e38f; break;
    case 25: for (int j = 0; j < QK; j++) x[j] *= 1e37f; break;
    case 26: for (int j = 0; j < QK; j++) x[j] *= 1e6f; break;
    case 27: for (int j = 0; j < QK; j++) x[j] = 3.4e38f; break;
    case 28: for (int j = 0; j < QK; j++) x[j] = fabsf(x[j]) * 1e38f; break;
    /* tiny: the scale underflows to zero, is subnormal, or has no finite inverse */
    case 29: for (int j = 0; j < QK; j++) x[j] *= 1e-44f; break;
    case 30: for (int j = 0; j < QK; j++) x[j] *= 1e-40f; break;
    case 31: for (int j = 0; j < QK; j++) x[j] *= 1e-37f; break;
    case 32: for (int j = 0; j < QK; j++) x[j] *= 3e-36f; break;
    case 33: for (int j = 0; j < QK; j++) x[j] = f_bits((uint32_t)(tu_rand_u64(r) % 64)); break;
    case 34: for (int j = 0; j < QK; j++) x[j] = f_bits((uint32_t)tu_rand_u64(r)); break;
    case 35: for (int j = 0; j < QK; j++) x[j] = f_bits((uint32_t)(tu_rand_u64(r) & 0x807FFFFFu) | 0x00800000u);
             break;
    case 36: for (int j = 0; j < QK; j++) x[j] = x[j] * 1e-3f + 100.0f; break;   /* min far from 0 */
    case 37: for (int j = 0; j < QK; j++) x[j] = -fabsf(x[j]) - 1.0f; break;
    case 38: for (int j = 0; j < QK; j++) x[j] = 1.0f; x[at] = 1.0000001f; break;
    default: break;                                                               /* plain gauss */
    }
}

/* Run the kernel on x (nb blocks as one row) into a guarded, unaligned buffer. */
static int run(const gq_kernels *k, const float *x, int64_t nb, const float *im, uint8_t *buf,
               size_t bytes, int off)
{
    memset(buf, 0xA5, bytes + off + 64);
    return k->quantize(x, buf + off, 1, nb * QK, im);
}

static const int legacy_types[] = { GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q4_1, GGUFQ_TYPE_Q5_0,
                                    GGUFQ_TYPE_Q5_1, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q8_1 };

/* One type on one ISA: every pattern, in runs of 1..9 blocks. Returns mismatches. */
static int check_type(ggufq_isa isa, int type, const float *x, int64_t nb_all, const float *im)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_kernels *simd = gq_kernels_for_isa(isa, type);
    const gq_kernels *ref = gq_scalar_kernels(type);
    if (!simd || !simd->quantize || simd->quantize == ref->quantize)
        return 0;
    const size_t max_bytes = (size_t)nb_all * tt->block_bytes;
    uint8_t *a = malloc(max_bytes + 128), *b = malloc(max_bytes + 128);
    int bad = 0;
    int64_t b0 = 0;
    for (int run_len = 1; b0 < nb_all && bad < 5; run_len = run_len % 9 + 1) {
        const int64_t nb = b0 + run_len <= nb_all ? run_len : nb_all - b0;
        const size_t bytes = (size_t)nb * tt->block_bytes;
        const int off = (int)(b0 % 4);
        const int ra = run(ref, x + b0 * QK, nb, NULL, a, bytes, off);
        const int rb = run(simd, x + b0 * QK, nb, im, b, bytes, off);
        if (ra != rb || memcmp(a, b, bytes + off + 64) != 0) {
            size_t at = 0;
            while (at < bytes + off + 64 && a[at] == b[at])
                at++;
            fprintf(stderr, "%s quantize %s: blocks %lld..%lld%s: status %d/%d, first differing byte %lld "
                    "(block %lld)\n", ggufq_isa_name(isa), tt->name, (long long)b0,
                    (long long)(b0 + nb - 1), im ? " (imatrix)" : "", ra, rb, (long long)at - off,
                    (long long)b0 + ((long long)at - off) / (long long)tt->block_bytes);
            bad++;
        }
        b0 += nb;
    }
    free(a);
    free(b);
    return bad;
}

/* nb_all blocks: every pattern several times, shuffled among plain blocks. */
static float *make_blocks(int64_t *nb_out)
{
    const int reps = 6;
    const int64_t nb = (int64_t)NPAT * reps * 2;
    float *x = malloc(sizeof(float) * (size_t)(nb * QK));
    tu_rng r = { 0x1E6AC7u };
    for (int64_t i = 0; i < nb; i++) {
        const int p = (i & 1) ? (int)((i / 2) % NPAT) : (int)(tu_rand_u64(&r) % (NPAT + 8));
        fill_pattern(x + i * QK, p, &r);
    }
    *nb_out = nb;
    return x;
}

static void test_simd_quantizers_corner_cases(void **state)
{
    (void)state;
    int64_t nb;
    float *x = make_blocks(&nb);
    float *im = malloc(sizeof(float) * (size_t)(nb * QK));
    for (int64_t i = 0; i < nb * QK; i++)
        im[i] = 0.5f + (float)(i % 7);
    int bad = 0, isas = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        isas++;
        for (size_t t = 0; t < sizeof legacy_types / sizeof legacy_types[0]; t++) {
            const int type = legacy_types[t];
            bad += check_type((ggufq_isa)isa, type, x, nb, NULL);
            if (type == GGUFQ_TYPE_Q8_0 || type == GGUFQ_TYPE_Q8_1) /* imatrix ignored */
                bad += check_type((ggufq_isa)isa, type, x, nb, im);
        }
    }
    printf("%lld corner-case blocks, %d SIMD ISAs checked\n", (long long)nb, isas);
    free(x);
    free(im);
    assert_int_equal(bad, 0);
}

/* The scalar kernels on the same blocks against ggml's (x86 peer only). */
static void test_scalar_corner_cases_match_ggml(void **state)
{
    (void)state;
    const pk_peer *peer = tu_peer();
    if (!peer) {
        printf("no peer: skipped\n");
        return;
    }
    int64_t nb;
    float *x = make_blocks(&nb);
    int bad = 0;
    for (size_t t = 0; t < sizeof legacy_types / sizeof legacy_types[0]; t++) {
        const int type = legacy_types[t];
        const gq_type_traits *tt = gq_type_traits_of(type);
        pk_kernels pk;
        if (!pk_kernels_of(peer, (ggufq_type)type, &pk)) {
            bad++;
            continue;
        }
        const size_t bytes = (size_t)nb * tt->block_bytes;
        uint8_t *a = calloc(1, bytes), *b = calloc(1, bytes);
        gq_scalar_kernels(type)->quantize(x, a, 1, nb * QK, NULL);
        pk_quantize(&pk, x, b, 1, nb * QK, NULL);
        const int64_t at = tu_first_byte_diff(a, b, bytes);
        if (at >= 0) {
            fprintf(stderr, "scalar %s differs from ggml at byte %lld (block %lld)\n", tt->name,
                    (long long)at, (long long)(at / tt->block_bytes));
            bad++;
        }
        free(a);
        free(b);
    }
    free(x);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simd_quantizers_corner_cases),
        cmocka_unit_test(test_scalar_corner_cases_match_ggml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
