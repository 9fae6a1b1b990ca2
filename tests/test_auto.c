/*
 * test_auto.c — budget plans (ggufq_auto_plan_make, ggufq_auto_requant):
 * exact budget arithmetic (sizes, fallbacks, fixed points, both ends),
 * determinism across thread counts and ISAs, the predicted error against the
 * error ggufq_diff_files measures on the written file, and the rules replayed
 * by llama.cpp's llama_model_quantize giving the same tensors.
 */
#include "requant_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/plan.h"
#include "requant/requant_internal.h"

/* ffn_down rows of 352 weights: no k-quant fits (q4_K falls back to q5_0, q2_K/q3_K to q4_0 ...). */
static const model_shape ODD = { 256, 352, 512, 2, 4, 2 };

static const char *model_path(void)
{
    static char path[4200];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/m.gguf", tu_tmpdir("test_auto"));
        rq_make_model(path, &ODD, GGUFQ_TYPE_F32, 5, -1);
    }
    return path;
}

static ggufq_auto_plan *plan_bpw(double bpw, const ggufq_requant_options *ro)
{
    ggufq_auto_options ao;
    ggufq_auto_options_init(&ao);
    ao.target_bpw = bpw;
    ggufq_auto_plan *p = NULL;
    ggufq_error err;
    int rc = ggufq_auto_plan_make(model_path(), ro, &ao, &p, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, GGUFQ_OK);
    return p;
}

static int plan_size(uint64_t size, ggufq_auto_plan **p, ggufq_error *err)
{
    ggufq_auto_options ao;
    ggufq_auto_options_init(&ao);
    ao.target_size = size;
    return ggufq_auto_plan_make(model_path(), NULL, &ao, p, err);
}

static uint64_t rows_of(const ggufq_auto_entry *e, int64_t ne0) { return (uint64_t)(e->n / ne0); }

static void test_bpw_arithmetic(void **state)
{
    (void)state;
    ggufq_auto_plan *p = plan_bpw(4.5, NULL);
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    uint64_t bytes = 0, weights = 0;
    double err = 0;
    int64_t chosen = 0;
    for (int64_t i = 0; i < ggufq_auto_plan_count(p); i++) {
        const ggufq_auto_entry *e = ggufq_auto_plan_at(p, i);
        bytes += e->bytes;
        weights += (uint64_t)e->n;
        if (e->chosen) {
            chosen++;
            err += e->error;
            assert_string_equal(e->reason, "budget");
        } else {
            assert_int_equal(e->type, e->in_type);   /* no user rule: only kept tensors are fixed */
            assert_int_equal(strncmp(e->reason, "kept", 4), 0);
        }
        const bool down = strstr(e->name, "ffn_down") != NULL;
        const int64_t ne0 = down ? ODD.n_ff : ODD.n_embd;
        if (e->chosen) {
            assert_int_equal(e->bytes, ggufq_row_size(e->type, ne0) * rows_of(e, ne0));
            if (down)   /* only the fallbacks (and blocks of 32) fit rows of 352 */
                assert_true(ggufq_type_block_size(e->type) <= 32);
        }
    }
    assert_int_equal(t.weights, weights);
    assert_int_equal(t.tensor_bytes, bytes);
    assert_int_equal(t.target_bytes, (uint64_t)floor(4.5 * (double)weights / 8.0));
    assert_true(t.tensor_bytes <= t.target_bytes);
    assert_true((double)t.tensor_bytes >= 0.98 * (double)t.target_bytes);
    assert_true(t.budget_reached);
    assert_true(fabs(t.bpw - 8.0 * (double)bytes / (double)weights) == 0);
    assert_true(fabs(t.error - err) <= 1e-9 * err);
    assert_true(t.lower_bound <= t.error);
    assert_int_equal(t.chosen, chosen);
    assert_int_equal(t.chosen + t.fixed, ggufq_auto_plan_count(p));
    assert_false(t.weighted);
    ggufq_file *f = NULL;   /* a bpw budget has no header, but the file does */
    assert_int_equal(ggufq_open(model_path(), NULL, &f, NULL), GGUFQ_OK);
    assert_true(t.file_bytes >= t.tensor_bytes + ggufq_file_data_offset(f));
    ggufq_close(f);
    /* a recipe on the same tensors: its bytes are requant's plan's */
    uint64_t rb = 0;
    double re = 0;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.target = "Q4_K_M";
    ggufq_plan *rp = NULL;
    assert_int_equal(ggufq_requant_plan(model_path(), &ro, &rp, NULL), GGUFQ_OK);
    uint64_t want = 0;
    for (int64_t i = 0; i < ggufq_plan_count(rp); i++)
        want += ggufq_plan_at(rp, i)->out_bytes;
    ggufq_plan_free(rp);
    assert_int_equal(ggufq_auto_plan_recipe(p, "Q4_K_M", &rb, &re, NULL), GGUFQ_OK);
    assert_int_equal(rb, want);
    assert_true(re > 0);
    ggufq_error e;
    assert_int_equal(ggufq_auto_plan_recipe(p, "TQ2_0", &rb, &re, &e), GGUFQ_E_NOT_FOUND);
    ggufq_auto_plan_free(p);
}

