/*
 * test_kernel_table.c — the per-ISA kernel tables (src/simd/kernels_<isa>.c)
 * and the coverage query built on them, ggufq_kernel_isa.
 *  - Every row is well formed: one plain row per (type, operation), the
 *    function member of its operation set and the other NULL, a type that
 *    has a scalar kernel for that operation, and the ISA of the table
 *    (AVX-512 rows may name AVX2 kernels, nothing else). A row needing an
 *    extra CPU feature names a known one that fits its table, follows the
 *    plain row of its (type, operation) and is the only one with that feature.
 *  - Dispatch runs exactly what the rows say: under each ISA this CPU runs,
 *    gq_kernels_for gives each row's function and ggufq_kernel_isa its ISA;
 *    a (type, operation) without a row runs the scalar kernel; a row whose
 *    feature the CPU lacks is not applied (gq_row_applies, on the real CPU
 *    and on one with AVX512_BF16 removed).
 *  - ggufq_kernel_isa's answers for known rows, per ISA, and its NULLs.
 *  - The coverage table of src/simd/README.md says what the tables say (the
 *    columns of the ISAs this architecture builds).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/types.h"
#include "simd/dispatch.h"
#include "simd/simd.h"
#if defined(__x86_64__) || defined(__i386__)
#include "simd/avx512/float_avx512.h"
#endif

static const gq_isa_kernels *table_of(ggufq_isa isa)
{
#if defined(__x86_64__) || defined(__i386__)
    if (isa == GGUFQ_ISA_AVX2)
        return &gq_avx2_kernels;
    if (isa == GGUFQ_ISA_AVX512)
        return &gq_avx512_kernels;
#elif defined(__aarch64__)
    if (isa == GGUFQ_ISA_NEON)
        return &gq_neon_kernels;
#endif
    (void)isa;
    return NULL;
}

static void test_rows_are_well_formed(void **state)
{
    (void)state;
    for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
        const gq_isa_kernels *t = table_of((ggufq_isa)isa);
        if (!t)
            continue;
        assert_int_equal(t->isa, isa);
        assert_true(t->n_rows > 0);
        bool seen[GGUFQ_TYPE_COUNT][GGUFQ_OP_DEQUANTIZE_BF16 + 1];
        bool seen_feature[GGUFQ_TYPE_COUNT][GGUFQ_OP_DEQUANTIZE_BF16 + 1][GQ_FEATURE_COUNT];
        memset(seen, 0, sizeof seen);
        memset(seen_feature, 0, sizeof seen_feature);
        for (int i = 0; i < t->n_rows; i++) {
            const gq_kernel_row *r = &t->rows[i];
            assert_true((int)r->type >= 0 && r->type < GGUFQ_TYPE_COUNT);
            assert_true(r->op == GGUFQ_OP_DEQUANTIZE || r->op == GGUFQ_OP_QUANTIZE ||
                        r->op == GGUFQ_OP_DEQUANTIZE_F16 || r->op == GGUFQ_OP_DEQUANTIZE_BF16);
            assert_true((int)r->needs >= GQ_FEATURE_NONE && r->needs < GQ_FEATURE_COUNT);
            if (r->needs == GQ_FEATURE_NONE) {
                assert_false(seen[r->type][r->op]);
                seen[r->type][r->op] = true;
            } else {
                /* after the plain row (a later row overrides), once per feature,
                 * a feature of the table's ISA */
                if (!seen[r->type][r->op])
                    fail_msg("row %d needs a feature but follows no plain row", i);
                assert_false(seen_feature[r->type][r->op][r->needs]);
                seen_feature[r->type][r->op][r->needs] = true;
                assert_int_equal(r->needs, GQ_FEATURE_AVX512_BF16);   /* the one known today */
                assert_int_equal(isa, GGUFQ_ISA_AVX512);
                assert_int_equal(r->isa, GGUFQ_ISA_AVX512);
            }
            const gq_kernels *scalar = gq_scalar_kernels(r->type);
            assert_non_null(scalar);
            if (r->op == GGUFQ_OP_DEQUANTIZE) {
                assert_non_null(r->dequantize);
                assert_null(r->quantize);
                assert_null(r->half);
            } else if (r->op != GGUFQ_OP_QUANTIZE) {   /* fused half output */
                assert_non_null(r->half);
                assert_null(r->dequantize);
                assert_null(r->quantize);
            } else {
                assert_null(r->half);
                assert_non_null(r->quantize);
                assert_null(r->dequantize);
                assert_non_null(scalar->quantize);
            }
            assert_true((int)r->isa == isa || (isa == GGUFQ_ISA_AVX512 && r->isa == GGUFQ_ISA_AVX2));
        }
    }
}

