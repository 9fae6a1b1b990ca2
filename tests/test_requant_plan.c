/*
 * test_requant_plan.c — the requant policy (src/requant/plan.c) against the
 * peer's llama.cpp: small llama models are written with our writer, quantized
 * by the peer's llama_model_quantize, and every tensor's type in its output
 * (and the order it wrote them in) is compared with gq_plan_build's decision,
 * for bare types (pure), llama.cpp's recipes and the user overrides. Also the
 * target names, and the imatrix requirement of the 1-2 bit recipes.
 *
 * The peer is libllama.v0.5.0.so of @node-llama-cpp/linux-x64@3.22.1. Its
 * llama_model_quantize_params is 64 bytes (read off its
 * llama_model_quantize_default_params; see tests/peer_quantize.h).
 */
#include "requant_util.h"   /* the peer quantizer (peer_quantize.h) */
#include "testutil.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quants/fp16.h"
#include "requant/plan.h"
#include "requant/requant_internal.h"   /* gq_plan_order: the product's order */

/* ------------------------------------------------------------------------- */
/* Test models                                                               */
/* ------------------------------------------------------------------------- */

typedef struct model_spec {
    const char *tag;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, n_expert, n_vocab;
    bool tied;          /* no output.weight */
    ggufq_type wtype;   /* weights: F16 or F32 (norms are F32) */
    bool odd_tensor;    /* add blk.0.ffn_odd.weight with rows of 48 (f16 fallback) */
    int rows;           /* > 0: every 2D weight has only this many rows (the peer does not check
                           shapes when quantizing; keeps the test fast) */
} model_spec;

typedef struct tensor_decl {
    char    name[64];
    int     n_dims;
    int64_t dims[3];
    ggufq_type type;
} tensor_decl;

static int add_decl(tensor_decl *t, int n, const char *name, ggufq_type ty, int nd,
                    int64_t d0, int64_t d1, int64_t d2)
{
    snprintf(t[n].name, sizeof t[n].name, "%s", name);
    t[n].type = ty;
    t[n].n_dims = nd;
    t[n].dims[0] = d0;
    t[n].dims[1] = d1;
    t[n].dims[2] = d2;
    return n + 1;
}

/* The tensors of a llama model in the order convert_hf_to_gguf writes them. */
static int model_tensors(const model_spec *m, tensor_decl *t)
{
    int n = 0, e = m->n_embd, hd = m->n_embd / m->n_head, kv = hd * m->n_head_kv;
    int re = m->rows > 0 ? m->rows : e, rkv = m->rows > 0 ? m->rows : kv, rff = m->rows > 0 ? m->rows : m->n_ff;
    ggufq_type w = m->wtype;
    n = add_decl(t, n, "token_embd.weight", w, 2, e, m->n_vocab, 1);
    for (int l = 0; l < m->n_layer; l++) {
        char b[64];
#define T(suffix, ty, nd, a, c, d) (snprintf(b, sizeof b, "blk.%d." suffix, l), n = add_decl(t, n, b, ty, nd, a, c, d))
        T("attn_norm.weight", GGUFQ_TYPE_F32, 1, e, 1, 1);
        T("attn_q.weight", w, 2, e, re, 1);
        T("attn_k.weight", w, 2, e, rkv, 1);
        T("attn_v.weight", w, 2, e, rkv, 1);
        T("attn_output.weight", w, 2, e, re, 1);
        T("ffn_norm.weight", GGUFQ_TYPE_F32, 1, e, 1, 1);
        if (m->n_expert > 0) {
            T("ffn_gate_inp.weight", GGUFQ_TYPE_F32, 2, e, m->n_expert, 1);
            T("ffn_gate_exps.weight", w, 3, e, rff, m->n_expert);
            T("ffn_down_exps.weight", w, 3, m->n_ff, re, m->n_expert);
            T("ffn_up_exps.weight", w, 3, e, rff, m->n_expert);
        } else {
            T("ffn_gate.weight", w, 2, e, rff, 1);
            T("ffn_down.weight", w, 2, m->n_ff, re, 1);
            T("ffn_up.weight", w, 2, e, rff, 1);
        }
        if (m->odd_tensor && l == 0)
            T("ffn_odd.weight", w, 2, 48, 16, 1);
#undef T
    }
    n = add_decl(t, n, "output_norm.weight", GGUFQ_TYPE_F32, 1, e, 1, 1);
    if (!m->tied)
        n = add_decl(t, n, "output.weight", w, 2, e, m->n_vocab, 1);
    return n;
}

static void set_u32(ggufq_writer *w, const char *key, uint64_t v)
{
    assert_int_equal(ggufq_writer_set_uint(w, key, GGUFQ_VT_UINT32, v), GGUFQ_OK);
}

