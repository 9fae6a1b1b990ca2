/*
 * test_catalogue.c — what `ggufq types` lists through the public API:
 * ggufq_type_can_quantize, and llama-quantize's TYPE names
 * (ggufq_recipe_count / ggufq_recipe_at) with their file types, aliases,
 * stated bits per weight and imatrix requirement.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_can_quantize(void **state)
{
    (void)state;
    static const ggufq_type yes[] = { GGUFQ_TYPE_F32, GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16, GGUFQ_TYPE_Q4_0,
                                      GGUFQ_TYPE_Q8_K, GGUFQ_TYPE_IQ2_XXS, GGUFQ_TYPE_Q2_0 };
    static const ggufq_type no[] = { GGUFQ_TYPE_I8, GGUFQ_TYPE_I16, GGUFQ_TYPE_I32, GGUFQ_TYPE_I64,
                                     GGUFQ_TYPE_F64, (ggufq_type)4, GGUFQ_TYPE_COUNT, (ggufq_type)-1 };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        assert_true(ggufq_type_can_quantize(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(ggufq_type_can_quantize(no[i]));
    /* the same answer as ggufq_quantize gives for an empty call */
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        const float imatrix[1] = { 1 };
        int rc = ggufq_quantize((ggufq_type)t, NULL, NULL, 0, 0, imatrix);
        assert_int_equal(ggufq_type_can_quantize((ggufq_type)t), rc == GGUFQ_OK);
    }
}

static ggufq_recipe_info recipe(const char *name)
{
    ggufq_recipe_info r;
    for (int64_t i = 0; i < ggufq_recipe_count(); i++) {
        assert_int_equal(ggufq_recipe_at(i, &r), GGUFQ_OK);
        if (strcmp(r.name, name) == 0)
            return r;
    }
    fail_msg("no recipe %s", name);
    return r;
}

static void test_recipe_list(void **state)
{
    (void)state;
    ggufq_recipe_info r;
    assert_int_equal(ggufq_recipe_count(), 39);   /* llama-quantize's QUANT_OPTIONS */
    assert_int_equal(ggufq_recipe_at(-1, &r), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_recipe_at(39, &r), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_recipe_at(0, NULL), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_recipe_at(0, &r), GGUFQ_OK);
    assert_string_equal(r.name, "Q1_0");   /* its order */
    assert_int_equal(ggufq_recipe_at(38, &r), GGUFQ_OK);
    assert_string_equal(r.name, "COPY");
    assert_true(r.copy);
    assert_int_equal(r.file_type, 0);

    r = recipe("Q4_K_M");
    assert_int_equal(r.file_type, 15);
    assert_int_equal(r.default_type, GGUFQ_TYPE_Q4_K);
    assert_null(r.alias_of);
    assert_false(r.copy);
    assert_false(r.needs_imatrix);
    assert_true(r.bpw == 0);   /* llama-quantize states a size: 4.58G */
    assert_string_equal(r.description, "4.58G, +0.1754 ppl @ Llama-3-8B");
    r = recipe("Q4_K");
    assert_string_equal(r.alias_of, "Q4_K_M");
    assert_int_equal(r.file_type, 15);
    assert_string_equal(recipe("Q3_K").alias_of, "Q3_K_M");
    assert_string_equal(recipe("Q5_K").alias_of, "Q5_K_M");
    r = recipe("IQ2_S");
    assert_int_equal(r.file_type, 28);
    assert_int_equal(r.default_type, GGUFQ_TYPE_IQ2_XS);
    assert_true(r.needs_imatrix);
    assert_true(r.bpw == 2.5);
    assert_true(recipe("Q1_0").bpw == 1.125);
    assert_true(recipe("IQ4_XS").bpw == 4.25);
    assert_true(recipe("Q2_K_S").needs_imatrix);
    assert_false(recipe("Q2_K").needs_imatrix);
    assert_false(recipe("IQ3_M").needs_imatrix);

    /* every name is a TYPE ggufq_requant accepts; every alias names a listed recipe */
    for (int64_t i = 0; i < ggufq_recipe_count(); i++) {
        assert_int_equal(ggufq_recipe_at(i, &r), GGUFQ_OK);
        assert_non_null(r.description);
        assert_true(r.description[0] != '\0' && r.description[0] != ' ');
        ggufq_requant_options o;
        ggufq_requant_options_init(&o);
        o.target = r.name;
        assert_int_equal(ggufq_requant_options_check(&o, NULL), GGUFQ_OK);
        if (r.alias_of)
            assert_int_equal(recipe(r.alias_of).file_type, r.file_type);
    }
}

