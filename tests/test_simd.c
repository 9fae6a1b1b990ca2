/*
 * test_simd.c — every SIMD kernel against its scalar twin, bit for bit.
 *
 * For each ISA this CPU runs (besides scalar) and each type: random block
 * bytes (any bit pattern, so NaN/Inf scales too), and in every other round
 * blocks whose scale fields are forced to NaNs of several payloads and both
 * signs, +-Inf, +-0, subnormals, the largest finite values (pk_force_scales);
 * block counts from 1 to 67 (odd counts exercise the tails), source and
 * destination pointers off by 0..3 bytes from alignment. Outputs must be
 * bitwise identical, NaN payloads and signs included. Quantizers, where an
 * ISA has its own, get the same treatment on random float rows.
 */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"

#define MAX_BLOCKS 67

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}


/* Compare one ISA's dequantizer with scalar for one type; returns mismatches. */
static int check_dequant(ggufq_isa isa, int type, tu_rng *rng)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_kernels *simd = gq_kernels_for_isa(isa, type);
    const gq_kernels *ref = gq_scalar_kernels(type);
    if (!tt || !simd || !ref || simd->dequantize == ref->dequantize)
        return 0;
    const pk_type *scales = pk_type_of((ggufq_type)type);   /* NULL: no scale fields to force */
    const size_t max_bytes = MAX_BLOCKS * tt->block_bytes + 8;
    const size_t max_w = (size_t)MAX_BLOCKS * (size_t)tt->block_size + 8;
    uint8_t *src = malloc(max_bytes);
    float *a = malloc(max_w * sizeof(float)), *b = malloc(max_w * sizeof(float));
    int bad = 0;
    for (int iter = 0; iter < 200 && !bad; iter++) {
        const int nblk = 1 + (int)(tu_rand_u64(rng) % MAX_BLOCKS);
        const size_t so = tu_rand_u64(rng) % 4, dof = tu_rand_u64(rng) % 4;
        const int64_t n = nblk * tt->block_size;
        for (size_t i = 0; i < max_bytes; i++)
            src[i] = (uint8_t)tu_rand_u64(rng);
        const bool special = scales && iter % 2 == 1;
        if (special)
            for (int b = 0; b < nblk; b++)
                pk_force_scales(scales, tu_rand_u64(rng), src + so + (size_t)b * tt->block_bytes);
        memset(a, 0x5A, max_w * sizeof(float));
        memset(b, 0xA5, max_w * sizeof(float));
        ref->dequantize(src + so, a + dof, n);
        simd->dequantize(src + so, b + dof, n);
        for (int64_t i = 0; i < n; i++) {
            if (!same_bits(a[dof + i], b[dof + i])) {
                uint32_t ua, ub;
                memcpy(&ua, &a[dof + i], 4);
                memcpy(&ub, &b[dof + i], 4);
                const uint8_t *blk = src + so + (size_t)(i / tt->block_size) * tt->block_bytes;
                fprintf(stderr, "%s dequantize %s: weight %lld of %lld (block %lld): "
                        "scalar %a (0x%08x), simd %a (0x%08x) (iter %d%s, src+%zu, dst+%zu; "
                        "block bytes %02x %02x %02x %02x...)\n",
                        ggufq_isa_name(isa), tt->name, (long long)i, (long long)n,
                        (long long)(i / tt->block_size), a[dof + i], ua, b[dof + i], ub, iter,
                        special ? ", special scales" : "", so, dof, blk[0], blk[1], blk[2], blk[3]);
                bad++;
                break;
            }
        }
        /* nothing written outside [dof, dof + n) */
        if (!bad && ((dof && ((uint8_t *)b)[0] != 0xA5) ||
                     ((uint8_t *)(b + dof + n))[0] != 0xA5)) {
            fprintf(stderr, "%s dequantize %s: wrote outside its output\n",
                    ggufq_isa_name(isa), tt->name);
            bad++;
        }
    }
    free(src);
    free(a);
    free(b);
    return bad;
}

/*
 * One ISA's fused half-output dequantizer (F16 or BF16) against the scalar
 * decoder followed by the scalar conversion; returns mismatches. Same random
 * and special blocks, same offsets as check_dequant (dst stays 2-byte aligned,
 * which ggufq_dequantize_to guarantees its kernels).
 */