static void write_metadata(ggufq_writer *w, const model_spec *m)
{
    assert_int_equal(ggufq_writer_set_string(w, "general.architecture", "llama", 5), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "general.name", m->tag, strlen(m->tag)), GGUFQ_OK);
    set_u32(w, "llama.block_count", (uint64_t)m->n_layer);
    set_u32(w, "llama.context_length", 256);
    set_u32(w, "llama.embedding_length", (uint64_t)m->n_embd);
    set_u32(w, "llama.feed_forward_length", (uint64_t)m->n_ff);
    set_u32(w, "llama.attention.head_count", (uint64_t)m->n_head);
    set_u32(w, "llama.attention.head_count_kv", (uint64_t)m->n_head_kv);
    assert_int_equal(ggufq_writer_set_float(w, "llama.attention.layer_norm_rms_epsilon",
                                            GGUFQ_VT_FLOAT32, 1e-5), GGUFQ_OK);
    set_u32(w, "llama.rope.dimension_count", (uint64_t)(m->n_embd / m->n_head));
    if (m->n_expert > 0) {
        set_u32(w, "llama.expert_count", (uint64_t)m->n_expert);
        set_u32(w, "llama.expert_used_count", 2);
    }
    set_u32(w, "general.file_type", 1);
    assert_int_equal(ggufq_writer_set_string(w, "tokenizer.ggml.model", "llama", 5), GGUFQ_OK);
    char **toks = calloc((size_t)m->n_vocab, sizeof *toks);
    size_t *lens = calloc((size_t)m->n_vocab, sizeof *lens);
    float *scores = calloc((size_t)m->n_vocab, sizeof *scores);
    int32_t *types = calloc((size_t)m->n_vocab, sizeof *types);
    assert_true(toks && lens && scores && types);
    for (int i = 0; i < m->n_vocab; i++) {
        toks[i] = malloc(16);
        snprintf(toks[i], 16, i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : "t%d", i);
        lens[i] = strlen(toks[i]);
        scores[i] = -(float)i;
        types[i] = i < 3 ? (i == 0 ? 2 : 3) : 1;
    }
    assert_int_equal(ggufq_writer_set_string_array(w, "tokenizer.ggml.tokens", (const char *const *)toks,
                                                   lens, (uint64_t)m->n_vocab), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_array(w, "tokenizer.ggml.scores", GGUFQ_VT_FLOAT32, scores,
                                            (uint64_t)m->n_vocab), GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_array(w, "tokenizer.ggml.token_type", GGUFQ_VT_INT32, types,
                                            (uint64_t)m->n_vocab), GGUFQ_OK);
    set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    for (int i = 0; i < m->n_vocab; i++)
        free(toks[i]);
    free(toks); free(lens); free(scores); free(types);
}

static void write_model(const char *path, const model_spec *m)
{
    tensor_decl t[512];
    int n = model_tensors(m, t);
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    write_metadata(w, m);
    for (int i = 0; i < n; i++)
        assert_int_equal(ggufq_writer_add_tensor(w, t[i].name, t[i].type, (uint32_t)t[i].n_dims, t[i].dims),
                         GGUFQ_OK);
    tu_rng rng = { 0x5eed0000u + (uint64_t)m->n_embd * 31u + (uint64_t)m->n_layer };
    for (int i = 0; i < n; i++) {
        int64_t ne = t[i].dims[0] * t[i].dims[1] * t[i].dims[2];
        size_t sz = ggufq_row_size(t[i].type, t[i].dims[0]) * (size_t)(ne / t[i].dims[0]);
        uint8_t *buf = malloc(sz);
        assert_non_null(buf);
        for (int64_t k = 0; k < ne; k++) {
            float v = strstr(t[i].name, "norm") ? 1.0f + 0.1f * tu_rand_gauss(&rng) : 0.02f * tu_rand_gauss(&rng);
            if (t[i].type == GGUFQ_TYPE_F32) {
                memcpy(buf + 4 * k, &v, 4);
            } else {
                uint16_t h = gq_fp32_to_fp16(v);
                memcpy(buf + 2 * k, &h, 2);
            }
        }
        assert_int_equal(ggufq_writer_write(w, buf, sz), GGUFQ_OK);
        free(buf);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

/* ------------------------------------------------------------------------- */
/* Planning a file                                                           */
/* ------------------------------------------------------------------------- */

typedef struct planned {
    int64_t           n;
    gq_plan_input    *in;
    ggufq_plan_entry *out;
    int64_t          *order;
    int               status;
    ggufq_error       err;
} planned;

static int64_t get_int(const ggufq_file *f, const char *key, int64_t dflt)
{
    ggufq_value v;
    int64_t x;
    if (ggufq_get(f, key, &v) != GGUFQ_OK || ggufq_value_int(&v, &x) != GGUFQ_OK)
        return dflt;
    return x;
}

static void plan_file(const char *path, const ggufq_requant_options *opts, int ftype,
                      ggufq_type dtype, bool has_imatrix, planned *p)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(path, NULL, &f, NULL), GGUFQ_OK);
    memset(p, 0, sizeof *p);
    p->n = ggufq_tensor_count(f);
    p->in = calloc((size_t)p->n, sizeof *p->in);
    p->out = calloc((size_t)p->n, sizeof *p->out);
    p->order = calloc((size_t)p->n, sizeof *p->order);
    assert_true(p->in && p->out && p->order);
    gq_plan_input *file_order = calloc((size_t)p->n, sizeof *file_order);
    assert_non_null(file_order);
    for (int64_t i = 0; i < p->n; i++) {
        ggufq_tensor_info ti;
        assert_int_equal(ggufq_tensor_at(f, i, &ti), GGUFQ_OK);
        file_order[i].name = strdup(ti.name);
        file_order[i].type = ti.type;
        file_order[i].n_dims = ti.n_dims;
        memcpy(file_order[i].dims, ti.dims, sizeof ti.dims);
    }
    /* the plan takes the tensors in llama.cpp's order; p->in and p->out are in that order */
    assert_int_equal(gq_plan_order(file_order, p->n, p->order), GGUFQ_OK);
    for (int64_t k = 0; k < p->n; k++)
        p->in[k] = file_order[p->order[k]];
    free(file_order);
    gq_model_info m = { "llama", get_int(f, "llama.block_count", 0),
                        get_int(f, "llama.attention.head_count", 0),
                        get_int(f, "llama.attention.head_count_kv", 0),
                        get_int(f, "llama.expert_count", 0), true };
    p->status = gq_plan_build(&m, p->in, p->n, opts, ftype, dtype, has_imatrix, p->out, &p->err);
    ggufq_close(f);
}

