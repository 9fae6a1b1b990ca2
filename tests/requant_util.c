/*
 * requant_util.c — the peer, test models and runs shared by the requant
 * tests against llama.cpp (see requant_util.h).
 */
#include "requant_util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/plan.h"

/* ------------------------------------------------------------------------- */
/* The peer                                                                   */
/* ------------------------------------------------------------------------- */

rq_peer_lib rq_peer;

bool rq_peer_ready(void)
{
    static int state = 0;
    if (state == 0) {
        state = -1;
        rq_peer.lib = tu_peer_open("libllama.v0.5.0.so");
        rq_peer.ggml = tu_peer_open("libggml-base.so");
        peer_quantizer q;
        if (rq_peer.lib && rq_peer.ggml && peer_quantizer_bind(&q, rq_peer.lib, !getenv("GGUFQ_TEST_VERBOSE"))) {
            rq_peer.defaults = q.defaults;
            rq_peer.quantize = q.quantize;
            state = 1;
        }
    }
    if (state < 0)
        fprintf(stderr, "SKIP: llama.cpp peer (libllama.v0.5.0.so) not available\n");
    return state > 0;
}

/* ------------------------------------------------------------------------- */
/* Test models                                                                */
/* ------------------------------------------------------------------------- */

const model_shape RQ_SMALL = { 256, 512, 512, 2, 4, 2 };

void rq_put_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1)
{
    int64_t dims[2] = { ne0, ne1 };
    assert_int_equal(ggufq_writer_add_tensor(w, name, t, ne1 > 0 ? 2 : 1, dims), GGUFQ_OK);
}

int rq_model_tensors(const model_shape *m, tensor_spec *ts)
{
    int n = 0;
#define T(nm_, a_, b_) do { snprintf(ts[n].name, sizeof ts[n].name, "%s", nm_); ts[n].ne0 = a_; ts[n].ne1 = b_; n++; } while (0)
    int64_t kv = m->n_embd / m->n_head * m->n_head_kv;
    T("token_embd.weight", m->n_embd, m->n_vocab);
    for (int64_t l = 0; l < m->n_layer; l++) {
        char b[64];
#define L(suffix_, a_, b2_) do { snprintf(b, sizeof b, "blk.%lld.%s", (long long)l, suffix_); T(b, a_, b2_); } while (0)
        L("attn_norm.weight", m->n_embd, 0);
        L("attn_q.weight", m->n_embd, m->n_embd);
        L("attn_k.weight", m->n_embd, kv);
        L("attn_v.weight", m->n_embd, kv);
        L("attn_output.weight", m->n_embd, m->n_embd);
        L("ffn_norm.weight", m->n_embd, 0);
        L("ffn_gate.weight", m->n_embd, m->n_ff);
        L("ffn_up.weight", m->n_embd, m->n_ff);
        L("ffn_down.weight", m->n_ff, m->n_embd);
#undef L
    }
    T("output_norm.weight", m->n_embd, 0);
    T("output.weight", m->n_embd, m->n_vocab);
#undef T
    return n;
}

void rq_put_llama_keys(ggufq_writer *w, const model_shape *m, uint32_t file_type)
{
    ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    ggufq_writer_set_string(w, "general.name", "ggufq test model", 16);
    ggufq_writer_set_uint(w, "llama.context_length", GGUFQ_VT_UINT32, 256);
    ggufq_writer_set_uint(w, "llama.embedding_length", GGUFQ_VT_UINT32, (uint64_t)m->n_embd);
    ggufq_writer_set_uint(w, "llama.block_count", GGUFQ_VT_UINT32, (uint64_t)m->n_layer);
    ggufq_writer_set_uint(w, "llama.feed_forward_length", GGUFQ_VT_UINT32, (uint64_t)m->n_ff);
    ggufq_writer_set_uint(w, "llama.rope.dimension_count", GGUFQ_VT_UINT32, (uint64_t)(m->n_embd / m->n_head));
    ggufq_writer_set_uint(w, "llama.attention.head_count", GGUFQ_VT_UINT32, (uint64_t)m->n_head);
    ggufq_writer_set_uint(w, "llama.attention.head_count_kv", GGUFQ_VT_UINT32, (uint64_t)m->n_head_kv);
    ggufq_writer_set_float(w, "llama.attention.layer_norm_rms_epsilon", GGUFQ_VT_FLOAT32, 1e-5);
    if (file_type != RQ_NO_FILE_TYPE)
        ggufq_writer_set_uint(w, "general.file_type", GGUFQ_VT_UINT32, file_type);
    ggufq_writer_set_uint(w, "llama.vocab_size", GGUFQ_VT_UINT32, (uint64_t)m->n_vocab);
    int32_t arr[3] = { 1, 2, 3 };
    ggufq_writer_set_array(w, "ggufq.test.array", GGUFQ_VT_INT32, arr, 3);
}

