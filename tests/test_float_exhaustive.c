/*
 * test_float_exhaustive.c — the SIMD F16/BF16 kernels against their scalar
 * twins (src/quants/float.c), bit for bit, NaN payloads included.
 *
 *  - F32 -> F16 and F32 -> BF16 quantizers: every one of the 2^32 float bit
 *    patterns on x86 (chunks that stay in L2; a few seconds). On AArch64 the
 *    tests usually run under qemu, so there they take a subset instead (~4%):
 *    every sign and exponent with 2^17 spread mantissas plus ties and their
 *    neighbours at every bit position; 2^21 mantissas for the exponents
 *    where the conversions change behaviour (the F16 subnormal range, the
 *    F16 and BF16 overflow edges); all 2^23 for zero/subnormal F32 and for
 *    Inf/NaN. Sanitizer builds take the subset too. GGUFQ_FLOAT_EXHAUSTIVE=1
 *    forces the full sweep.
 *  - F16 and BF16 dequantizers: all 65536 halves, also in outputs long
 *    enough for the streaming-store path, at every float offset of dst.
 *  - Quantizer tails, odd shapes and unaligned pointers, with guard bytes.
 * Each ISA this CPU runs is checked through the dispatch table.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd/dispatch.h"

#define CHUNK ((size_t)1 << 16)   /* floats per comparison: 256 KiB, stays in L2 */

static const int float_types[2] = { GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16 };
static const char *const float_names[2] = { "f16", "bf16" };

/* The quantizer of `type` for `isa` if it is a SIMD kernel (not the scalar one); else NULL. */
static gq_quant_fn simd_quantizer(ggufq_isa isa, int type)
{
    const gq_kernels *k = gq_kernels_for_isa(isa, type);
    const gq_kernels *s = gq_scalar_kernels(type);
    if (!k || !s || !k->quantize || k->quantize == s->quantize)
        return NULL;
    return k->quantize;
}

static gq_dequant_fn simd_dequantizer(ggufq_isa isa, int type)
{
    const gq_kernels *k = gq_kernels_for_isa(isa, type);
    const gq_kernels *s = gq_scalar_kernels(type);
    if (!k || !s || !k->dequantize || k->dequantize == s->dequantize)
        return NULL;
    return k->dequantize;
}

/* ------------------------------------------------------------------------- */
/* Quantizers over (nearly) every float                                       */
/* ------------------------------------------------------------------------- */

typedef struct sweep {
    gq_quant_fn  simd[GGUFQ_ISA_NEON + 1][2];   /* [isa][f16, bf16], NULL = not checked */
    gq_quant_fn  ref[2];
    uint32_t    *in;
    uint16_t    *want, *got;
    uint64_t     inputs;
    int          bad;
} sweep;

/* Convert in[0..n) with every kernel, compare with the scalar's output. */
static void check_chunk(sweep *s, size_t n)
{
    const float *x = (const float *)(const void *)s->in;
    for (int f = 0; f < 2; f++) {
        s->ref[f](x, s->want, 1, (int64_t)n, NULL);
        for (int isa = 0; isa <= GGUFQ_ISA_NEON; isa++) {
            if (!s->simd[isa][f])
                continue;
            s->simd[isa][f](x, s->got, 1, (int64_t)n, NULL);
            if (memcmp(s->want, s->got, n * sizeof(uint16_t)) == 0)
                continue;
            size_t i = 0;
            while (s->want[i] == s->got[i])
                i++;
            if (s->bad++ < 10)
                fprintf(stderr, "%s quantize %s: input 0x%08x: scalar 0x%04x, simd 0x%04x\n",
                        ggufq_isa_name((ggufq_isa)isa), float_names[f], s->in[i], s->want[i],
                        s->got[i]);
        }
    }
    s->inputs += n;
}