static int check_half(ggufq_isa isa, int type, bool bf16, tu_rng *rng)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_kernels *simd = gq_kernels_for_isa(isa, type);
    const gq_kernels *ref = gq_scalar_kernels(type);
    const gq_kernels *conv = gq_scalar_kernels(bf16 ? GGUFQ_TYPE_BF16 : GGUFQ_TYPE_F16);
    const gq_dequant_half_fn fused = simd ? (bf16 ? simd->dequantize_bf16 : simd->dequantize_f16) : NULL;
    if (!tt || !fused || !ref)
        return 0;
    const pk_type *scales = pk_type_of((ggufq_type)type);
    const size_t max_bytes = MAX_BLOCKS * tt->block_bytes + 8;
    const size_t max_w = (size_t)MAX_BLOCKS * (size_t)tt->block_size + 8;
    uint8_t *src = malloc(max_bytes);
    float *f = malloc(max_w * sizeof(float));
    uint16_t *a = malloc(max_w * 2), *b = malloc(max_w * 2);
    int bad = 0;
    for (int iter = 0; iter < 200 && !bad; iter++) {
        const int nblk = 1 + (int)(tu_rand_u64(rng) % MAX_BLOCKS);
        const size_t so = tu_rand_u64(rng) % 4, dof = tu_rand_u64(rng) % 4;
        const int64_t n = nblk * tt->block_size;
        for (size_t i = 0; i < max_bytes; i++)
            src[i] = (uint8_t)tu_rand_u64(rng);
        const bool special = scales && iter % 2 == 1;
        if (special)
            for (int blk = 0; blk < nblk; blk++)
                pk_force_scales(scales, tu_rand_u64(rng), src + so + (size_t)blk * tt->block_bytes);
        memset(a, 0x5A, max_w * 2);
        memset(b, 0xA5, max_w * 2);
        ref->dequantize(src + so, f, n);
        (void)conv->quantize(f, a + dof, 1, n, NULL);
        fused(src + so, b + dof, n);
        for (int64_t i = 0; i < n; i++) {
            if (a[dof + i] != b[dof + i]) {
                fprintf(stderr, "%s dequantize %s to %s: weight %lld of %lld: scalar %a -> 0x%04x, "
                        "fused 0x%04x (iter %d%s, src+%zu, dst+%zu)\n", ggufq_isa_name(isa),
                        tt->name, bf16 ? "bf16" : "f16", (long long)i, (long long)n, f[i],
                        a[dof + i], b[dof + i], iter, special ? ", special scales" : "", so, dof);
                bad++;
                break;
            }
        }
        if (!bad && ((dof && b[0] != 0xA5A5) || b[dof + n] != 0xA5A5)) {
            fprintf(stderr, "%s dequantize %s to %s: wrote outside its output\n",
                    ggufq_isa_name(isa), tt->name, bf16 ? "bf16" : "f16");
            bad++;
        }
    }
    free(src);
    free(f);
    free(a);
    free(b);
    return bad;
}

static void fill_row(tu_rng *rng, float *x, int64_t n, int dist)
{
    for (int64_t i = 0; i < n; i++) {
        float v = tu_rand_gauss(rng);
        switch (dist) {
        case 0: break;
        case 1: v *= 1e-3f; break;
        case 2: v = tu_rand_uniform(rng) * 2 - 1; break;
        case 3: v = (tu_rand_u64(rng) % 50 == 0) ? v * 50 : v; break;
        case 4: v = (i / 32) % 3 == 0 ? 0.0f : v; break;
        default: v = 0.5f; break;
        }
        x[i] = v;
    }
}

/* Compare one ISA's quantizer with scalar for one type; returns mismatches. */
static int check_quant(ggufq_isa isa, int type, tu_rng *rng)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    const gq_kernels *simd = gq_kernels_for_isa(isa, type);
    const gq_kernels *ref = gq_scalar_kernels(type);
    if (!tt || !simd || !ref || !simd->quantize || simd->quantize == ref->quantize)
        return 0;
    const int64_t n_per_row = tt->block_size * (tt->block_size >= 256 ? 3 : 13);
    const int64_t nrows = 3;
    const size_t bytes = (size_t)(n_per_row / tt->block_size) * tt->block_bytes * nrows;
    float *x = malloc(sizeof(float) * (size_t)(n_per_row * nrows));
    float *imat = malloc(sizeof(float) * (size_t)n_per_row);
    uint8_t *qa = malloc(bytes), *qb = malloc(bytes);
    int bad = 0;
    for (int dist = 0; dist < 6 && !bad; dist++) {
        for (int use_imat = 0; use_imat < 2 && !bad; use_imat++) {
            fill_row(rng, x, n_per_row * nrows, dist);
            for (int64_t i = 0; i < n_per_row; i++)
                imat[i] = tu_rand_uniform(rng) * 4 + 0.01f;
            const float *im = use_imat || ggufq_type_needs_imatrix((ggufq_type)type) ? imat : NULL;
            memset(qa, 0, bytes);
            memset(qb, 0xFF, bytes);
            int ra = ref->quantize(x, qa, nrows, n_per_row, im);
            int rb = simd->quantize(x, qb, nrows, n_per_row, im);
            if (ra != rb || (ra == GGUFQ_OK && memcmp(qa, qb, bytes) != 0)) {
                size_t at = 0;
                while (at < bytes && qa[at] == qb[at])
                    at++;
                fprintf(stderr, "%s quantize %s: dist %d imatrix %d: status %d/%d, "
                        "first differing byte %zu of %zu\n", ggufq_isa_name(isa), tt->name,
                        dist, use_imat, ra, rb, at, bytes);
                bad++;
            }
        }
    }
    free(x);
    free(imat);
    free(qa);
    free(qb);
    return bad;
}

static void test_simd_matches_scalar(void **state)
{
    (void)state;
    int checked_isas = 0, bad = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        checked_isas++;
        int simd_types = 0, fused = 0;
        for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
            tu_rng rng = { 0x5EED0000u + (uint64_t)type * 977 + (uint64_t)isa };
            const gq_kernels *k = gq_kernels_for_isa((ggufq_isa)isa, type);
            const gq_kernels *s = gq_scalar_kernels(type);
            if (k && s && (k->dequantize != s->dequantize || k->quantize != s->quantize))
                simd_types++;
            bad += check_dequant((ggufq_isa)isa, type, &rng);
            bad += check_quant((ggufq_isa)isa, type, &rng);
            bad += check_half((ggufq_isa)isa, type, false, &rng);
            bad += check_half((ggufq_isa)isa, type, true, &rng);
            if (k)
                fused += (k->dequantize_f16 != NULL) + (k->dequantize_bf16 != NULL);
        }
        printf("%s: %d types have SIMD kernels, compared against scalar; "
               "%d fused half-output kernels against scalar decode + convert\n",
               ggufq_isa_name((ggufq_isa)isa), simd_types, fused);
    }
    if (!checked_isas)
        printf("no SIMD ISA runs on this CPU: nothing to compare\n");
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simd_matches_scalar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