/* Random weights (norms near 1), as f16 or f32; nan_at >= 0 puts a NaN at that weight of blk.1.ffn_up. */
void rq_write_weights(ggufq_writer *w, const tensor_spec *t, ggufq_type type, tu_rng *rng, int64_t nan_at)
{
    int64_t n = t->ne0 * (t->ne1 > 0 ? t->ne1 : 1);
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    bool norm = t->ne1 == 0;
    for (int64_t i = 0; i < n; i++)
        x[i] = norm ? 1.0f + 0.1f * tu_rand_gauss(rng) : 0.02f * tu_rand_gauss(rng);
    if (nan_at >= 0 && strcmp(t->name, "blk.1.ffn_up.weight") == 0)
        x[nan_at] = NAN;
    size_t bytes = ggufq_row_size(type, n);
    void *enc = malloc(bytes);
    assert_non_null(enc);
    assert_int_equal(ggufq_quantize(type, x, enc, 1, n, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, enc, bytes), GGUFQ_OK);
    free(enc);
    free(x);
}

void rq_make_model_ft(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at,
                          uint32_t file_type)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    rq_put_llama_keys(w, m, file_type);
    tensor_spec ts[128];
    int n = rq_model_tensors(m, ts);
    for (int i = 0; i < n; i++)
        rq_put_tensor(w, ts[i].name, ts[i].ne1 > 0 ? type : GGUFQ_TYPE_F32, ts[i].ne0, ts[i].ne1);
    tu_rng rng = { seed };
    for (int i = 0; i < n; i++)
        rq_write_weights(w, &ts[i], ts[i].ne1 > 0 ? type : GGUFQ_TYPE_F32, &rng, nan_at);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

void rq_make_model(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at)
{
    rq_make_model_ft(path, m, type, seed, nan_at, type == GGUFQ_TYPE_F16 ? 1 : 0);
}

/* ------------------------------------------------------------------------- */
/* Comparison                                                                 */
/* ------------------------------------------------------------------------- */