/* A size budget at the smallest total, one byte below it, at the largest and past it. */
static void test_ends(void **state)
{
    (void)state;
    ggufq_auto_plan *p = NULL;
    ggufq_error err;
    assert_int_equal(plan_size(UINT64_MAX / 2, &p, &err), GGUFQ_OK);
    ggufq_auto_totals big;
    ggufq_auto_plan_totals(p, &big);
    assert_false(big.budget_reached);   /* far above the largest plan */
    assert_true(big.file_bytes <= big.max_bytes);
    const uint64_t min = big.min_bytes, max = big.max_bytes;
    ggufq_auto_plan_free(p);

    assert_int_equal(plan_size(min - 1, &p, &err), GGUFQ_E_INVALID_ARG);
    assert_null(p);
    char want[128];
    snprintf(want, sizeof want, "is below the smallest plan: %llu bytes", (unsigned long long)min);
    assert_non_null(strstr(err.message, want));

    assert_int_equal(plan_size(min, &p, &err), GGUFQ_OK);
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    assert_true(t.file_bytes <= min);
    for (int64_t i = 0; i < ggufq_auto_plan_count(p); i++) {   /* every tensor at its smallest size */
        const ggufq_auto_entry *e = ggufq_auto_plan_at(p, i);
        if (e->chosen)   /* q2_K, or for rows of 352 its fallback q4_0 or iq4_nl (as small) */
            assert_true(e->type == GGUFQ_TYPE_Q2_K || e->type == GGUFQ_TYPE_Q4_0 || e->type == GGUFQ_TYPE_IQ4_NL);
    }
    ggufq_auto_plan_free(p);

    assert_int_equal(plan_size(max, &p, &err), GGUFQ_OK);
    ggufq_auto_plan_totals(p, &t);
    assert_true(t.budget_reached);
    assert_true(t.error == t.lower_bound);   /* every tensor at its lowest error: f16 */
    for (int64_t i = 0; i < ggufq_auto_plan_count(p); i++)
        if (ggufq_auto_plan_at(p, i)->chosen)
            assert_int_equal(ggufq_auto_plan_at(p, i)->type, GGUFQ_TYPE_F16);
    ggufq_auto_plan_free(p);
}

static void assert_same_plans(const ggufq_auto_plan *a, const ggufq_auto_plan *b)
{
    assert_int_equal(ggufq_auto_plan_count(a), ggufq_auto_plan_count(b));
    for (int64_t i = 0; i < ggufq_auto_plan_count(a); i++) {
        const ggufq_auto_entry *x = ggufq_auto_plan_at(a, i), *y = ggufq_auto_plan_at(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->bytes, y->bytes);
        assert_memory_equal(&x->error, &y->error, sizeof x->error);
    }
}

static void test_threads_and_isas(void **state)
{
    (void)state;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.nthreads = 1;
    ggufq_auto_plan *a = plan_bpw(3.9, &ro);
    ro.nthreads = 3;
    ggufq_auto_plan *b = plan_bpw(3.9, &ro);
    assert_same_plans(a, b);
    const ggufq_isa best = ggufq_active_isa();
    assert_int_equal(ggufq_use_isa(GGUFQ_ISA_SCALAR), GGUFQ_OK);
    ggufq_auto_plan *c = plan_bpw(3.9, &ro);
    assert_int_equal(ggufq_use_isa(best), GGUFQ_OK);
    assert_same_plans(a, c);
    ggufq_auto_plan_free(a);
    ggufq_auto_plan_free(b);
    ggufq_auto_plan_free(c);
}