static void sweep_all(sweep *s)
{
    for (uint64_t base = 0; base < ((uint64_t)1 << 32) && s->bad < 10; base += CHUNK) {
        for (size_t i = 0; i < CHUNK; i++)
            s->in[i] = (uint32_t)(base + i);
        check_chunk(s, CHUNK);
    }
}

/*
 * Mantissas for the subset: `count` values spread over [0, 2^23) (an odd
 * multiplier near 2^23 / golden ratio, a bijection mod 2^23), then ties and
 * their neighbours at every bit position under 8 random upper parts, which
 * covers the rounding point of every F16 subnormal shift, of F16 normals
 * (bit 12) and of BF16 (bit 15), with an odd and an even kept bit.
 */
static size_t subset_mantissas(uint32_t *m, size_t count)
{
    size_t k = 0;
    for (size_t j = 0; j < count; j++)
        m[k++] = (uint32_t)(j * 0x4F1BBDu) & 0x7FFFFFu;
    tu_rng rng = { 0xF1047ull };
    for (int r = 0; r < 8; r++) {
        const uint32_t upper = (uint32_t)tu_rand_u64(&rng);
        for (int b = 0; b < 23; b++) {
            const uint32_t tie = ((upper & ~((2u << b) - 1u)) | (1u << b)) & 0x7FFFFFu;
            m[k++] = tie;
            m[k++] = (tie - 1u) & 0x7FFFFFu;
            m[k++] = (tie + 1u) & 0x7FFFFFu;
        }
    }
    m[k++] = 0x7FFFFFu;
    m[k++] = 0x400000u;   /* the NaN quiet bit alone */
    m[k++] = 0x3FFFFFu;
    return k;
}

/*
 * How many mantissas an F32 exponent gets: 2 = all 2^23 (zero/subnormal
 * and Inf/NaN: every NaN class and payload), 1 = many (the F16 subnormal
 * range and its edges 2^-26 .. 2^-14, the F16 overflow edge 65504/65520,
 * the BF16 overflow edge), 0 = the sparse set.
 */
static int exponent_density(uint32_t e)
{
    if (e == 0 || e == 255)
        return 2;
    return (e >= 101 && e <= 113) || e == 142 || e == 143 || e == 254;
}

static void sweep_mantissas(sweep *s, uint32_t hi, const uint32_t *m, size_t count)
{
    for (size_t off = 0; off < count; off += CHUNK) {
        const size_t n = count - off < CHUNK ? count - off : CHUNK;
        for (size_t i = 0; i < n; i++)
            s->in[i] = (hi << 23) | (m ? m[off + i] : (uint32_t)(off + i));
        check_chunk(s, n);
    }
}

static void sweep_subset(sweep *s)
{
    const size_t sparse_count = (size_t)1 << 17, dense_count = (size_t)1 << 21;
    const size_t extra = 8 * 23 * 3 + 3;
    uint32_t *sparse = malloc((sparse_count + extra) * sizeof *sparse);
    uint32_t *dense = malloc((dense_count + extra) * sizeof *dense);
    assert_non_null(sparse);
    assert_non_null(dense);
    const size_t n_sparse = subset_mantissas(sparse, sparse_count);
    const size_t n_dense = subset_mantissas(dense, dense_count);
    for (uint32_t hi = 0; hi < 512 && s->bad < 10; hi++) {   /* sign and exponent */
        switch (exponent_density(hi & 0xFFu)) {
        case 2:  sweep_mantissas(s, hi, NULL, (size_t)1 << 23); break;
        case 1:  sweep_mantissas(s, hi, dense, n_dense); break;
        default: sweep_mantissas(s, hi, sparse, n_sparse); break;
        }
    }
    free(sparse);
    free(dense);
}

/* Natively on x86: all 2^32. Under qemu or a sanitizer (which look for other
 * things, 10x slower): the subset, unless GGUFQ_FLOAT_EXHAUSTIVE=1. */