/* Under each ISA this CPU runs: dispatch gives the rows' functions, the
 * scalar ones elsewhere, and ggufq_kernel_isa names whose they are. */
static void test_dispatch_follows_rows(void **state)
{
    (void)state;
    const ggufq_isa was = ggufq_active_isa();
    for (int isa = GGUFQ_ISA_SCALAR; isa <= GGUFQ_ISA_NEON; isa++) {
        if (!ggufq_isa_supported((ggufq_isa)isa))
            continue;
        assert_int_equal(ggufq_use_isa((ggufq_isa)isa), GGUFQ_OK);
        const gq_isa_kernels *t = table_of((ggufq_isa)isa);
        for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
            const gq_kernels *scalar = gq_scalar_kernels(type);
            const gq_kernels *k = gq_kernels_for(type);
            if (!scalar) {
                assert_null(k);
                for (int op = GGUFQ_OP_DEQUANTIZE; op <= GGUFQ_OP_DEQUANTIZE_BF16; op++)
                    assert_null(ggufq_kernel_isa((ggufq_type)type, (ggufq_kernel_op)op));
                continue;
            }
            assert_non_null(k);
            gq_dequant_fn deq = scalar->dequantize;
            gq_quant_fn quant = scalar->quantize;
            gq_dequant_half_fn half[2] = { NULL, NULL };
            ggufq_isa deq_isa = GGUFQ_ISA_SCALAR, quant_isa = GGUFQ_ISA_SCALAR;
            ggufq_isa half_isa[2] = { GGUFQ_ISA_SCALAR, GGUFQ_ISA_SCALAR };
            for (int i = 0; t && i < t->n_rows; i++) {
                const gq_kernel_row *r = &t->rows[i];
                if ((int)r->type != type || !gq_row_applies(r, gq_cpu()))
                    continue;
                if (r->op == GGUFQ_OP_DEQUANTIZE) {
                    deq = r->dequantize;
                    deq_isa = r->isa;
                } else if (r->op != GGUFQ_OP_QUANTIZE) {
                    const int h = r->op == GGUFQ_OP_DEQUANTIZE_BF16;
                    half[h] = r->half;
                    half_isa[h] = r->isa;
                } else {
                    quant = r->quantize;
                    quant_isa = r->isa;
                }
            }
            assert_ptr_equal(k->dequantize, deq);
            assert_ptr_equal(k->quantize, quant);
            assert_ptr_equal(k->dequantize_f16, half[0]);
            assert_ptr_equal(k->dequantize_bf16, half[1]);
            for (int h = 0; h < 2; h++) {
                /* the fused kernel's ISA, else the decoder's with "+convert" */
                char want[32];
                if (half[h])
                    snprintf(want, sizeof want, "%s", ggufq_isa_name(half_isa[h]));
                else
                    snprintf(want, sizeof want, "%s+convert", ggufq_isa_name(deq_isa));
                assert_string_equal(ggufq_kernel_isa((ggufq_type)type, h ? GGUFQ_OP_DEQUANTIZE_BF16
                                                                          : GGUFQ_OP_DEQUANTIZE_F16),
                                    want);
            }
            assert_string_equal(ggufq_kernel_isa((ggufq_type)type, GGUFQ_OP_DEQUANTIZE),
                                ggufq_isa_name(deq_isa));
            if (quant) {
                assert_string_equal(ggufq_kernel_isa((ggufq_type)type, GGUFQ_OP_QUANTIZE),
                                    ggufq_isa_name(quant_isa));
                assert_string_equal(ggufq_kernel_isa((ggufq_type)type, GGUFQ_OP_QUANTIZE_IMATRIX),
                                    ggufq_isa_name(quant_isa));
            } else {
                assert_null(ggufq_kernel_isa((ggufq_type)type, GGUFQ_OP_QUANTIZE));
                assert_null(ggufq_kernel_isa((ggufq_type)type, GGUFQ_OP_QUANTIZE_IMATRIX));
            }
        }
    }
    assert_int_equal(ggufq_use_isa(was), GGUFQ_OK);
}