static void planned_free(planned *p)
{
    for (int64_t i = 0; i < p->n; i++)
        free((char *)p->in[i].name);
    free(p->in);
    free(p->out);
    free(p->order);
}

/* ------------------------------------------------------------------------- */
/* One comparison                                                            */
/* ------------------------------------------------------------------------- */

typedef struct run_case {
    const char *target;        /* recipe or type name, resolved with gq_resolve_target */
    bool        pure;          /* --pure on a recipe */
    int         output_type;   /* -1 or a ggml type */
    int         token_embd_type;
    bool        leave_output;
    const char *tt[3];         /* --tensor-type REGEX=TYPE, NULL-terminated */
    bool        imatrix;       /* give the peer an importance matrix (all tensors) */
} run_case;

/* An importance matrix for every 2D+ tensor of in_path (positive values); names and data malloc'd. */
static peer_imatrix *make_imatrix(const char *in_path)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(in_path, NULL, &f, NULL), GGUFQ_OK);
    int64_t n = ggufq_tensor_count(f), k = 0;
    peer_imatrix *im = calloc((size_t)n + 1, sizeof *im);
    assert_non_null(im);
    tu_rng rng = { 77 };
    for (int64_t i = 0; i < n; i++) {
        ggufq_tensor_info ti;
        assert_int_equal(ggufq_tensor_at(f, i, &ti), GGUFQ_OK);
        if (ti.n_dims < 2)
            continue;
        size_t sz = (size_t)(ti.dims[0] * ti.dims[2]);
        float *d = malloc(sz * sizeof *d);
        assert_non_null(d);
        for (size_t j = 0; j < sz; j++)
            d[j] = 0.5f + tu_rand_uniform(&rng);
        im[k].name = strdup(ti.name);
        im[k].data = d;
        im[k].size = sz;
        k++;
    }
    ggufq_close(f);
    return im;
}

static void free_imatrix(peer_imatrix *im)
{
    for (peer_imatrix *e = im; e && e->name; e++) {
        free((char *)e->name);
        free((float *)e->data);
    }
    free(im);
}

static int g_mismatches;
static int g_compared;   /* tensors compared with the peer's output */