static int want_full_sweep(void)
{
    const char *e = getenv("GGUFQ_FLOAT_EXHAUSTIVE");
    if (e && strcmp(e, "1") == 0)
        return 1;
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
    return 1;
#else
    return 0;
#endif
}

static void test_quantizers_every_float(void **state)
{
    (void)state;
    sweep s;
    memset(&s, 0, sizeof s);
    int kernels = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        for (int f = 0; f < 2; f++) {
            s.simd[isa][f] = simd_quantizer((ggufq_isa)isa, float_types[f]);
            if (s.simd[isa][f]) {
                printf("checking %s quantize %s\n", ggufq_isa_name((ggufq_isa)isa), float_names[f]);
                kernels++;
            }
        }
    }
    if (!kernels) {
        printf("no SIMD F16/BF16 quantizer on this CPU: nothing to compare\n");
        return;
    }
    for (int f = 0; f < 2; f++)
        s.ref[f] = gq_scalar_kernels(float_types[f])->quantize;
    s.in = malloc(CHUNK * sizeof *s.in);
    s.want = malloc(CHUNK * sizeof *s.want);
    s.got = malloc(CHUNK * sizeof *s.got);
    assert_non_null(s.in);
    assert_non_null(s.want);
    assert_non_null(s.got);
    const int full = want_full_sweep();
    if (full)
        sweep_all(&s);
    else
        sweep_subset(&s);
    printf("%s: %llu inputs per kernel, %d mismatching chunks\n",
           full ? "all 2^32 floats" : "subset", (unsigned long long)s.inputs, s.bad);
    free(s.in);
    free(s.want);
    free(s.got);
    assert_int_equal(s.bad, 0);
    if (full)
        assert_true(s.inputs == ((uint64_t)1 << 32));
}

/* ------------------------------------------------------------------------- */
/* Dequantizers: every half, short and streaming-length outputs               */
/* ------------------------------------------------------------------------- */

/* Enough weights for the streaming path of the x86 F16 dequantizers
 * (STREAM_MIN_WEIGHTS, 2^22), not a multiple of any vector width. */
#define LONG_N (((int64_t)1 << 22) + 13)
#define GUARD  64

/* Compare one dequantizer with scalar on src (n halves) at dst offset dof bytes. */
static int check_dequant_at(gq_dequant_fn simd, gq_dequant_fn ref, const uint8_t *src, int64_t n,
                            size_t dof, uint8_t *a, uint8_t *b, const char *what)
{
    const size_t bytes = (size_t)n * sizeof(float);
    memset(a, 0x5A, bytes + 2 * GUARD);
    memset(b, 0x5A, bytes + 2 * GUARD);
    ref(src, (float *)(void *)(a + GUARD + dof), n);
    simd(src, (float *)(void *)(b + GUARD + dof), n);
    if (memcmp(a, b, bytes + 2 * GUARD) == 0)
        return 0;
    size_t i = 0;
    while (a[i] == b[i])
        i++;
    fprintf(stderr, "%s: n %lld, dst+%zu: first differing byte %lld from dst\n", what,
            (long long)n, dof, (long long)i - (long long)(GUARD + dof));
    return 1;
}