/* A llama of 8 layers whose rows fit every block size: no fallback type hides a recipe's choice. */
static void write_llama(const char *path)
{
    enum { EMBD = 256, FF = 512, LAYERS = 8, VOCAB = 512 };
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "general.architecture", "llama", 5), GGUFQ_OK);
    static const struct { const char *key; uint64_t v; } u32[] = {
        { "llama.block_count", LAYERS }, { "llama.context_length", 256 }, { "llama.embedding_length", EMBD },
        { "llama.feed_forward_length", FF }, { "llama.attention.head_count", 4 },
        { "llama.attention.head_count_kv", 4 }, { "general.file_type", 1 },
    };
    for (size_t k = 0; k < sizeof u32 / sizeof u32[0]; k++)
        assert_int_equal(ggufq_writer_set_uint(w, u32[k].key, GGUFQ_VT_UINT32, u32[k].v), GGUFQ_OK);
    struct { char name[48]; int64_t d[2]; } t[2 + 7 * LAYERS];
    int n = 0;
#define ADD(a, b, ...) (snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__), t[n].d[0] = (a), t[n].d[1] = (b), n++)
    ADD(EMBD, VOCAB, "token_embd.weight");
    for (int l = 0; l < LAYERS; l++) {
        ADD(EMBD, EMBD, "blk.%d.attn_q.weight", l);
        ADD(EMBD, EMBD, "blk.%d.attn_k.weight", l);
        ADD(EMBD, EMBD, "blk.%d.attn_v.weight", l);
        ADD(EMBD, EMBD, "blk.%d.attn_output.weight", l);
        ADD(EMBD, FF, "blk.%d.ffn_gate.weight", l);
        ADD(EMBD, FF, "blk.%d.ffn_up.weight", l);
        ADD(FF, EMBD, "blk.%d.ffn_down.weight", l);
    }
    ADD(EMBD, VOCAB, "output.weight");
#undef ADD
    for (int i = 0; i < n; i++)
        assert_int_equal(ggufq_writer_add_tensor(w, t[i].name, GGUFQ_TYPE_F16, 2, t[i].d), GGUFQ_OK);
    void *zeros = calloc((size_t)(FF * VOCAB), 2);
    assert_non_null(zeros);
    for (int i = 0; i < n; i++)
        assert_int_equal(ggufq_writer_write(w, zeros, (size_t)(t[i].d[0] * t[i].d[1]) * 2), GGUFQ_OK);
    free(zeros);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

/* needs_imatrix says what planning a llama without an imatrix does: refuse, or not. */
static void test_recipe_needs_imatrix_matches_plan(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/llama-f16.gguf", tu_tmpdir("test_catalogue"));
    write_llama(path);
    for (int64_t i = 0; i < ggufq_recipe_count(); i++) {
        ggufq_recipe_info r;
        assert_int_equal(ggufq_recipe_at(i, &r), GGUFQ_OK);
        ggufq_requant_options o;
        ggufq_requant_options_init(&o);
        o.target = r.name;
        ggufq_plan *plan = NULL;
        ggufq_error err;
        int rc = ggufq_requant_plan(path, &o, &plan, &err);
        if (r.needs_imatrix != (rc < 0))
            fail_msg("%s: needs_imatrix %d, but planning without one gives %d (%s)", r.name, r.needs_imatrix,
                     rc, rc < 0 ? err.message : "ok");
        if (rc < 0)
            assert_non_null(strstr(err.message, "importance matrix"));
        ggufq_plan_free(plan);
    }
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_can_quantize),
        cmocka_unit_test(test_recipe_list),
        cmocka_unit_test(test_recipe_needs_imatrix_matches_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