static void compare_one(const char *in_path, const char *out_path, const run_case *c)
{
    int ftype = -1;
    ggufq_type dtype;
    bool is_recipe = false;
    assert_int_equal(gq_resolve_target(c->target, &ftype, &dtype, &is_recipe), GGUFQ_OK);

    ggufq_requant_options opts;
    ggufq_requant_options_init(&opts);
    opts.target = c->target;
    opts.pure = c->pure;
    opts.output_tensor_type = c->output_type;
    opts.token_embedding_type = c->token_embd_type;
    opts.leave_output_tensor = c->leave_output;
    size_t ntt = 0;
    while (ntt < 3 && c->tt[ntt])
        ntt++;
    opts.tensor_types = c->tt;
    opts.n_tensor_types = ntt;

    peer_qparams qp = rq_peer.defaults();
    qp.nthread = 1;
    qp.ftype = ftype;
    qp.pure = c->pure || !is_recipe;
    qp.allow_requantize = true;
    qp.quantize_output_tensor = !c->leave_output;
    if (c->output_type >= 0)
        qp.output_tensor_type = c->output_type;
    if (c->token_embd_type >= 0)
        qp.token_embedding_type = c->token_embd_type;
    peer_tt tt[4];
    char tt_pat[3][64];
    for (size_t i = 0; i < ntt; i++) {
        const char *eq = strchr(c->tt[i], '=');
        snprintf(tt_pat[i], sizeof tt_pat[i], "%.*s", (int)(eq - c->tt[i]), c->tt[i]);
        for (char *q = tt_pat[i]; *q; q++)   /* llama-quantize lowercases the pattern */
            *q = (char)tolower((unsigned char)*q);
        tt[i].pattern = tt_pat[i];
        tt[i].type = ggufq_type_from_name(eq + 1);
    }
    tt[ntt].pattern = NULL;
    tt[ntt].type = GGUFQ_TYPE_COUNT;
    if (ntt)
        qp.tt_overrides = tt;

    peer_imatrix *im = c->imatrix ? make_imatrix(in_path) : NULL;
    qp.imatrix = im;
    remove(out_path);
    clock_t t0 = clock();
    uint32_t peer_rc = rq_peer.quantize(in_path, out_path, &qp);
    if (getenv("GGUFQ_TEST_TIMING"))
        fprintf(stderr, "%s %s: %.2f s\n", in_path, c->target, (double)(clock() - t0) / CLOCKS_PER_SEC);
    free_imatrix(im);

    planned p;
    plan_file(in_path, &opts, ftype, dtype, c->imatrix, &p);
    if (peer_rc != 0) {
        fprintf(stderr, "note: peer refused %s%s%s (plan: %s)\n", c->target, c->pure ? " --pure" : "",
                c->imatrix ? " --imatrix" : "",
                p.status == GGUFQ_OK ? "ok" : p.err.message);
        if (p.status == GGUFQ_OK) {
            fprintf(stderr, "MISMATCH %s: peer failed, plan succeeded\n", c->target);
            g_mismatches++;
        }
        planned_free(&p);
        return;
    }
    if (p.status != GGUFQ_OK) {
        fprintf(stderr, "MISMATCH %s: peer succeeded, plan failed: %s\n", c->target, p.err.message);
        g_mismatches++;
        planned_free(&p);
        return;
    }
    ggufq_file *o = NULL;
    assert_int_equal(ggufq_open(out_path, NULL, &o, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_tensor_count(o), p.n);
    for (int64_t k = 0; k < p.n; k++) {
        ggufq_tensor_info ti;
        assert_int_equal(ggufq_tensor_at(o, k, &ti), GGUFQ_OK);
        const ggufq_plan_entry *e = &p.out[k];
        if (strcmp(ti.name, e->name) != 0) {
            fprintf(stderr, "MISMATCH %s: output tensor %lld is %s, plan order says %s\n",
                    c->target, (long long)k, ti.name, e->name);
            g_mismatches++;
            continue;
        }
        if (ti.type != e->out_type) {
            fprintf(stderr, "MISMATCH %s%s: %s: peer %s, plan %s (%s)\n", c->target, c->pure ? " --pure" : "",
                    ti.name, ggufq_type_name(ti.type), ggufq_type_name(e->out_type), e->reason);
            g_mismatches++;
        }
        g_compared++;
        if (ti.size != e->out_bytes) {
            fprintf(stderr, "MISMATCH %s: %s: peer %llu bytes, plan %llu\n", c->target, ti.name,
                    (unsigned long long)ti.size, (unsigned long long)e->out_bytes);
            g_mismatches++;
        }
    }
    int64_t ft = get_int(o, "general.file_type", -1);
    if (ft != ftype) {
        fprintf(stderr, "MISMATCH %s: general.file_type peer %lld, ours %d\n", c->target, (long long)ft, ftype);
        g_mismatches++;
    }
    ggufq_close(o);
    planned_free(&p);
}

/* ------------------------------------------------------------------------- */
/* Tests                                                                     */
/* ------------------------------------------------------------------------- */

static const char *const RECIPES[] = {
    "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q2_K", "Q2_K_S",
    "Q6_K", "Q8_0", "Q4_0", "Q5_1", "IQ4_XS", "IQ4_NL", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M",
    "IQ2_M", "TQ1_0", "TQ2_0", "MXFP4_MOE", "F16", "BF16",
};
/* type names: llama-quantize's recipes (q4_K is Q4_K_M), run as named and with --pure; mxfp4 is a bare type */
static const char *const BARE[] = { "q4_K", "Q3_K", "q5_K", "q6_K", "iq4_xs", "q2_K", "tq2_0", "mxfp4" };

static void run_model(const model_spec *m, const char *const *targets, size_t nt, bool pure_too)
{
    const char *dir = tu_tmpdir(m->tag);
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_model(in, m);
    for (size_t i = 0; i < nt; i++) {
        run_case c = { targets[i], false, -1, -1, false, { NULL }, false };
        compare_one(in, out, &c);
        if (pure_too) {
            c.pure = true;
            compare_one(in, out, &c);
        }
    }
}

static void test_dense_mha_f16(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    model_spec m = { "dense-mha", 8, 256, 512, 4, 4, 0, 64, false, GGUFQ_TYPE_F16, false, 32 };
    run_model(&m, RECIPES, sizeof RECIPES / sizeof RECIPES[0], false);
    run_model(&m, BARE, sizeof BARE / sizeof BARE[0], true);
    assert_int_equal(g_mismatches, 0);
}

static void test_dense_gqa_tied_f32(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    model_spec m = { "dense-gqa", 16, 256, 256, 8, 2, 0, 64, true, GGUFQ_TYPE_F32, false, 16 };
    run_model(&m, RECIPES, sizeof RECIPES / sizeof RECIPES[0], false);
    assert_int_equal(g_mismatches, 0);
}

static void test_fallbacks(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    /* n_embd 320: rows of 320 fit 32-blocks but not 256-blocks; ffn_odd has rows of 48 (f16) */
    model_spec m = { "fallback", 2, 320, 256, 5, 5, 0, 64, false, GGUFQ_TYPE_F16, true, 0 };
    static const char *const T[] = { "Q4_K_M", "Q6_K", "Q5_K_S", "Q2_K", "IQ4_XS", "IQ3_S", "TQ1_0",
                                     "q4_K", "q3_K", "iq3_s" };
    run_model(&m, T, sizeof T / sizeof T[0], true);
    assert_int_equal(g_mismatches, 0);
}

static void test_moe(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    model_spec m4 = { "moe4", 2, 256, 256, 4, 4, 4, 64, false, GGUFQ_TYPE_F16, false, 32 };
    static const char *const T[] = { "MXFP4_MOE", "Q4_K_M", "Q3_K_M", "IQ3_M", "Q2_K" };
    run_model(&m4, T, sizeof T / sizeof T[0], false);
    model_spec m8 = { "moe8", 2, 256, 256, 4, 1, 8, 64, true, GGUFQ_TYPE_F16, false, 32 };
    run_model(&m8, T, sizeof T / sizeof T[0], false);
    assert_int_equal(g_mismatches, 0);
}

static void test_overrides(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    model_spec m = { "overrides", 4, 256, 256, 4, 2, 0, 64, false, GGUFQ_TYPE_F16, false, 0 };
    const char *dir = tu_tmpdir(m.tag);
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_model(in, &m);
    run_case cases[] = {
        { "Q4_K_M", false, GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q4_0, false, { NULL }, false },
        { "Q4_K_M", false, -1, -1, true, { NULL }, false },
        { "Q4_K_M", false, -1, -1, false, { "attn_v=q8_0", "blk\\.[0-1]\\.FFN_down=q5_K", NULL }, false },
        { "q4_K", true, -1, GGUFQ_TYPE_Q6_K, false, { "attn_(q|k)=iq4_nl", NULL }, false },
        { "F16", false, GGUFQ_TYPE_Q8_0, -1, false, { "attn_v=q8_0", NULL }, false },
        { "Q3_K_M", true, -1, -1, true, { NULL }, false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        compare_one(in, out, &cases[i]);
    assert_int_equal(g_mismatches, 0);
}

/* With an importance matrix: the recipes that need one, and the rules that change with one. */
static void test_with_imatrix(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    /* IQ1_S/IQ1_M/IQ2_M first build grids of neighbours in ggml, ~15 s: only with GGUFQ_TEST_SLOW=1 */
    static const char *const ALL[] = { "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S", "IQ3_XXS", "IQ3_XS",
                                       "IQ4_NL", "IQ4_XS", "Q4_0", "Q5_0", "Q4_K_M", "IQ1_S", "IQ1_M", "IQ2_M" };
    const char *const *T = ALL;
    size_t n_all = getenv("GGUFQ_TEST_SLOW") ? sizeof ALL / sizeof ALL[0] : sizeof ALL / sizeof ALL[0] - 3;
    /* the 1-2 bit searches are slow: the other models get a few of them */
    static const char *const GQA[] = { "IQ2_S", "IQ3_XXS", "IQ4_NL", "Q5_0", "Q2_K_S" };
    static const char *const MOE[] = { "IQ2_XXS", "IQ3_XS", "IQ4_XS", "IQ3_XXS" };
    const struct { const char *const *t; size_t n; } lists[] = {
        { T, n_all }, { GQA, sizeof GQA / sizeof GQA[0] }, { MOE, sizeof MOE / sizeof MOE[0] },
    };
    model_spec ms[] = {
        { "imx-mha", 8, 256, 256, 4, 4, 0, 64, false, GGUFQ_TYPE_F16, false, 16 },
        { "imx-gqa", 8, 256, 256, 8, 2, 0, 64, true, GGUFQ_TYPE_F16, false, 16 },
        { "imx-moe8", 2, 256, 256, 4, 4, 8, 64, false, GGUFQ_TYPE_F16, false, 16 },
    };
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        const char *dir = tu_tmpdir(ms[k].tag);
        char in[4200], out[4200];
        snprintf(in, sizeof in, "%s/in.gguf", dir);
        snprintf(out, sizeof out, "%s/out.gguf", dir);
        write_model(in, &ms[k]);
        for (size_t i = 0; i < lists[k].n; i++) {
            run_case c = { lists[k].t[i], false, -1, -1, false, { NULL }, true };
            compare_one(in, out, &c);
        }
    }
    assert_int_equal(g_mismatches, 0);
}

/* The fixture (a real converted model, tied embeddings absent or present as it is). */
static void test_fixture(void **state)
{
    (void)state;
    if (!rq_peer_ready()) { skip(); return; }
    g_mismatches = 0;
    const char *dir = tu_tmpdir("fixture");
    char out[4200];
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    static const char *const T[] = { "Q4_K_M", "Q3_K_S", "Q6_K", "q4_K", "IQ4_NL" };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        run_case c = { T[i], false, -1, -1, false, { NULL }, false };
        compare_one(tu_path("data/llama-2-tiny-random.gguf"), out, &c);
    }
    assert_int_equal(g_mismatches, 0);
}

/* IQ1/IQ2_XXS/XS recipes: llama.cpp refuses them without an imatrix; so does the plan. */
static void test_needs_imatrix(void **state)
{
    (void)state;
    model_spec m = { "imatrix", 2, 256, 256, 4, 4, 0, 64, false, GGUFQ_TYPE_F16, false, 0 };
    const char *dir = tu_tmpdir(m.tag);
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_model(in, &m);
    static const char *const T[] = { "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S", "iq2_xxs" };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        int ftype;
        ggufq_type dt;
        bool rec;
        assert_int_equal(gq_resolve_target(T[i], &ftype, &dt, &rec), GGUFQ_OK);
        ggufq_requant_options opts;
        ggufq_requant_options_init(&opts);
        opts.target = T[i];
        planned p;
        plan_file(in, &opts, ftype, dt, false, &p);
        assert_int_equal(p.status, GGUFQ_E_NEEDS_IMATRIX);
        assert_non_null(strstr(p.err.message, "blk.0."));
        assert_non_null(strstr(p.err.message, "importance matrix"));
        planned_free(&p);
        /* with an imatrix the plan goes through; a dry run refuses as the run does */
        plan_file(in, &opts, ftype, dt, true, &p);
        assert_int_equal(p.status, GGUFQ_OK);
        planned_free(&p);
        opts.dry_run = true;
        plan_file(in, &opts, ftype, dt, false, &p);
        assert_int_equal(p.status, GGUFQ_E_NEEDS_IMATRIX);
        planned_free(&p);
        if (rq_peer_ready()) {
            peer_qparams qp = rq_peer.defaults();
            qp.nthread = 1;
            qp.ftype = ftype;
            qp.pure = !rec;
            assert_int_not_equal(rq_peer.quantize(in, out, &qp), 0);
        }
    }
}