static void test_dequantizers_every_half(void **state)
{
    (void)state;
    uint8_t *src = malloc((size_t)LONG_N * 2 + 2);
    uint8_t *a = malloc((size_t)LONG_N * 4 + 2 * GUARD + 64);
    uint8_t *b = malloc((size_t)LONG_N * 4 + 2 * GUARD + 64);
    assert_non_null(src);
    assert_non_null(a);
    assert_non_null(b);
    int bad = 0, checked = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        for (int f = 0; f < 2; f++) {
            gq_dequant_fn simd = simd_dequantizer((ggufq_isa)isa, float_types[f]);
            if (!simd)
                continue;
            gq_dequant_fn ref = gq_scalar_kernels(float_types[f])->dequantize;
            char what[64];
            snprintf(what, sizeof what, "%s dequantize %s", ggufq_isa_name((ggufq_isa)isa),
                     float_names[f]);
            checked++;
            for (size_t so = 0; so < 2; so++) {   /* src even and odd byte aligned */
                for (int64_t i = 0; i < LONG_N; i++) {
                    const uint16_t h = (uint16_t)(i * 40503u);   /* odd: every half per 65536 */
                    memcpy(src + so + 2 * i, &h, sizeof h);
                }
                /* every half once, short output (plain stores), dst at every float
                 * offset in 32 bytes (dst is a float *: always float aligned) */
                for (size_t dof = 0; dof < 32; dof += 4)
                    bad += check_dequant_at(simd, ref, src + so, 65536, dof, a, b, what);
                /* streaming length at every float-aligned dst offset within a
                 * cache line (the scalar head), and an odd length */
                for (size_t dof = 0; dof < 64; dof += so ? 20 : 4)
                    bad += check_dequant_at(simd, ref, src + so, LONG_N, dof, a, b, what);
                bad += check_dequant_at(simd, ref, src + so, LONG_N - 1, 4 + 4 * so, a, b, what);
            }
        }
    }
    printf("%d SIMD F16/BF16 dequantizers compared on every half\n", checked);
    free(src);
    free(a);
    free(b);
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------------------- */
/* Quantizer shapes: tails, several rows, unaligned src and dst               */
/* ------------------------------------------------------------------------- */

static float special_or_random(tu_rng *rng)
{
    static const uint32_t specials[] = {
        0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
        0x7F800001u, 0xFFBFFFFFu, 0x477FF000u, 0x477FEFFFu, 0x33000000u, 0x33000001u,
        0x387FE000u, 0x00000001u, 0x7F7FFFFFu, 0x3F801000u, 0x3F803000u, 0x3F808000u,
    };
    const uint64_t r = tu_rand_u64(rng);
    uint32_t u = (uint32_t)(r >> 32);
    if (r % 3 == 0)
        u = specials[(r >> 8) % (sizeof specials / sizeof specials[0])];
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_quantizer_shapes(void **state)
{
    (void)state;
    enum { MAXN = 3 * 67 };
    float xbuf[MAXN + 4];
    uint8_t want[2 * MAXN + 2 * GUARD], got[2 * MAXN + 2 * GUARD];
    tu_rng rng = { 0x5A9E5ull };
    int bad = 0;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        for (int f = 0; f < 2; f++) {
            gq_quant_fn simd = simd_quantizer((ggufq_isa)isa, float_types[f]);
            if (!simd)
                continue;
            gq_quant_fn ref = gq_scalar_kernels(float_types[f])->quantize;
            for (int64_t nrows = 1; nrows <= 3; nrows++) {
                for (int64_t per_row = 1; per_row <= 67; per_row++) {
                    const size_t so = tu_rand_u64(&rng) % 4, dof = tu_rand_u64(&rng) % 4;
                    const int64_t n = nrows * per_row;
                    for (int64_t i = 0; i < n; i++)
                        xbuf[so + i] = special_or_random(&rng);
                    memset(want, 0xA5, sizeof want);
                    memset(got, 0xA5, sizeof got);
                    const int ra = ref(xbuf + so, want + GUARD + dof, nrows, per_row, NULL);
                    const int rb = simd(xbuf + so, got + GUARD + dof, nrows, per_row, NULL);
                    if (ra != rb || memcmp(want, got, sizeof want) != 0) {
                        if (bad++ < 10)
                            fprintf(stderr, "%s quantize %s: %lld x %lld, src+%zu floats, dst+%zu "
                                    "bytes: status %d/%d or bytes differ\n",
                                    ggufq_isa_name((ggufq_isa)isa), float_names[f],
                                    (long long)nrows, (long long)per_row, so, dof, ra, rb);
                    }
                }
            }
        }
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantizer_shapes),
        cmocka_unit_test(test_dequantizers_every_half),
        cmocka_unit_test(test_quantizers_every_float),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
