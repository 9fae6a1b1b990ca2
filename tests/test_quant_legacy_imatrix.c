/*
 * test_quant_legacy_imatrix.c — the SIMD importance-matrix quantizers of
 * Q4_0, Q4_1, Q5_0 and Q5_1 (src/simd/<isa>/legacy_imatrix_<isa>.c) against
 * the scalar gq_quantize_<t> with the same imatrix, byte for byte, on every
 * ISA this CPU runs. The entry points are called directly, so they are
 * checked whether or not that ISA's legacy quantizer forwards to them yet.
 *
 * Corner cases test_simd.c does not reach: NaN/Inf/huge/subnormal weights
 * (NaN in a block's first place too), zero and NaN imatrix entries,
 * all-zero and all-equal blocks, ties of the level rounding, rows of one
 * block, and group tails (block counts that are not a multiple of the lanes,
 * groups spanning row ends).
 */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"
#include "simd/simd.h"
#include "tu_rng.h"

typedef int (*quant_fn)(const float *, void *, int64_t, int64_t, const float *);

static const int types[4] = { GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q4_1, GGUFQ_TYPE_Q5_0, GGUFQ_TYPE_Q5_1 };

/* The ISA's entry point for types[ti], NULL if this build has none. */
static quant_fn isa_kernel(ggufq_isa isa, int ti)
{
#if defined(__x86_64__) || defined(__i386__)
    static const quant_fn avx2[4] = { gq_avx2_quantize_q4_0_imatrix,
                                      gq_avx2_quantize_q4_1_imatrix,
                                      gq_avx2_quantize_q5_0_imatrix,
                                      gq_avx2_quantize_q5_1_imatrix };
    static const quant_fn avx512[4] = { gq_avx512_quantize_q4_0_imatrix,
                                        gq_avx512_quantize_q4_1_imatrix,
                                        gq_avx512_quantize_q5_0_imatrix,
                                        gq_avx512_quantize_q5_1_imatrix };
    if (isa == GGUFQ_ISA_AVX2)
        return avx2[ti];
    if (isa == GGUFQ_ISA_AVX512)
        return avx512[ti];
#elif defined(__aarch64__)
    static const quant_fn neon[4] = { gq_neon_quantize_q4_0_imatrix,
                                      gq_neon_quantize_q4_1_imatrix,
                                      gq_neon_quantize_q5_0_imatrix,
                                      gq_neon_quantize_q5_1_imatrix };
    if (isa == GGUFQ_ISA_NEON)
        return neon[ti];
#endif
    (void)isa;
    (void)ti;
    return NULL;
}

enum { N_DISTS = 12 };

/* Weights of distribution dist; some blocks get a special pattern. */
static void fill(tu_rng *rng, float *x, int64_t n, int dist)
{
    for (int64_t i = 0; i < n; i++) {
        float v = tu_rand_gauss(rng);
        const int64_t blk = i / 32, j = i % 32;
        const uint64_t pick = tu_rand_u64(rng) % 64;
        switch (dist) {
        case 0: break;
        case 1: if (pick == 0) v = NAN; break;                       /* scattered NaN */
        case 2: if (j == 0 && blk % 3 == 1) v = NAN; break;          /* NaN first in block */
        case 3: if (pick == 0) v = INFINITY; if (pick == 1) v = -INFINITY; break;
        case 4: v *= (blk % 4 == 0) ? 3e38f : 1.0f; break;           /* huge: overflowing sums */
        case 5: v *= 1e-39f; break;                                  /* subnormal */
        case 6: if (blk % 2 == 0) v = 0.0f; break;                   /* all-zero blocks */
        case 7: v = (blk % 2 == 0) ? 0.75f : -2.0f; break;           /* all-equal blocks */
        case 8: v = (float)((int)(tu_rand_u64(rng) % 33) - 16) * 0.25f; break; /* ties */
        case 9: v = (blk % 3 == 0) ? 0.0f : (j == 5 ? 1e-31f : 0.0f); break;  /* tiny amax */
        case 10: v = (j < 16) ? 1.0f : -1.0f; if (blk % 2) v = -v; break;
        default: v = fabsf(v) + 1.0f; break;                          /* all positive: min 0 */
        }
        x[i] = v;
    }
}

static void fill_imatrix(tu_rng *rng, float *im, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        float v = tu_rand_uniform(rng) * 4 + 0.01f;
        if (kind == 1 && (i / 32) % 2 == 0)
            v = 0.0f;                                    /* a whole block weightless */
        if (kind == 2 && tu_rand_u64(rng) % 5 == 0)
            v = 0.0f;                                    /* scattered zeros */
        if (kind == 3 && i % 37 == 3)
            v = NAN;
        im[i] = v;
    }
}