/* ggufq_requant_options_check on options that name only a target. */
static int check_target(const char *target, ggufq_error *err)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = target;
    return ggufq_requant_options_check(&o, err);
}

static void test_target_names(void **state)
{
    (void)state;
    static const struct { const char *name; int ftype; int type; bool recipe; } C[] = {
        { "Q4_K_M", 15, GGUFQ_TYPE_Q4_K, true },  { "q4_k_s", 14, GGUFQ_TYPE_Q4_K, true },
        { "Q5_K_M", 17, GGUFQ_TYPE_Q5_K, true },  { "Q5_K_S", 16, GGUFQ_TYPE_Q5_K, true },
        { "Q3_K_S", 11, GGUFQ_TYPE_Q3_K, true },  { "Q3_K_M", 12, GGUFQ_TYPE_Q3_K, true },
        { "Q3_K_L", 13, GGUFQ_TYPE_Q3_K, true },  { "Q2_K", 10, GGUFQ_TYPE_Q2_K, true },
        { "Q2_K_S", 21, GGUFQ_TYPE_Q2_K, true },  { "Q6_K", 18, GGUFQ_TYPE_Q6_K, true },
        { "IQ1_S", 24, GGUFQ_TYPE_IQ1_S, true },  { "IQ1_M", 31, GGUFQ_TYPE_IQ1_M, true },
        { "IQ2_XXS", 19, GGUFQ_TYPE_IQ2_XXS, true }, { "IQ2_XS", 20, GGUFQ_TYPE_IQ2_XS, true },
        { "IQ2_S", 28, GGUFQ_TYPE_IQ2_XS, true }, { "IQ2_M", 29, GGUFQ_TYPE_IQ2_S, true },
        { "IQ3_XXS", 23, GGUFQ_TYPE_IQ3_XXS, true }, { "IQ3_XS", 22, GGUFQ_TYPE_IQ3_S, true },
        { "IQ3_S", 26, GGUFQ_TYPE_IQ3_S, true },  { "IQ3_M", 27, GGUFQ_TYPE_IQ3_S, true },
        { "IQ4_NL", 25, GGUFQ_TYPE_IQ4_NL, true }, { "IQ4_XS", 30, GGUFQ_TYPE_IQ4_XS, true },
        { "TQ1_0", 36, GGUFQ_TYPE_TQ1_0, true },  { "TQ2_0", 37, GGUFQ_TYPE_TQ2_0, true },
        { "MXFP4_MOE", 38, GGUFQ_TYPE_MXFP4, true }, { "F16", 1, GGUFQ_TYPE_F16, true },
        { "bf16", 32, GGUFQ_TYPE_BF16, true },    { "Q8_0", 7, GGUFQ_TYPE_Q8_0, true },
        { "Q4_0", 2, GGUFQ_TYPE_Q4_0, true },     { "Q1_0", 40, GGUFQ_TYPE_Q1_0, true },
        { "Q2_0", 41, GGUFQ_TYPE_Q2_0, true },    { "F32", 0, GGUFQ_TYPE_F32, true },
        /* llama-quantize's aliases of the _M recipes (not bare types), in any case */
        { "Q4_K", 15, GGUFQ_TYPE_Q4_K, true },    { "q3_K", 12, GGUFQ_TYPE_Q3_K, true },
        { "q5_k", 17, GGUFQ_TYPE_Q5_K, true },    { "COPY", 0, GGUFQ_TYPE_F32, true },
        /* ftype ids, read as std::stoi does; the first listed name of that id (0: F32) */
        { "15", 15, GGUFQ_TYPE_Q4_K, true },      { "7", 7, GGUFQ_TYPE_Q8_0, true },
        { "0", 0, GGUFQ_TYPE_F32, true },         { " +12", 12, GGUFQ_TYPE_Q3_K, true },
        { "28abc", 28, GGUFQ_TYPE_IQ2_XS, true }, { "38", 38, GGUFQ_TYPE_MXFP4, true },
        /* ggml type names outside the list (a ggufq extension): pure, with the ftype of
         * the recipe whose default type they are */
        { "mxfp4", 38, GGUFQ_TYPE_MXFP4, false }, { "nvfp4", 39, GGUFQ_TYPE_NVFP4, false },
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        int ftype = -1;
        ggufq_type t = GGUFQ_TYPE_COUNT;
        bool rec = !C[i].recipe;
        assert_int_equal(gq_resolve_target(C[i].name, &ftype, &t, &rec), GGUFQ_OK);
        assert_int_equal(ftype, C[i].ftype);
        assert_int_equal(t, C[i].type);
        assert_int_equal(rec, C[i].recipe);
        assert_int_equal(check_target(C[i].name, NULL), GGUFQ_OK);   /* the public check */
    }
    /* 4, 5: ids without a name in the list; 2147483648 does not fit an int */
    static const char *const BAD[] = { "q8_1", "q8_K", "i32", "f64", "Q4_K_X", "", "4", "5", "-1", "99",
                                       "1024", "2147483648", "+", "Q4_K ", "x15" };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        assert_int_not_equal(gq_resolve_target(BAD[i], NULL, NULL, NULL), GGUFQ_OK);
        ggufq_error err;
        assert_int_not_equal(check_target(BAD[i], &err), GGUFQ_OK);
        assert_non_null(strstr(err.message, "is not a llama-quantize type"));
    }
    assert_true(gq_target_is_copy("COPY"));
    assert_true(gq_target_is_copy("Copy"));
    assert_false(gq_target_is_copy("0"));    /* ftype 0 is F32, not COPY, as in llama-quantize */
    assert_false(gq_target_is_copy("F32"));
    assert_int_equal(gq_resolve_target(NULL, NULL, NULL, NULL), GGUFQ_E_INVALID_ARG);
}