/* The feature rule itself: a row needing AVX512_BF16 applies on a CPU with
 * it and not on the same CPU without it; plain rows apply on both. Under
 * AVX-512, BF16's quantizer is the vcvtneps2bf16 kernel exactly when this
 * CPU has AVX512_BF16, else the integer-rounding one. */
static void test_feature_rows_need_their_feature(void **state)
{
    (void)state;
#if defined(__x86_64__) || defined(__i386__)
    gq_cpu_features with = *gq_cpu(), without = *gq_cpu();
    with.avx512bf16 = true;
    without.avx512bf16 = false;
    int featured = 0;
    for (int i = 0; i < gq_avx512_kernels.n_rows; i++) {
        const gq_kernel_row *r = &gq_avx512_kernels.rows[i];
        assert_true(gq_row_applies(r, &with));
        assert_int_equal(gq_row_applies(r, &without), r->needs == GQ_FEATURE_NONE);
        featured += r->needs != GQ_FEATURE_NONE;
    }
    const gq_kernel_row unknown = { .type = GGUFQ_TYPE_BF16, .op = GGUFQ_OP_QUANTIZE,
                                    .needs = GQ_FEATURE_COUNT };
    assert_false(gq_row_applies(&unknown, &with));
#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
    assert_int_equal(featured, 1);
    if (ggufq_isa_supported(GGUFQ_ISA_AVX512)) {
        const gq_kernels *k = gq_kernels_for_isa(GGUFQ_ISA_AVX512, GGUFQ_TYPE_BF16);
        assert_non_null(k);
        assert_ptr_equal(k->quantize, gq_cpu()->avx512bf16 ? gq_avx512_quantize_bf16_ne
                                                            : gq_avx512_quantize_bf16_int);
    }
#else
    assert_int_equal(featured, 0);
#endif
#else
    skip();
#endif
}

static void expect(ggufq_type type, ggufq_kernel_op op, const char *isa)
{
    const char *got = ggufq_kernel_isa(type, op);
    if (!isa)
        assert_null(got);
    else
        assert_string_equal(got, isa);
}