/* Same tensors (name, type, shape, bytes) in the same order; same file_type. */
void rq_assert_same_tensors(const char *ours, const char *theirs, const char *what)
{
    ggufq_file *a = NULL, *b = NULL;
    assert_int_equal(ggufq_open(ours, NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(theirs, NULL, &b, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_tensor_count(a), ggufq_tensor_count(b));
    for (int64_t i = 0; i < ggufq_tensor_count(a); i++) {
        ggufq_tensor_info ta, tb;
        ggufq_tensor_at(a, i, &ta);
        ggufq_tensor_at(b, i, &tb);
        if (strcmp(ta.name, tb.name) != 0 || ta.type != tb.type || ta.size != tb.size ||
            memcmp(ta.data, tb.data, (size_t)ta.size) != 0) {
            fprintf(stderr, "%s: tensor %lld: ours %s %s, llama.cpp %s %s%s\n", what, (long long)i, ta.name,
                    ggufq_type_name(ta.type), tb.name, ggufq_type_name(tb.type),
                    ta.size == tb.size && ta.type == tb.type ? " (bytes differ)" : "");
            fail();
        }
    }
    ggufq_value va, vb;
    uint64_t fa = 0, fb = 1;
    assert_int_equal(ggufq_get(a, "general.file_type", &va), GGUFQ_OK);
    assert_int_equal(ggufq_get(b, "general.file_type", &vb), GGUFQ_OK);
    ggufq_value_uint(&va, &fa);
    ggufq_value_uint(&vb, &fb);
    assert_int_equal(fa, fb);
    ggufq_close(a);
    ggufq_close(b);
}

bool rq_same_file_bytes(const char *x, const char *y)
{
    size_t na = 0, nb = 0;
    uint8_t *a = tu_read_file(x, &na), *b = tu_read_file(y, &nb);
    bool same = a && b && na == nb && memcmp(a, b, na) == 0;
    free(a);
    free(b);
    return same;
}

void rq_run_ours(const char *in, const char *target, const char *out, const run_opts *ro)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = target;
    o.pure = ro->pure;
    o.nthreads = ro->nthreads ? ro->nthreads : 2;
    o.imatrix_path = ro->imatrix;
    o.kv_overrides = ro->kv;
    o.n_kv_overrides = ro->n_kv;
    ggufq_error err;
    int rc = ggufq_requant(in, out, &o, NULL, NULL, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "ggufq_requant %s %s: %s\n", in, target, err.message);
    assert_int_equal(rc, GGUFQ_OK);
}

void rq_run_peer(const char *in, const char *target, const char *out, const run_opts *ro)
{
    int ftype = 0;
    ggufq_type def;
    bool is_recipe;
    assert_int_equal(gq_resolve_target(target, &ftype, &def, &is_recipe), GGUFQ_OK);
    peer_qparams p = rq_peer.defaults();
    p.nthread = 2;
    p.ftype = ftype;
    p.allow_requantize = true;
    p.pure = ro->pure || !is_recipe;
    p.imatrix = ro->peer_im;
    p.kv_overrides = ro->peer_kv;
    assert_int_equal(rq_peer.quantize(in, out, &p), 0);
}

/* Quantize `in` to `target` with both; the tensors must match. */
void rq_parity(const char *dir, const char *in, const char *target, const run_opts *ro)
{
    char ours[4200], theirs[4200];
    snprintf(ours, sizeof ours, "%s/ours-%s.gguf", dir, target);
    snprintf(theirs, sizeof theirs, "%s/llama-%s.gguf", dir, target);
    rq_run_ours(in, target, ours, ro);
    rq_run_peer(in, target, theirs, ro);
    char what[256];
    snprintf(what, sizeof what, "%s -> %s", in, target);
    rq_assert_same_tensors(ours, theirs, what);
    printf("ok: %-8s %s\n", target, rq_same_file_bytes(ours, theirs) ? "(whole file identical)" : "(tensors identical)");
    remove(ours);
    remove(theirs);
}

/* Legacy .dat imatrix for the model's 2D weights: deterministic positive values. */
void rq_write_legacy_imatrix(const char *path, const model_shape *m, float ***vals, char names[][64], int *n_out)
{
    tensor_spec ts[128];
    int n = rq_model_tensors(m, ts), k = 0;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t count = 0;
    for (int i = 0; i < n; i++)
        count += ts[i].ne1 > 0 && strcmp(ts[i].name, "token_embd.weight") != 0;
    fwrite(&count, 4, 1, f);
    *vals = calloc((size_t)count, sizeof **vals);
    tu_rng rng = { 77 };
    for (int i = 0; i < n; i++) {
        if (ts[i].ne1 == 0 || strcmp(ts[i].name, "token_embd.weight") == 0)
            continue;
        int32_t len = (int32_t)strlen(ts[i].name), ncall = 10, nval = (int32_t)ts[i].ne0;
        fwrite(&len, 4, 1, f);
        fwrite(ts[i].name, 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        float *v = malloc((size_t)nval * sizeof *v), *avg = malloc((size_t)nval * sizeof *avg);
        for (int32_t j = 0; j < nval; j++) {
            v[j] = 10.0f * (0.1f + tu_rand_uniform(&rng));
            avg[j] = v[j] / (float)ncall;
        }
        fwrite(v, 4, (size_t)nval, f);
        free(v);
        (*vals)[k] = avg;
        snprintf(names[k], 64, "%s", ts[i].name);
        k++;
    }
    int32_t chunks = 10, dlen = 7;
    fwrite(&chunks, 4, 1, f);
    fwrite(&dlen, 4, 1, f);
    fwrite("wiki.tx", 1, 7, f);
    fclose(f);
    *n_out = k;
}

/* Write the model as two shards <dir>/split-0000i-of-00002.gguf. */
void rq_make_split(const char *dir, const char *whole)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(whole, NULL, &f, NULL), GGUFQ_OK);
    int64_t n = ggufq_tensor_count(f), half = n / 2;
    for (int s = 0; s < 2; s++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/split-%05d-of-00002.gguf", dir, s + 1);
        ggufq_writer *w = NULL;
        assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
        if (s == 0)
            for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
                ggufq_value v;
                ggufq_kv_value(f, i, &v);
                ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v);
            }
        ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, (uint64_t)s);
        ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, 2);
        ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, n);
        int64_t lo = s ? half : 0, hi = s ? n : half;
        for (int64_t i = lo; i < hi; i++) {
            ggufq_tensor_info t;
            ggufq_tensor_at(f, i, &t);
            assert_int_equal(ggufq_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims), GGUFQ_OK);
        }
        for (int64_t i = lo; i < hi; i++) {
            ggufq_tensor_info t;
            ggufq_tensor_at(f, i, &t);
            assert_int_equal(ggufq_writer_write(w, t.data, (size_t)t.size), GGUFQ_OK);
        }
        assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    }
    ggufq_close(f);
}