/* Unknown architectures: the same name-based rules; 1D and norms kept. */
static void test_unknown_arch(void **state)
{
    (void)state;
    gq_plan_input in[] = {
        { "token_embd.weight", GGUFQ_TYPE_F16, 2, { 256, 64, 1, 1 } },
        { "blk.0.attn_norm.weight", GGUFQ_TYPE_F32, 1, { 256, 1, 1, 1 } },
        { "blk.0.mixer.in_proj.weight", GGUFQ_TYPE_F16, 2, { 256, 512, 1, 1 } },
        { "blk.0.mixer.bias", GGUFQ_TYPE_F32, 2, { 256, 4, 1, 1 } },
        { "blk.0.flat.weight", GGUFQ_TYPE_F16, 2, { 256, 1, 1, 1 } },
        { "blk.0.ssm_conv1d.weight", GGUFQ_TYPE_F32, 2, { 4, 256, 1, 1 } },
        { "output.weight", GGUFQ_TYPE_F16, 2, { 256, 64, 1, 1 } },
    };
    ggufq_plan_entry out[7];
    gq_model_info m = { "mystery", 1, 4, 4, 0, false };
    ggufq_requant_options opts;
    ggufq_requant_options_init(&opts);
    opts.target = "Q4_K_M";
    assert_int_equal(gq_plan_build(&m, in, 7, &opts, 15, GGUFQ_TYPE_Q4_K, false, out, NULL), GGUFQ_OK);
    assert_int_equal(out[0].out_type, GGUFQ_TYPE_Q4_K);
    assert_int_equal(out[1].out_type, GGUFQ_TYPE_F32);
    assert_int_equal(out[2].out_type, GGUFQ_TYPE_Q4_K);
    assert_int_equal(out[3].out_type, GGUFQ_TYPE_F32);   /* not a weight */
    assert_int_equal(out[4].out_type, GGUFQ_TYPE_F16);   /* effectively 1D */
    assert_int_equal(out[5].out_type, GGUFQ_TYPE_F32);   /* ssm_conv1d */
    assert_int_equal(out[6].out_type, GGUFQ_TYPE_Q6_K);
    assert_string_equal(out[1].reason, "kept: 1D");
    assert_int_equal(out[6].out_bytes, 64u * ggufq_row_size(GGUFQ_TYPE_Q6_K, 256));
    /* bad overrides */
    const char *bad_tt[] = { "attn_v" };
    opts.tensor_types = bad_tt;
    opts.n_tensor_types = 1;
    ggufq_error err;
    assert_int_equal(gq_plan_build(&m, in, 7, &opts, 15, GGUFQ_TYPE_Q4_K, false, out, &err),
                     GGUFQ_E_INVALID_ARG);
    const char *bad_ty[] = { "attn_v=q8_1" };
    opts.tensor_types = bad_ty;
    assert_int_equal(gq_plan_build(&m, in, 7, &opts, 15, GGUFQ_TYPE_Q4_K, false, out, &err),
                     GGUFQ_E_INVALID_ARG);
}