/* Known answers: "where does Q4_K's dequantization run" and its neighbours. */
static void test_kernel_isa_answers(void **state)
{
    (void)state;
    const ggufq_isa was = ggufq_active_isa();

    assert_int_equal(ggufq_use_isa(GGUFQ_ISA_SCALAR), GGUFQ_OK);
    expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_DEQUANTIZE, "scalar");
    expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_QUANTIZE_IMATRIX, "scalar");
    expect(GGUFQ_TYPE_F64, GGUFQ_OP_DEQUANTIZE, "scalar");
    expect(GGUFQ_TYPE_F64, GGUFQ_OP_QUANTIZE, NULL);             /* no F64 quantizer */
    expect(GGUFQ_TYPE_I64, GGUFQ_OP_QUANTIZE_IMATRIX, NULL);
    expect((ggufq_type)4, GGUFQ_OP_DEQUANTIZE, NULL);            /* removed Q4_2 */
    expect((ggufq_type)-1, GGUFQ_OP_DEQUANTIZE, NULL);
    expect(GGUFQ_TYPE_COUNT, GGUFQ_OP_DEQUANTIZE, NULL);
    expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_DEQUANTIZE_F16, "scalar+convert");
    expect(GGUFQ_TYPE_I8, GGUFQ_OP_DEQUANTIZE_BF16, "scalar+convert");
    expect(GGUFQ_TYPE_Q4_K, (ggufq_kernel_op)5, NULL);
    expect(GGUFQ_TYPE_Q4_K, (ggufq_kernel_op)-1, NULL);

    if (ggufq_use_isa(GGUFQ_ISA_AVX2) == GGUFQ_OK) {
        expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_DEQUANTIZE, "avx2");
        expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_QUANTIZE, "avx2");
        expect(GGUFQ_TYPE_Q4_0, GGUFQ_OP_QUANTIZE_IMATRIX, "avx2");
        expect(GGUFQ_TYPE_BF16, GGUFQ_OP_DEQUANTIZE, "scalar");  /* no AVX2 row */
        expect(GGUFQ_TYPE_I64, GGUFQ_OP_DEQUANTIZE, "scalar");
    }
    if (ggufq_use_isa(GGUFQ_ISA_AVX512) == GGUFQ_OK) {
        expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_DEQUANTIZE, "avx512");
        expect(GGUFQ_TYPE_Q8_K, GGUFQ_OP_DEQUANTIZE, "avx2");    /* AVX2's measured as fast */
        expect(GGUFQ_TYPE_Q3_K, GGUFQ_OP_DEQUANTIZE, "avx512");
        expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_QUANTIZE, "avx512");
        expect(GGUFQ_TYPE_Q4_0, GGUFQ_OP_QUANTIZE_IMATRIX, "avx512");
        expect(GGUFQ_TYPE_BF16, GGUFQ_OP_DEQUANTIZE, "avx512");
        expect(GGUFQ_TYPE_MXFP4, GGUFQ_OP_DEQUANTIZE, "avx512");
        expect(GGUFQ_TYPE_MXFP4, GGUFQ_OP_QUANTIZE, "avx2");     /* AVX2's quantizer reused */
        expect(GGUFQ_TYPE_F32, GGUFQ_OP_DEQUANTIZE, "scalar");
    }
    if (ggufq_use_isa(GGUFQ_ISA_NEON) == GGUFQ_OK) {
        expect(GGUFQ_TYPE_Q4_K, GGUFQ_OP_DEQUANTIZE, "neon");
        expect(GGUFQ_TYPE_IQ2_XXS, GGUFQ_OP_QUANTIZE_IMATRIX, "neon");
        expect(GGUFQ_TYPE_F64, GGUFQ_OP_DEQUANTIZE, "scalar");
    }
    assert_int_equal(ggufq_use_isa(was), GGUFQ_OK);
}

/* What the README's cell for (isa, type, op) must say. */
static const char *coverage_cell(const gq_isa_kernels *t, int type, ggufq_kernel_op op)
{
    for (int i = 0; i < t->n_rows; i++)
        if ((int)t->rows[i].type == type && t->rows[i].op == op)
            return ggufq_isa_name(t->rows[i].isa);
    const gq_kernels *scalar = gq_scalar_kernels(type);
    return op == GGUFQ_OP_QUANTIZE && !scalar->quantize ? "none" : "scalar";
}

/* How many times key occurs in [from, to) (to NULL: to the end). */
static int occurrences(const char *from, const char *to, const char *key)
{
    int n = 0;
    for (const char *p = strstr(from, key); p && (!to || p < to); p = strstr(p + 1, key))
        n++;
    return n;
}

/* The README's rows "| Q4_K | avx2 | avx2 | neon | avx2 | avx512 | neon |":
 * dequantize on avx2, avx512, neon, then quantize on the same. */
static void test_readme_coverage_matches(void **state)
{
    (void)state;
    size_t size = 0;
    char *text = tu_read_file(GGUFQ_TEST_DIR "/../src/simd/README.md", &size);
    assert_non_null(text);
    int checked_types = 0;
    for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
        const gq_type_traits *tt = gq_type_traits_of(type);
        if (!tt || !gq_scalar_kernels(type))
            continue;
        char key[32];
        snprintf(key, sizeof key, "\n| %s |", tt->name);
        const char *line = strstr(text, key);
        if (!line)
            fail_msg("src/simd/README.md: no coverage row for %s", tt->name);
        if (occurrences(text, strstr(text, "\n## Half outputs\n"), key) != 1)
            fail_msg("src/simd/README.md: %s has more than one coverage row", tt->name);
        char cells[6][16];
        if (sscanf(line + strlen(key), " %15[a-z0-9] | %15[a-z0-9] | %15[a-z0-9] | %15[a-z0-9] |"
                   " %15[a-z0-9] | %15[a-z0-9] |", cells[0], cells[1], cells[2], cells[3],
                   cells[4], cells[5]) != 6)
            fail_msg("src/simd/README.md: malformed coverage row for %s", tt->name);
        for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++) {
            const gq_isa_kernels *t = table_of((ggufq_isa)isa);
            if (!t)
                continue;
            const int col = isa - GGUFQ_ISA_AVX2;
            const char *deq = coverage_cell(t, type, GGUFQ_OP_DEQUANTIZE);
            const char *quant = coverage_cell(t, type, GGUFQ_OP_QUANTIZE);
            if (strcmp(cells[col], deq) != 0 || strcmp(cells[3 + col], quant) != 0)
                fail_msg("src/simd/README.md: %s on %s says %s/%s, the table %s/%s", tt->name,
                         ggufq_isa_name((ggufq_isa)isa), cells[col], cells[3 + col], deq, quant);
        }
        checked_types++;
    }
    free(text);
    assert_true(checked_types >= 35);
}