static void test_fixed_points(void **state)
{
    (void)state;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    const char *rules[] = { "attn_v=q8_0" };
    ro.tensor_types = rules;
    ro.n_tensor_types = 1;
    ro.output_tensor_type = GGUFQ_TYPE_Q6_K;
    ggufq_auto_plan *p = plan_bpw(5.0, &ro);
    int n_v = 0;
    for (int64_t i = 0; i < ggufq_auto_plan_count(p); i++) {
        const ggufq_auto_entry *e = ggufq_auto_plan_at(p, i);
        if (strstr(e->name, "attn_v")) {
            n_v++;
            assert_false(e->chosen);
            assert_int_equal(e->type, GGUFQ_TYPE_Q8_0);
            assert_string_equal(e->reason, "override: --tensor-type");
            assert_true(e->error > 0);   /* q8_0 is a candidate: measured */
        }
        if (strcmp(e->name, "output.weight") == 0) {
            assert_false(e->chosen);
            assert_int_equal(e->type, GGUFQ_TYPE_Q6_K);
        }
    }
    assert_int_equal(n_v, 2);
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    assert_true(t.tensor_bytes <= t.target_bytes);
    ggufq_auto_plan_free(p);
}

static void test_bad_args(void **state)
{
    (void)state;
    ggufq_auto_options ao;
    ggufq_auto_options_init(&ao);
    ggufq_auto_plan *p = NULL;
    ggufq_error err;
    assert_int_equal(ggufq_auto_plan_make(model_path(), NULL, &ao, &p, &err), GGUFQ_E_INVALID_ARG);
    assert_non_null(strstr(err.message, "a budget is needed"));
    ao.target_bpw = 4;
    ggufq_type dup[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q4_K };
    ao.candidates = dup;
    ao.n_candidates = 2;
    assert_int_equal(ggufq_auto_plan_make(model_path(), NULL, &ao, &p, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message, "candidate q4_K given twice");
    ggufq_type iq[] = { GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_IQ2_XS };
    ao.candidates = iq;
    assert_int_equal(ggufq_auto_plan_make(model_path(), NULL, &ao, &p, &err), GGUFQ_E_NEEDS_IMATRIX);
    ao.candidates = NULL;
    ao.n_candidates = 0;
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    const char *inc[] = { "attn" };
    ro.include_weights = inc;
    ro.n_include_weights = 1;
    assert_int_equal(ggufq_auto_plan_make(model_path(), &ro, &ao, &p, &err), GGUFQ_E_INVALID_ARG);
    assert_null(p);
    ao.struct_size = 8;
    assert_int_equal(ggufq_auto_plan_make(model_path(), NULL, &ao, &p, &err), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_auto_plan_make(NULL, NULL, &ao, &p, &err), GGUFQ_E_INVALID_ARG);
}

/* An imatrix (legacy .dat) for every matrix but token_embd and output; returns its path. */
static const char *write_imatrix(void)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/im.dat", tu_tmpdir("test_auto_im"));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    tensor_spec ts[128];
    const int n = rq_model_tensors(&ODD, ts);
    int32_t count = 0;
    for (int i = 0; i < n; i++)
        count += ts[i].ne1 > 0 && !strstr(ts[i].name, "token_embd") && strcmp(ts[i].name, "output.weight") != 0;
    fwrite(&count, 4, 1, f);
    tu_rng rng = { 9 };
    for (int i = 0; i < n; i++) {
        if (!(ts[i].ne1 > 0 && !strstr(ts[i].name, "token_embd") && strcmp(ts[i].name, "output.weight") != 0))
            continue;
        int32_t len = (int32_t)strlen(ts[i].name), ncall = 1, nval = (int32_t)ts[i].ne0;
        fwrite(&len, 4, 1, f);
        fwrite(ts[i].name, 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        for (int32_t j = 0; j < nval; j++) {
            float v = 0.1f + 4.0f * tu_rand_uniform(&rng) * tu_rand_uniform(&rng);
            fwrite(&v, 4, 1, f);
        }
    }
    fclose(f);
    return path;
}

/* The predicted error of the written file equals what ggufq_diff_files measures (weighted). */
static void test_imatrix_prediction(void **state)
{
    (void)state;
    const char *im = write_imatrix();
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.imatrix_path = im;
    ggufq_auto_plan *p = plan_bpw(4.2, &ro);
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    assert_true(t.weighted);
    char out[4200];
    snprintf(out, sizeof out, "%s/auto-im.gguf", tu_tmpdir("test_auto_im_out"));
    assert_int_equal(ggufq_auto_requant(model_path(), out, p, &ro, NULL, NULL, NULL), GGUFQ_OK);
    ggufq_file *a = NULL, *b = NULL;
    assert_int_equal(ggufq_open(model_path(), NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(out, NULL, &b, NULL), GGUFQ_OK);
    ggufq_value v;
    assert_int_equal(ggufq_get(b, "quantize.budget.objective", &v), GGUFQ_OK);
    assert_int_equal(ggufq_get(b, "quantize.imatrix.file", &v), GGUFQ_OK);
    ggufq_diff_options dopt;
    ggufq_diff_options_init(&dopt);
    dopt.imatrix_path = im;
    ggufq_diff *d = NULL;
    assert_int_equal(ggufq_diff_files(a, b, &dopt, &d, NULL), GGUFQ_OK);
    /* the imatrix sums per tensor, read back the way the plan weighs them */
    gq_imatrix imx;
    ggufq_requant_options io;
    ggufq_requant_options_init(&io);
    assert_int_equal(gq_imatrix_load(im, &io, &imx, NULL), GGUFQ_OK);
    double measured = 0;
    int no_entry = 0;
    for (int64_t i = 0; i < ggufq_diff_tensor_count(d); i++) {
        const ggufq_diff_tensor *x = ggufq_diff_tensor_at(d, i);
        const ggufq_auto_entry *e = NULL;
        for (int64_t k = 0; k < ggufq_auto_plan_count(p); k++)
            if (strcmp(ggufq_auto_plan_at(p, k)->name, x->name) == 0)
                e = ggufq_auto_plan_at(p, k);
        assert_non_null(e);
        if (!e->chosen)
            continue;
        const gq_imatrix_entry *m = gq_imatrix_find(&imx, x->name);
        double s = 0;
        for (int64_t j = 0; m && j < m->n; j++)
            s += m->values[j];
        double er = m ? x->m.wmse * (double)(x->n / m->n) * s : x->m.sum_sq_diff;
        if (!m) {   /* no entry: token_embd per looked-up row, output with its width's mean importance */
            ggufq_tensor_info ti;
            assert_int_equal(ggufq_tensor_at(a, x->index_a, &ti), GGUFQ_OK);
            const int64_t ne0 = ti.dims[0];
            if (strcmp(x->name, "token_embd.weight") == 0) {
                er /= (double)(x->n / ne0);
            } else {
                double sw = 0;
                int64_t nw = 0;
                for (size_t k = 0; k < imx.n; k++)
                    for (int64_t j = 0; imx.e[k].n == ne0 && j < ne0; j++, nw++)
                        sw += imx.e[k].values[j];
                assert_true(nw > 0);
                er *= sw / (double)nw;
            }
            no_entry++;
        }
        assert_true(fabs(er - e->error) <= 1e-12 * e->error);
        measured += er;
    }
    assert_true(fabs(measured - t.error) <= 1e-9 * t.error);
    assert_int_equal(no_entry, 2);   /* token_embd and output were scored by the stand-in rules */
    gq_imatrix_free(&imx);
    ggufq_diff_free(d);
    ggufq_close(a);
    ggufq_close(b);
    ggufq_auto_plan_free(p);
}

/* The plan's rules replayed by llama.cpp (pure, the base type's ftype): the same tensors. */
static void test_peer_replay(void **state)
{
    (void)state;
    ggufq_auto_plan *p = plan_bpw(4.7, NULL);
    const char *dir = tu_tmpdir("test_auto_peer");
    char ours[4200], theirs[4200], rules[4200];
    snprintf(ours, sizeof ours, "%s/ours.gguf", dir);
    snprintf(theirs, sizeof theirs, "%s/llama.gguf", dir);
    snprintf(rules, sizeof rules, "%s/plan.txt", dir);
    assert_int_equal(ggufq_auto_requant(model_path(), ours, p, NULL, NULL, NULL, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_auto_plan_write_rules(p, rules, NULL), GGUFQ_OK);
    if (!rq_peer_ready()) {
        ggufq_auto_plan_free(p);
        return;
    }
    size_t size = 0;
    char *raw = tu_read_file(rules, &size);
    assert_non_null(raw);
    char *text = calloc(size + 1, 1);
    assert_non_null(text);
    memcpy(text, raw, size);
    free(raw);
    peer_tt tt[256];
    size_t n = 0;
    for (char *line = strtok(text, "\n"); line && n < 255; line = strtok(NULL, "\n")) {
        char *eq = strrchr(line, '=');
        assert_non_null(eq);
        *eq = '\0';
        tt[n++] = (peer_tt){ line, ggufq_type_from_name(eq + 1) };
    }
    tt[n] = (peer_tt){ NULL, GGUFQ_TYPE_COUNT };
    ggufq_auto_totals t;
    ggufq_auto_plan_totals(p, &t);
    int ftype = 0;
    ggufq_type def;
    bool is_recipe;
    assert_int_equal(gq_resolve_target(ggufq_type_name(t.base_type), &ftype, &def, &is_recipe), GGUFQ_OK);
    peer_qparams qp = rq_peer.defaults();
    qp.nthread = 2;
    qp.ftype = ftype;
    qp.pure = true;
    qp.allow_requantize = true;
    qp.tt_overrides = tt;
    assert_int_equal(rq_peer.quantize(model_path(), theirs, &qp), 0);
    rq_assert_same_tensors(ours, theirs, "auto plan replayed by llama.cpp");
    free(text);
    ggufq_auto_plan_free(p);
}

/* A split model: the same choice as the whole file (bpw), written shard by shard with --keep-split. */
static void test_keep_split(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("test_auto_split");
    rq_make_split(dir, model_path());
    char first[4200], out[4200];
    snprintf(first, sizeof first, "%s/split-00001-of-00002.gguf", dir);
    snprintf(out, sizeof out, "%s/auto.gguf", dir);
    ggufq_auto_plan *whole = plan_bpw(4.4, NULL);
    ggufq_requant_options ro;
    ggufq_requant_options_init(&ro);
    ro.keep_split = true;
    ggufq_auto_options ao;
    ggufq_auto_options_init(&ao);
    ao.target_bpw = 4.4;
    ggufq_auto_plan *p = NULL;
    assert_int_equal(ggufq_auto_plan_make(first, &ro, &ao, &p, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_auto_requant(first, out, p, &ro, NULL, NULL, NULL), GGUFQ_OK);
    int64_t seen = 0;
    for (int s = 1; s <= 2; s++) {
        char shard[4200];
        snprintf(shard, sizeof shard, "%s/auto-%05d-of-00002.gguf", dir, s);
        ggufq_file *f = NULL;
        assert_int_equal(ggufq_open(shard, NULL, &f, NULL), GGUFQ_OK);
        for (int64_t i = 0; i < ggufq_tensor_count(f); i++, seen++) {
            ggufq_tensor_info ti;
            ggufq_tensor_at(f, i, &ti);
            const ggufq_auto_entry *e = NULL;
            for (int64_t k = 0; k < ggufq_auto_plan_count(whole); k++)
                if (strcmp(ggufq_auto_plan_at(whole, k)->name, ti.name) == 0)
                    e = ggufq_auto_plan_at(whole, k);
            assert_non_null(e);
            assert_int_equal(ti.type, e->type);
            assert_int_equal(ti.size, e->bytes);
        }
        ggufq_close(f);
    }
    assert_int_equal(seen, ggufq_auto_plan_count(whole));
    ggufq_auto_plan_free(p);
    ggufq_auto_plan_free(whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpw_arithmetic),
        cmocka_unit_test(test_ends),
        cmocka_unit_test(test_threads_and_isas),
        cmocka_unit_test(test_fixed_points),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_imatrix_prediction),
        cmocka_unit_test(test_peer_replay),
        cmocka_unit_test(test_keep_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