/* The public name of an ftype id: the recipe's name, never an alias; NULL for ids without one. */
static void test_ftype_names(void **state)
{
    (void)state;
    assert_string_equal(ggufq_ftype_name(15), "Q4_K_M");
    assert_string_equal(ggufq_ftype_name(12), "Q3_K_M");   /* not its alias Q3_K */
    assert_string_equal(ggufq_ftype_name(0), "F32");       /* not COPY */
    assert_string_equal(ggufq_ftype_name(1), "F16");
    assert_string_equal(ggufq_ftype_name(7), "Q8_0");
    assert_string_equal(ggufq_ftype_name(32), "BF16");
    assert_string_equal(ggufq_ftype_name(38), "MXFP4_MOE");
    assert_null(ggufq_ftype_name(4));                      /* ids llama.cpp dropped */
    assert_null(ggufq_ftype_name(-1));
    assert_null(ggufq_ftype_name(1024 + 15));              /* LLAMA_FTYPE_GUESSED is a flag, not a name */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ftype_names),
        cmocka_unit_test(test_target_names),
        cmocka_unit_test(test_unknown_arch),
        cmocka_unit_test(test_needs_imatrix),
        cmocka_unit_test(test_dense_mha_f16),
        cmocka_unit_test(test_dense_gqa_tied_f32),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_with_imatrix),
        cmocka_unit_test(test_fixture),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fprintf(stderr, "%d tensor types compared with the peer\n", g_compared);
    return rc;
}