/* The README's "Half outputs" table, rows "| q4_0 | avx2 | avx512 | - | avx2 | avx512 | - |":
 * the fused F16 kernel on avx2, avx512, neon, then BF16; "-": decode to F32
 * and convert. A type with no fused kernel anywhere has no row. */
static void test_readme_half_coverage_matches(void **state)
{
    (void)state;
    size_t size = 0;
    char *text = tu_read_file(GGUFQ_TEST_DIR "/../src/simd/README.md", &size);
    assert_non_null(text);
    const char *section = strstr(text, "\n## Half outputs\n");
    if (!section)
        fail_msg("src/simd/README.md: no \"## Half outputs\" section");
    int rows = 0;
    for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
        const gq_type_traits *tt = gq_type_traits_of(type);
        if (!tt || !gq_scalar_kernels(type))
            continue;
        const char *want[6];
        bool any = false;
        for (int isa = GGUFQ_ISA_AVX2; isa <= GGUFQ_ISA_NEON; isa++)
            for (int h = 0; h < 2; h++) {
                const gq_isa_kernels *t = table_of((ggufq_isa)isa);
                const ggufq_kernel_op op = h ? GGUFQ_OP_DEQUANTIZE_BF16 : GGUFQ_OP_DEQUANTIZE_F16;
                const char *cell = "-";
                for (int i = 0; t && i < t->n_rows; i++)
                    if ((int)t->rows[i].type == type && t->rows[i].op == op)
                        cell = ggufq_isa_name(t->rows[i].isa);
                want[3 * h + isa - GGUFQ_ISA_AVX2] = t ? cell : NULL;   /* NULL: not built here */
                any = any || strcmp(cell, "-") != 0;
            }
        char key[32];
        snprintf(key, sizeof key, "\n| %s |", tt->name);
        const char *line = strstr(section, key);
        if (occurrences(section, NULL, key) > 1)
            fail_msg("src/simd/README.md: %s has more than one half-output row", tt->name);
        if (!line) {
            if (any)
                fail_msg("src/simd/README.md: no half-output row for %s", tt->name);
            continue;
        }
        char cells[6][16];
        if (sscanf(line + strlen(key), " %15[-a-z0-9] | %15[-a-z0-9] | %15[-a-z0-9] | %15[-a-z0-9] |"
                   " %15[-a-z0-9] | %15[-a-z0-9] |", cells[0], cells[1], cells[2], cells[3],
                   cells[4], cells[5]) != 6)
            fail_msg("src/simd/README.md: malformed half-output row for %s", tt->name);
        for (int c = 0; c < 6; c++)
            if (want[c] && strcmp(cells[c], want[c]) != 0)
                fail_msg("src/simd/README.md: half outputs of %s, column %d, say %s, the table %s",
                         tt->name, c + 2, cells[c], want[c]);
        rows++;
    }
    free(text);
    printf("%d half-output rows checked\n", rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_are_well_formed),
        cmocka_unit_test(test_dispatch_follows_rows),
        cmocka_unit_test(test_feature_rows_need_their_feature),
        cmocka_unit_test(test_kernel_isa_answers),
        cmocka_unit_test(test_readme_coverage_matches),
        cmocka_unit_test(test_readme_half_coverage_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