/*
 * Equal blocks, but for the sign of NaN fp16 scales (d, and m of Q4_1/Q5_1:
 * the first 2 or 4 bytes of a block). When a scale is NaN, its sign comes
 * from which of two NaN operands the compiler put first, which differs
 * between -O0 and -O2 builds of the scalar code (the promise is NaN where
 * ggml gives NaN); everything else must match byte for byte.
 */
static bool same_blocks(const uint8_t *a, const uint8_t *b, size_t bytes, size_t block_bytes, size_t scale_bytes)
{
    for (size_t off = 0; off < bytes; off += block_bytes) {
        for (size_t j = 0; j < scale_bytes; j += 2) {
            const uint16_t ha = (uint16_t)(a[off + j] | a[off + j + 1] << 8);
            const uint16_t hb = (uint16_t)(b[off + j] | b[off + j + 1] << 8);
            const bool nan_a = (ha & 0x7C00) == 0x7C00 && (ha & 0x03FF) != 0;
            const bool nan_b = (hb & 0x7C00) == 0x7C00 && (hb & 0x03FF) != 0;
            if (nan_a != nan_b || (!nan_a && ha != hb) || (nan_a && (ha & 0x7FFF) != (hb & 0x7FFF)))
                return false;
        }
        if (memcmp(a + off + scale_bytes, b + off + scale_bytes, block_bytes - scale_bytes) != 0)
            return false;
    }
    return true;
}

static int check_shape(ggufq_isa isa, int ti, tu_rng *rng, int64_t nrows, int64_t nb)
{
    const quant_fn simd = isa_kernel(isa, ti);
    const gq_kernels *ref = gq_scalar_kernels(types[ti]);
    const gq_type_traits *tt = gq_type_traits_of(types[ti]);
    if (!simd || !ref || !tt)
        return 0;
    const int64_t n_per_row = 32 * nb;
    const size_t bytes = (size_t)(nrows * nb) * tt->block_bytes;
    float *x = malloc(sizeof(float) * (size_t)(nrows * n_per_row));
    float *im = malloc(sizeof(float) * (size_t)n_per_row);
    uint8_t *qa = malloc(bytes + 1), *qb = malloc(bytes + 1);
    int bad = 0;
    for (int dist = 0; dist < N_DISTS && !bad; dist++) {
        for (int kind = 0; kind < 4 && !bad; kind++) {
            fill(rng, x, nrows * n_per_row, dist);
            fill_imatrix(rng, im, n_per_row, kind);
            memset(qa, 0x11, bytes + 1);
            memset(qb, 0x11, bytes + 1);
            const int ra = ref->quantize(x, qa, nrows, n_per_row, im);
            const int rb = simd(x, qb, nrows, n_per_row, im);
            const size_t scale_bytes = types[ti] == GGUFQ_TYPE_Q4_1 || types[ti] == GGUFQ_TYPE_Q5_1 ? 4 : 2;
            if (ra != rb || qa[bytes] != qb[bytes] || !same_blocks(qa, qb, bytes, tt->block_bytes, scale_bytes)) {
                size_t at = 0;
                while (at < bytes + 1 && qa[at] == qb[at])
                    at++;
                fprintf(stderr, "%s %s imatrix: %lld rows x %lld blocks, dist %d, imatrix kind %d: "
                        "status %d/%d, first differing byte %zu of %zu (block %zu)\n",
                        ggufq_isa_name(isa), tt->name, (long long)nrows, (long long)nb, dist, kind,
                        ra, rb, at, bytes, at / tt->block_bytes);
                bad++;
            }
        }
    }
    free(x);
    free(im);
    free(qa);
    free(qb);
    return bad;
}

static void test_legacy_imatrix_matches_scalar(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {
        { 1, 1 }, { 37, 1 }, { 1, 17 }, { 3, 13 }, { 5, 7 }, { 2, 33 }, { 19, 2 }, { 4, 16 },
    };
    int bad = 0, checked = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa) || !isa_kernel((ggufq_isa)isa, 0))
            continue;
        checked++;
        for (int ti = 0; ti < 4; ti++) {
            tu_rng rng = { 0x1E6AC70u + (uint64_t)ti * 131 + (uint64_t)isa };
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                bad += check_shape((ggufq_isa)isa, ti, &rng, shapes[s][0], shapes[s][1]);
        }
        printf("%s: legacy imatrix quantizers compared against scalar\n",
               ggufq_isa_name((ggufq_isa)isa));
    }
    if (!checked)
        printf("no SIMD ISA runs on this CPU: nothing to compare\n");
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_imatrix_matches_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
