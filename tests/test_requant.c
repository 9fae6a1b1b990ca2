/*
 * test_requant.c — ggufq_requant against llama.cpp's llama_model_quantize
 * (the peer's libllama): small llama models of random weights (F16 and F32)
 * are quantized by both, and every tensor must come out with the same name,
 * type and bytes, in the same order; for bare types (llama-quantize --pure),
 * for recipes, for the fixture's fallbacks, with an importance matrix and
 * metadata overrides. Then the engine's own guarantees: any thread count
 * gives the same file, split inputs, and failures that leave no file.
 */
#include "testutil.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/writer_internal.h"
#include "requant/plan.h"

/* ------------------------------------------------------------------------- */
/* The peer                                                                   */
/* ------------------------------------------------------------------------- */

/* llama_model_quantize_params of the peer build: 64 bytes (checked below). */
typedef struct peer_qparams {
    int32_t     nthread;
    int32_t     ftype;
    int32_t     output_tensor_type;
    int32_t     token_embedding_type;
    bool        allow_requantize;
    bool        quantize_output_tensor;
    bool        only_copy;
    bool        pure;
    bool        keep_split;
    bool        dry_run;
    const void *imatrix;       /* llama_model_imatrix_data[], name == NULL ends it */
    const void *kv_overrides;  /* llama_model_kv_override[], key[0] == 0 ends it */
    const void *tt_overrides;
    const void *prune_layers;
    uint8_t     tail[8];       /* fields this build adds; left at their defaults */
} peer_qparams;

typedef struct peer_imatrix { const char *name; const float *data; size_t size; } peer_imatrix;

typedef struct peer_kv_override {
    int32_t tag;               /* 0 int, 1 float, 2 bool, 3 str */
    char    key[128];
    union { int64_t val_i64; double val_f64; bool val_bool; char val_str[128]; } v;
} peer_kv_override;

typedef peer_qparams (*default_params_fn)(void);
typedef uint32_t (*quantize_fn)(const char *, const char *, const peer_qparams *);
typedef void (*log_set_fn)(void (*)(int, const char *, void *), void *);

static struct {
    void *lib, *ggml;
    default_params_fn defaults;
    quantize_fn quantize;
} peer;

static void quiet_log(int level, const char *text, void *user) { (void)level; (void)text; (void)user; }

static bool peer_ready(void)
{
    static int state = 0;
    if (state == 0) {
        state = -1;
        peer.lib = tu_peer_open("libllama.v0.5.0.so");
        peer.ggml = tu_peer_open("libggml-base.so");
        if (peer.lib && peer.ggml) {
            peer.defaults = (default_params_fn)dlsym(peer.lib, "llama_model_quantize_default_params");
            peer.quantize = (quantize_fn)dlsym(peer.lib, "llama_model_quantize");
            log_set_fn log_set = (log_set_fn)dlsym(peer.lib, "llama_log_set");
            void (*backend_init)(void) = (void (*)(void))dlsym(peer.lib, "llama_backend_init");
            if (peer.defaults && peer.quantize && log_set && backend_init) {
                log_set(quiet_log, NULL);
                backend_init();
                state = 1;
            }
        }
    }
    if (state < 0)
        fprintf(stderr, "SKIP: llama.cpp peer (libllama.v0.5.0.so) not available\n");
    return state > 0;
}

/* ------------------------------------------------------------------------- */
/* Test models                                                                */
/* ------------------------------------------------------------------------- */

typedef struct model_shape {
    int64_t n_embd, n_ff, n_vocab, n_layer, n_head, n_head_kv;
} model_shape;

static const model_shape SMALL = { 256, 512, 512, 2, 4, 2 };

static void put_tensor(ggufq_writer *w, const char *name, ggufq_type t, int64_t ne0, int64_t ne1)
{
    int64_t dims[2] = { ne0, ne1 };
    assert_int_equal(ggufq_writer_add_tensor(w, name, t, ne1 > 0 ? 2 : 1, dims), GGUFQ_OK);
}

typedef struct tensor_spec { char name[64]; int64_t ne0, ne1; } tensor_spec;

static int model_tensors(const model_shape *m, tensor_spec *ts)
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

#define NO_FILE_TYPE UINT32_MAX   /* put_llama_keys: leave general.file_type out */

static void put_llama_keys(ggufq_writer *w, const model_shape *m, uint32_t file_type)
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
    if (file_type != NO_FILE_TYPE)
        ggufq_writer_set_uint(w, "general.file_type", GGUFQ_VT_UINT32, file_type);
    ggufq_writer_set_uint(w, "llama.vocab_size", GGUFQ_VT_UINT32, (uint64_t)m->n_vocab);
    int32_t arr[3] = { 1, 2, 3 };
    ggufq_writer_set_array(w, "ggufq.test.array", GGUFQ_VT_INT32, arr, 3);
}

/* Random weights (norms near 1), as f16 or f32; nan_at >= 0 puts a NaN at that weight of blk.1.ffn_up. */
static void write_weights(ggufq_writer *w, const tensor_spec *t, ggufq_type type, tu_rng *rng, int64_t nan_at)
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

static void make_model_ft(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at,
                          uint32_t file_type)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    put_llama_keys(w, m, file_type);
    tensor_spec ts[128];
    int n = model_tensors(m, ts);
    for (int i = 0; i < n; i++)
        put_tensor(w, ts[i].name, ts[i].ne1 > 0 ? type : GGUFQ_TYPE_F32, ts[i].ne0, ts[i].ne1);
    tu_rng rng = { seed };
    for (int i = 0; i < n; i++)
        write_weights(w, &ts[i], ts[i].ne1 > 0 ? type : GGUFQ_TYPE_F32, &rng, nan_at);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

static void make_model(const char *path, const model_shape *m, ggufq_type type, uint64_t seed, int64_t nan_at)
{
    make_model_ft(path, m, type, seed, nan_at, type == GGUFQ_TYPE_F16 ? 1 : 0);
}

/* ------------------------------------------------------------------------- */
/* Comparison                                                                 */
/* ------------------------------------------------------------------------- */

/* Same tensors (name, type, shape, bytes) in the same order; same file_type. */
static void assert_same_tensors(const char *ours, const char *theirs, const char *what)
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

static bool same_file_bytes(const char *x, const char *y)
{
    size_t na = 0, nb = 0;
    uint8_t *a = tu_read_file(x, &na), *b = tu_read_file(y, &nb);
    bool same = a && b && na == nb && memcmp(a, b, na) == 0;
    free(a);
    free(b);
    return same;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

typedef struct run_opts {
    bool pure;
    int nthreads;
    const char *imatrix;          /* ours */
    const peer_imatrix *peer_im;  /* theirs */
    const char *const *kv;        /* ours */
    size_t n_kv;
    const peer_kv_override *peer_kv;
} run_opts;

static void run_ours(const char *in, const char *target, const char *out, const run_opts *ro)
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

static void run_peer(const char *in, const char *target, const char *out, const run_opts *ro)
{
    int ftype = 0;
    ggufq_type def;
    bool is_recipe;
    assert_int_equal(gq_resolve_target(target, &ftype, &def, &is_recipe), GGUFQ_OK);
    peer_qparams p = peer.defaults();
    p.nthread = 2;
    p.ftype = ftype;
    p.allow_requantize = true;
    p.pure = ro->pure || !is_recipe;
    p.imatrix = ro->peer_im;
    p.kv_overrides = ro->peer_kv;
    assert_int_equal(peer.quantize(in, out, &p), 0);
}

/* Quantize `in` to `target` with both; the tensors must match. */
static void parity(const char *dir, const char *in, const char *target, const run_opts *ro)
{
    char ours[4200], theirs[4200];
    snprintf(ours, sizeof ours, "%s/ours-%s.gguf", dir, target);
    snprintf(theirs, sizeof theirs, "%s/llama-%s.gguf", dir, target);
    run_ours(in, target, ours, ro);
    run_peer(in, target, theirs, ro);
    char what[256];
    snprintf(what, sizeof what, "%s -> %s", in, target);
    assert_same_tensors(ours, theirs, what);
    printf("ok: %-8s %s\n", target, same_file_bytes(ours, theirs) ? "(whole file identical)" : "(tensors identical)");
    remove(ours);
    remove(theirs);
}

/* ------------------------------------------------------------------------- */
/* Parity tests                                                               */
/* ------------------------------------------------------------------------- */

static const char *const BARE_TYPES[] = {
    "q4_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs", "iq3_s", "bf16",
};

static const char *const RECIPES[] = {
    "Q4_K_M", "Q4_K_S", "Q5_K_S", "Q3_K_M", "Q3_K_L", "Q6_K", "IQ4_XS", "Q2_K", "IQ3_M",
};

static void test_parity_bare_f16(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-bare");
    char in[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 1, -1);
    run_opts ro = { .pure = true };
    for (size_t i = 0; i < sizeof BARE_TYPES / sizeof BARE_TYPES[0]; i++)
        parity(dir, in, BARE_TYPES[i], &ro);
}

static void test_parity_recipes_f16(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-recipes");
    char in[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 2, -1);
    run_opts ro = { 0 };
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        parity(dir, in, RECIPES[i], &ro);
}

static void test_parity_f32_and_requantize(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-f32");
    char in[4200], q8[4200];
    snprintf(in, sizeof in, "%s/model-f32.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F32, 3, -1);
    run_opts pure = { .pure = true }, mix = { 0 };
    parity(dir, in, "q4_K", &pure);
    parity(dir, in, "Q4_K_M", &mix);
    parity(dir, in, "Q5_K_S", &mix);
    /* already quantized input: dequantize, then quantize (--allow-requantize) */
    snprintf(q8, sizeof q8, "%s/model-q8_0.gguf", dir);
    run_ours(in, "q8_0", q8, &pure);
    parity(dir, q8, "q4_K", &pure);
    parity(dir, q8, "Q3_K_M", &mix);
}

static void test_parity_fixture_fallbacks(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-fixture");
    const char *in = tu_path("data/llama-2-tiny-random.gguf");
    run_opts pure = { .pure = true };
    static const char *const types[] = { "q4_K", "q6_K", "q2_K", "iq4_xs", "q5_K", "q4_0", "q8_0" };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        parity(dir, in, types[i], &pure);
}

/*
 * Ours with `target`, llama.cpp with the params llama-quantize derives from it
 * (given here, not resolved by ggufq: ftype, only_copy, no --pure); the two
 * files must be identical byte for byte.
 */
static void parity_exact(const char *dir, const char *in, const char *target, int ftype, bool only_copy)
{
    char ours[4200], theirs[4200];
    snprintf(ours, sizeof ours, "%s/ours-%s.gguf", dir, target);
    snprintf(theirs, sizeof theirs, "%s/llama-%s.gguf", dir, target);
    run_opts ro = { 0 };
    run_ours(in, target, ours, &ro);
    peer_qparams p = peer.defaults();
    p.nthread = 2;
    p.ftype = ftype;
    p.allow_requantize = true;
    p.only_copy = only_copy;
    assert_int_equal(peer.quantize(in, theirs, &p), 0);
    char what[256];
    snprintf(what, sizeof what, "%s -> %s", in, target);
    assert_same_tensors(ours, theirs, what);
    if (!same_file_bytes(ours, theirs)) {
        fprintf(stderr, "%s: the files differ\n", what);
        fail();
    }
    printf("ok: %-8s whole file identical\n", target);
    remove(ours);
    remove(theirs);
}

/*
 * TYPE as llama-quantize reads it: its names in any case (aliases Q3_K/Q4_K/Q5_K
 * are the _M recipes, not bare types), integer ftype ids (0 is F32, listed
 * before COPY), and COPY (only_copy: every tensor kept, the input's file type,
 * or the loader's guess marked 1024 when the input has none).
 */
static void test_target_names_like_llama_quantize(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-names");
    static const struct { const char *name; int ftype; bool copy; } T[] = {
        { "Q4_K", 15, false }, { "q4_k_m", 15, false }, { "Q3_K", 12, false }, { "Q5_K", 17, false },
        { "q5_k", 17, false }, { "15", 15, false },     { "7", 7, false },      { "12", 12, false },
        { "0", 0, false },     { "COPY", 0, true },     { "copy", 0, true },
    };
    char in[4200], f32[4200], noft[4200], q8[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 21, -1);
    const char *fixture = tu_path("data/llama-2-tiny-random.gguf");
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        parity_exact(dir, in, T[i].name, T[i].ftype, T[i].copy);
        parity_exact(dir, fixture, T[i].name, T[i].ftype, T[i].copy);
    }
    /* Q4_K is the Q4_K_M recipe: the same file */
    char a[4200], b[4200];
    run_opts ro = { 0 };
    snprintf(a, sizeof a, "%s/alias.gguf", dir);
    snprintf(b, sizeof b, "%s/named.gguf", dir);
    run_ours(in, "Q4_K", a, &ro);
    run_ours(in, "Q4_K_M", b, &ro);
    assert_true(same_file_bytes(a, b));
    /* COPY without general.file_type: the loader's guess | 1024 */
    snprintf(noft, sizeof noft, "%s/model-noft.gguf", dir);
    make_model_ft(noft, &SMALL, GGUFQ_TYPE_F16, 22, -1, NO_FILE_TYPE);
    parity_exact(dir, noft, "COPY", 0, true);
    snprintf(f32, sizeof f32, "%s/model-f32-noft.gguf", dir);
    make_model_ft(f32, &SMALL, GGUFQ_TYPE_F32, 23, -1, NO_FILE_TYPE);
    parity_exact(dir, f32, "COPY", 0, true);
    /* an input already quantized: COPY keeps it as it is */
    snprintf(q8, sizeof q8, "%s/q8-noft.gguf", dir);
    make_model_ft(q8, &SMALL, GGUFQ_TYPE_Q8_0, 24, -1, NO_FILE_TYPE);
    parity_exact(dir, q8, "COPY", 0, true);
    ggufq_file *f = NULL;
    run_ours(q8, "COPY", a, &ro);
    assert_int_equal(ggufq_open(a, NULL, &f, NULL), GGUFQ_OK);
    ggufq_value v;
    uint64_t ft = 0;
    assert_int_equal(ggufq_get(f, "general.file_type", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &ft), GGUFQ_OK);
    assert_int_equal(ft, 1024 + 7);   /* LLAMA_FTYPE_GUESSED | MOSTLY_Q8_0 */
    ggufq_close(f);
}

/* Our run with allow_requantize as given; returns the status (message in err). */
static int run_ours_allow(const char *in, const char *target, const char *out, bool allow, ggufq_error *err)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = target;
    o.nthreads = 2;
    o.allow_requantize = allow;
    return ggufq_requant(in, out, &o, NULL, NULL, err);
}

/*
 * allow_requantize: llama.cpp refuses to convert a tensor that is already
 * quantized without it, and is happy when no quantized tensor changes type;
 * so are we, refusing before anything is written (a dry run too).
 */
static void test_allow_requantize(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-allow");
    char q8[4200], f16[4200], out[4200], theirs[4200];
    snprintf(q8, sizeof q8, "%s/model-q8_0.gguf", dir);
    snprintf(f16, sizeof f16, "%s/model-f16.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    snprintf(theirs, sizeof theirs, "%s/llama.gguf", dir);
    make_model(q8, &SMALL, GGUFQ_TYPE_Q8_0, 31, -1);
    make_model(f16, &SMALL, GGUFQ_TYPE_F16, 32, -1);
    {
        ggufq_requant_options d;
        ggufq_requant_options_init(&d);
        assert_true(d.allow_requantize);   /* the library's default: allowed */
    }
    peer_qparams p = peer.defaults();
    assert_false(p.allow_requantize);     /* llama.cpp's: refused */
    p.nthread = 2;
    /* a quantized input converted: llama.cpp fails; we fail first, writing nothing */
    p.ftype = 15;
    assert_int_not_equal(peer.quantize(q8, theirs, &p), 0);
    remove(theirs);
    ggufq_error err;
    assert_int_equal(run_ours_allow(q8, "Q4_K_M", out, false, &err), GGUFQ_E_INVALID_ARG);
    char want[4400];
    snprintf(want, sizeof want, "%s: requantizing from type q8_0 is disabled (tensor output.weight would become "
             "q6_K): quantizing already quantized weights again loses quality; --allow-requantize does it "
             "anyway", q8);
    assert_string_equal(err.message, want);
    assert_int_equal(count_files(dir), 2);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "Q4_K_M";
    o.allow_requantize = false;
    o.dry_run = true;
    ggufq_error derr;
    assert_int_equal(ggufq_requant(q8, out, &o, NULL, NULL, &derr), GGUFQ_E_INVALID_ARG);
    assert_string_equal(derr.message, want);
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(q8, &o, &plan, &derr), GGUFQ_E_INVALID_ARG);
    assert_null(plan);
    assert_int_equal(count_files(dir), 2);
    /* allowed: the same bytes as llama.cpp with allow_requantize */
    parity_exact(dir, q8, "Q4_K_M", 15, false);
    /* nothing quantized changes type (Q8_0 of a q8_0 model), or an f16 input: both run without it */
    const struct { const char *in, *target; int ftype; } ok[] = {
        { q8, "Q8_0", 7 }, { q8, "COPY", 0 }, { f16, "Q4_K_M", 15 }, { f16, "q4_k", 15 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        p.ftype = ok[i].ftype;
        p.only_copy = strcmp(ok[i].target, "COPY") == 0;
        assert_int_equal(peer.quantize(ok[i].in, theirs, &p), 0);
        assert_int_equal(run_ours_allow(ok[i].in, ok[i].target, out, false, &err), GGUFQ_OK);
        assert_true(same_file_bytes(out, theirs));
        remove(out);
        remove(theirs);
    }
}

/* Legacy .dat imatrix for the model's 2D weights: deterministic positive values. */
static void write_legacy_imatrix(const char *path, const model_shape *m, float ***vals, char names[][64], int *n_out)
{
    tensor_spec ts[128];
    int n = model_tensors(m, ts), k = 0;
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

/* The same data as a GGUF imatrix: in_sum2 = avg * count, counts = count. */
static void write_gguf_imatrix(const char *path, float **vals, char names[][64], int n, int64_t ne0_of(const char *))
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_string(w, "general.type", "imatrix", 7);
    const char *ds = "wiki.tx";
    size_t dl = 7;
    ggufq_writer_set_string_array(w, "imatrix.datasets", &ds, &dl, 1);
    ggufq_writer_set_uint(w, "imatrix.chunk_count", GGUFQ_VT_UINT32, 10);
    ggufq_writer_set_uint(w, "imatrix.chunk_size", GGUFQ_VT_UINT32, 512);
    for (int i = 0; i < n; i++) {
        char nm[96];
        int64_t d1[2] = { ne0_of(names[i]), 1 }, d2[2] = { 1, 1 };
        snprintf(nm, sizeof nm, "%.63s.in_sum2", names[i]);
        assert_int_equal(ggufq_writer_add_tensor(w, nm, GGUFQ_TYPE_F32, 2, d1), GGUFQ_OK);
        snprintf(nm, sizeof nm, "%.63s.counts", names[i]);
        assert_int_equal(ggufq_writer_add_tensor(w, nm, GGUFQ_TYPE_F32, 2, d2), GGUFQ_OK);
    }
    for (int i = 0; i < n; i++) {
        int64_t ne0 = ne0_of(names[i]);
        float *s = malloc((size_t)ne0 * sizeof *s), c = 4.0f;   /* powers of two: exact round trip */
        for (int64_t j = 0; j < ne0; j++)
            s[j] = vals[i][j] * c;
        assert_int_equal(ggufq_writer_write(w, s, (size_t)ne0 * 4), GGUFQ_OK);
        assert_int_equal(ggufq_writer_write(w, &c, 4), GGUFQ_OK);
        free(s);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

static int64_t small_ne0(const char *name)
{
    return strstr(name, "ffn_down") ? SMALL.n_ff : SMALL.n_embd;
}

static void test_parity_imatrix(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-imatrix");
    char in[4200], dat[4200], gim[4200], a[4200], b[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    snprintf(dat, sizeof dat, "%s/imatrix.dat", dir);
    snprintf(gim, sizeof gim, "%s/imatrix.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 4, -1);
    float **vals = NULL;
    char names[64][64];
    int n = 0;
    write_legacy_imatrix(dat, &SMALL, &vals, names, &n);
    write_gguf_imatrix(gim, vals, names, n, small_ne0);
    peer_imatrix pim[65];
    for (int i = 0; i < n; i++)
        pim[i] = (peer_imatrix){ names[i], vals[i], (size_t)small_ne0(names[i]) };
    pim[n] = (peer_imatrix){ NULL, NULL, 0 };
    /* llama-quantize records the imatrix in quantize.imatrix.* keys: give llama.cpp the same overrides */
    peer_kv_override kv[5];
    memset(kv, 0, sizeof kv);
    kv[0].tag = 3; snprintf(kv[0].key, 128, "quantize.imatrix.file"); snprintf(kv[0].v.val_str, 128, "%.127s", dat);
    kv[1].tag = 3; snprintf(kv[1].key, 128, "quantize.imatrix.dataset"); snprintf(kv[1].v.val_str, 128, "wiki.tx");
    kv[2].tag = 0; snprintf(kv[2].key, 128, "quantize.imatrix.entries_count"); kv[2].v.val_i64 = n;
    kv[3].tag = 0; snprintf(kv[3].key, 128, "quantize.imatrix.chunks_count"); kv[3].v.val_i64 = 10;
    run_opts ro = { .imatrix = dat, .peer_im = pim, .peer_kv = kv };
    static const char *const targets[] = { "Q4_K_M", "IQ4_XS", "Q2_K_S", "IQ2_XXS", "IQ3_XXS", "q4_0" };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        ro.pure = strcmp(targets[i], "q4_0") == 0;
        parity(dir, in, targets[i], &ro);
    }
    /* the GGUF imatrix holds the same values: the same tensors */
    ro.pure = false;
    run_opts rg = { .imatrix = gim };
    snprintf(a, sizeof a, "%s/a.gguf", dir);
    snprintf(b, sizeof b, "%s/b.gguf", dir);
    run_ours(in, "IQ4_XS", a, &ro);
    run_ours(in, "IQ4_XS", b, &rg);
    assert_same_tensors(a, b, "legacy vs GGUF imatrix");
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
}

static void test_parity_kv_overrides(void **state)
{
    (void)state;
    if (!peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-kv");
    char in[4200], ours[4200], theirs[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 5, -1);
    static const char *const kv[] = { "general.name=str:renamed", "llama.context_length=int:-512",
                                      "ggufq.test.f=float:0.1", "ggufq.test.b=bool:true" };
    peer_kv_override pkv[5];
    memset(pkv, 0, sizeof pkv);
    pkv[0].tag = 3; snprintf(pkv[0].key, 128, "general.name"); snprintf(pkv[0].v.val_str, 128, "renamed");
    pkv[1].tag = 0; snprintf(pkv[1].key, 128, "llama.context_length"); pkv[1].v.val_i64 = -512;
    pkv[2].tag = 1; snprintf(pkv[2].key, 128, "ggufq.test.f"); pkv[2].v.val_f64 = 0.1;
    pkv[3].tag = 2; snprintf(pkv[3].key, 128, "ggufq.test.b"); pkv[3].v.val_bool = true;
    run_opts ro = { .kv = kv, .n_kv = 4, .peer_kv = pkv, .pure = true };
    snprintf(ours, sizeof ours, "%s/ours.gguf", dir);
    snprintf(theirs, sizeof theirs, "%s/theirs.gguf", dir);
    run_ours(in, "q8_0", ours, &ro);
    run_peer(in, "q8_0", theirs, &ro);
    assert_same_tensors(ours, theirs, "kv overrides");
    ggufq_file *a = NULL, *b = NULL;
    assert_int_equal(ggufq_open(ours, NULL, &a, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(theirs, NULL, &b, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_kv_count(a), ggufq_kv_count(b));
    for (int64_t i = 0; i < ggufq_kv_count(a); i++) {
        ggufq_value va, vb;
        assert_string_equal(ggufq_kv_key(a, i), ggufq_kv_key(b, i));
        ggufq_kv_value(a, i, &va);
        ggufq_kv_value(b, i, &vb);
        assert_int_equal(va.type, vb.type);
        assert_int_equal(va.p_size, vb.p_size);
        assert_memory_equal(va.p_data, vb.p_data, (size_t)va.p_size);
    }
    ggufq_close(a);
    ggufq_close(b);
    printf("ok: overrides: keys, order and values as llama.cpp's; whole file %s\n",
           same_file_bytes(ours, theirs) ? "identical" : "differs");
}

/* ------------------------------------------------------------------------- */
/* Engine guarantees                                                          */
/* ------------------------------------------------------------------------- */

static void test_threads_do_not_change_bytes(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-threads");
    char in[4200], a[4200], b[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    snprintf(a, sizeof a, "%s/t1.gguf", dir);
    snprintf(b, sizeof b, "%s/t3.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 6, -1);
    run_opts r1 = { .nthreads = 1 }, r3 = { .nthreads = 3 };
    run_ours(in, "Q4_K_M", a, &r1);
    run_ours(in, "Q4_K_M", b, &r3);
    assert_true(same_file_bytes(a, b));
}

/* Write the model as two shards <dir>/split-0000i-of-00002.gguf. */
static void make_split(const char *dir, const char *whole)
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

static void test_split_input_and_keep_split(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-split");
    char in[4200], shard1[4200], a[4200], b[4200], ks[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 7, -1);
    make_split(dir, in);
    snprintf(shard1, sizeof shard1, "%s/split-00001-of-00002.gguf", dir);
    snprintf(a, sizeof a, "%s/whole-q4.gguf", dir);
    snprintf(b, sizeof b, "%s/fromsplit-q4.gguf", dir);
    run_opts ro = { 0 };
    run_ours(in, "Q4_K_M", a, &ro);
    run_ours(shard1, "Q4_K_M", b, &ro);
    assert_same_tensors(a, b, "split input");
    if (peer_ready()) {   /* llama.cpp reads the shards the same way */
        char c[4200];
        snprintf(c, sizeof c, "%s/llama-fromsplit.gguf", dir);
        run_peer(shard1, "Q4_K_M", c, &ro);
        assert_same_tensors(b, c, "split input vs llama.cpp");
    }
    /* --keep-split: the same two shards, each with its tensors */
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "Q4_K_M";
    o.keep_split = true;
    snprintf(ks, sizeof ks, "%s/kept.gguf", dir);
    assert_int_equal(ggufq_requant(shard1, ks, &o, NULL, NULL, NULL), GGUFQ_OK);
    char k1[4200];
    snprintf(k1, sizeof k1, "%s/kept-00001-of-00002.gguf", dir);
    snprintf(ks, sizeof ks, "%s/kept-00002-of-00002.gguf", dir);
    struct stat sb;
    assert_int_equal(stat(ks, &sb), 0);
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(k1, NULL, &f, NULL), GGUFQ_OK);
    ggufq_value v;
    uint64_t cnt = 0;
    assert_int_equal(ggufq_get(f, "split.count", &v), GGUFQ_OK);
    ggufq_value_uint(&v, &cnt);
    assert_int_equal(cnt, 2);
    ggufq_close(f);
    /* reading the kept shards back gives the same tensors (in input order) */
    snprintf(ks, sizeof ks, "%s/rejoined.gguf", dir);
    o.keep_split = false;
    o.target = "q4_K";   /* pure: a no-op on q4_K tensors: copies; others keep what they are */
    o.pure = true;
    assert_int_equal(ggufq_requant(k1, ks, &o, NULL, NULL, NULL), GGUFQ_OK);
}

static void test_failures_leave_nothing(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-fail");
    char in[4200], out_dir[4200], out[4200], trunc[4200], nan_in[4200];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    snprintf(out, sizeof out, "%s/out/q.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 8, -1);
    mkdir(out_dir, 0755);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "Q4_K_M";
    ggufq_error err;

    /* truncated input */
    size_t size = 0;
    uint8_t *bytes = tu_read_file(in, &size);
    assert_non_null(bytes);
    snprintf(trunc, sizeof trunc, "%s/trunc.gguf", dir);
    FILE *f = fopen(trunc, "wb");
    fwrite(bytes, 1, size - 1000, f);
    fclose(f);
    free(bytes);
    assert_int_equal(ggufq_requant(trunc, out, &o, NULL, NULL, &err), GGUFQ_E_TRUNCATED);
    assert_int_equal(count_files(out_dir), 0);

    /* missing output directory */
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/nope/q.gguf", dir);
    assert_int_equal(ggufq_requant(in, missing, &o, NULL, NULL, &err), GGUFQ_E_IO);

    /* output is the input */
    assert_int_equal(ggufq_requant(in, in, &o, NULL, NULL, &err), GGUFQ_E_SAME_FILE);

    /* the disk fills up half way */
    gq_writer_inject_failure(200000, ENOSPC);
    int rc = ggufq_requant(in, out, &o, NULL, NULL, &err);
    gq_writer_inject_failure(0, 0);
    assert_int_equal(rc, GGUFQ_E_NO_SPACE);
    assert_int_equal(count_files(out_dir), 0);

    /* a type that needs an importance matrix, without one: which tensor, and why */
    o.target = "IQ2_XXS";
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    assert_non_null(strstr(err.message, "blk.0."));
    assert_non_null(strstr(err.message, "importance matrix"));
    assert_int_equal(count_files(out_dir), 0);
    o.target = "Q4_K_M";

    /* after all that, a good run leaves exactly its output */
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_OK);
    assert_int_equal(count_files(out_dir), 1);
    remove(out);

    /* NaN in the input: reported with file, offset, tensor and row (exact messages: the test below) */
    snprintf(nan_in, sizeof nan_in, "%s/nan.gguf", dir);
    make_model(nan_in, &SMALL, GGUFQ_TYPE_F16, 9, 3 * 256 + 17);
    assert_int_equal(ggufq_requant(nan_in, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    assert_non_null(strstr(err.message, nan_in));
    assert_non_null(strstr(err.message, "blk.1.ffn_up.weight"));
    assert_non_null(strstr(err.message, "row 3"));
    assert_non_null(strstr(err.message, "offset "));
    assert_int_equal(count_files(out_dir), 0);
}

/* Where a tensor's bytes start in its file: data section + the tensor's offset. */
static uint64_t tensor_file_offset(const char *path, const char *name)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(path, NULL, &f, NULL), GGUFQ_OK);
    ggufq_tensor_info t;
    int64_t i = ggufq_find_tensor(f, name);
    assert_true(i >= 0);
    assert_int_equal(ggufq_tensor_at(f, i, &t), GGUFQ_OK);
    uint64_t at = ggufq_file_data_offset(f) + t.offset;
    ggufq_close(f);
    return at;
}

/* A model of one F32 tensor blk.0.ffn_up.weight [64, 4]: finite, but 3e38 at row 2, weight 40. */
static void make_huge_weight_model(const char *path)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    put_tensor(w, "blk.0.ffn_up.weight", GGUFQ_TYPE_F32, 64, 4);
    float x[256];
    for (int i = 0; i < 256; i++)
        x[i] = 0.01f * (float)(i % 7);
    x[2 * 64 + 40] = 3e38f;   /* q4_0's scale 3e38 / -8 does not fit an f16: -inf */
    assert_int_equal(ggufq_writer_write(w, x, sizeof x), GGUFQ_OK);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Failures name the file (the shard, the imatrix), the tensor, and the byte offset where there is one. */
static void test_error_messages_name_file_and_offset(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-messages");
    char in[4200], out_dir[4200], out[4200], path[4200], dat[4200], want[9000];
    snprintf(in, sizeof in, "%s/nan.gguf", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    snprintf(out, sizeof out, "%s/out/q.gguf", dir);
    mkdir(out_dir, 0755);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "Q4_K_M";
    ggufq_error err;

    /* NaN in the input at blk.1.ffn_up row 3, weight 17 (f16: 2 bytes a weight, 512 a row) */
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 9, 3 * 256 + 17);
    uint64_t at = tensor_file_offset(in, "blk.1.ffn_up.weight") + 3 * 512 + 17 * 2;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    snprintf(want, sizeof want, "%s: offset %llu: tensor 'blk.1.ffn_up.weight' row 3: NaN or Inf in the input "
             "(f16 weight 17)", in, (unsigned long long)at);
    assert_string_equal(err.message, want);
    assert_int_equal(err.offset, at);

    /* the same model split in two: the shard holding the tensor, and the offset in that shard */
    char split_dir[4200], shard1[4300], shard2[4300];
    snprintf(split_dir, sizeof split_dir, "%s/split", dir);
    mkdir(split_dir, 0755);
    make_split(split_dir, in);
    snprintf(shard1, sizeof shard1, "%s/split-00001-of-00002.gguf", split_dir);
    snprintf(shard2, sizeof shard2, "%s/split-00002-of-00002.gguf", split_dir);
    at = tensor_file_offset(shard2, "blk.1.ffn_up.weight") + 3 * 512 + 17 * 2;
    assert_int_equal(ggufq_requant(shard1, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    snprintf(want, sizeof want, "%s: offset %llu: tensor 'blk.1.ffn_up.weight' row 3: NaN or Inf in the input "
             "(f16 weight 17)", shard2, (unsigned long long)at);
    assert_string_equal(err.message, want);
    assert_int_equal(err.offset, at);

    /* a finite input whose quantized scale overflows: the input bytes of the faulty block */
    snprintf(path, sizeof path, "%s/huge.gguf", dir);
    make_huge_weight_model(path);
    o.target = "q4_0";
    at = tensor_file_offset(path, "blk.0.ffn_up.weight") + 2 * 64 * 4 + 32 * 4;
    assert_int_equal(ggufq_requant(path, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    snprintf(want, sizeof want, "%s: offset %llu: tensor 'blk.0.ffn_up.weight' row 2: quantized to q4_0, "
             "block 1 has a NaN or Inf scale", path, (unsigned long long)at);
    assert_string_equal(err.message, want);
    assert_int_equal(err.offset, at);

    /* a type that needs an imatrix, chosen by the recipe: the input named (no offset: the whole tensor) */
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 8, -1);
    o.target = "IQ2_XXS";
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    snprintf(want, sizeof want, "%s: this quantization needs an importance matrix (--imatrix): tensor "
             "blk.0.attn_k.weight would be ", in);
    assert_memory_equal(err.message, want, strlen(want));
    assert_int_equal(err.offset, GGUFQ_NO_OFFSET);

    /* ... or by --token-embedding-type, without an imatrix, then with one lacking that entry */
    o.target = "q4_K";
    o.token_embedding_type = GGUFQ_TYPE_IQ2_XXS;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    snprintf(want, sizeof want, "%s: tensor 'token_embd.weight': iq2_xxs can only be made with an importance "
             "matrix (--imatrix)", in);
    assert_string_equal(err.message, want);
    snprintf(dat, sizeof dat, "%s/imatrix.dat", dir);
    float **vals = NULL;
    char names[64][64];
    int n = 0;
    write_legacy_imatrix(dat, &SMALL, &vals, names, &n);
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
    o.imatrix_path = dat;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    snprintf(want, sizeof want, "%s: tensor 'token_embd.weight': iq2_xxs can only be made with an importance "
             "matrix that has an entry for this tensor, and %s has none", in, dat);
    assert_string_equal(err.message, want);
    o.token_embedding_type = -1;

    /* an imatrix without an entry a very low-bit type requires: the imatrix named */
    static const char *const excl[] = { "blk.0.attn_k" };   /* the first tensor needing one */
    o.target = "IQ2_XXS";
    o.exclude_weights = excl;
    o.n_exclude_weights = 1;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    snprintf(want, sizeof want, "%s: missing importance matrix for tensor blk.0.attn_k.weight in a very low-bit "
             "quantization (iq2_xxs)", dat);
    assert_string_equal(err.message, want);
    o.exclude_weights = NULL;
    o.n_exclude_weights = 0;

    /* an imatrix entry of the wrong size: the imatrix named */
    uint8_t bad[4 + 4 + 19 + 8 + 100 * 4];
    int32_t hdr[2] = { 1, 19 }, call_val[2] = { 1, 100 };
    float ones[100];
    for (int i = 0; i < 100; i++)
        ones[i] = 1.0f;
    memcpy(bad, hdr, 8);
    memcpy(bad + 8, "blk.0.attn_q.weight", 19);
    memcpy(bad + 27, call_val, 8);
    memcpy(bad + 35, ones, sizeof ones);
    write_bytes(dat, bad, sizeof bad);
    o.target = "Q4_K_M";
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_FORMAT);
    snprintf(want, sizeof want, "%s: imatrix size 100 is different from tensor size 256 for blk.0.attn_q.weight",
             dat);
    assert_string_equal(err.message, want);

    /* a damaged legacy imatrix: the entry and the offset of the bad field (after count, length, name) */
    write_bytes(dat, bad, 40);
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_FORMAT);
    snprintf(want, sizeof want, "%s: offset 27: entry 0 (blk.0.attn_q.weight): bad value count", dat);
    assert_string_equal(err.message, want);
    assert_int_equal(err.offset, 27);
    assert_int_equal(count_files(out_dir), 0);
}

static int stop_after(const ggufq_progress *p, void *user)
{
    int *n = user;
    (void)p;
    return ++*n >= 3;
}

static void test_interrupt_leaves_nothing(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-interrupt");
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 10, -1);
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    int n = 0;
    assert_int_equal(ggufq_requant(in, out, &o, stop_after, &n, NULL), GGUFQ_E_INTERRUPTED);
    assert_int_equal(n, 3);
    assert_int_equal(count_files(dir), 1);   /* only the input */
}

static void test_plan_and_dry_run(void **state)
{
    (void)state;
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    o.pure = true;
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(tu_path("data/llama-2-tiny-random.gguf"), &o, &plan, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_plan_count(plan), 12);
    assert_int_equal(ggufq_plan_file_type(plan), 15);
    assert_true(ggufq_plan_pure(plan));
    assert_false(ggufq_plan_pure(NULL));
    /* llama-quantize's names (any case, aliases and ftype ids too) are not pure unless asked;
     * a ggml type name outside its list (mxfp4) is a bare type: pure */
    static const char *const recipes[] = { "Q4_K_M", "IQ4_XS", "iq4_xs", "Q8_0", "q4_K", "Q3_K", "q5_k", "15" };
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) {
        ggufq_plan *r = NULL;
        o.target = recipes[i];
        o.pure = false;
        assert_int_equal(ggufq_requant_plan(tu_path("data/llama-2-tiny-random.gguf"), &o, &r, NULL), GGUFQ_OK);
        assert_false(ggufq_plan_pure(r));
        ggufq_plan_free(r);
        o.pure = true;
        assert_int_equal(ggufq_requant_plan(tu_path("data/llama-2-tiny-random.gguf"), &o, &r, NULL), GGUFQ_OK);
        assert_true(ggufq_plan_pure(r));
        ggufq_plan_free(r);
    }
    ggufq_plan *bare = NULL;
    o.target = "mxfp4";
    o.pure = false;
    assert_int_equal(ggufq_requant_plan(tu_path("data/llama-2-tiny-random.gguf"), &o, &bare, NULL), GGUFQ_OK);
    assert_true(ggufq_plan_pure(bare));
    ggufq_plan_free(bare);
    o.target = "q4_K";
    o.pure = true;
    /* llama.cpp's order: tensors without a layer first (by name), then blk.0.* by name */
    assert_string_equal(ggufq_plan_at(plan, 0)->name, "output.weight");
    assert_string_equal(ggufq_plan_at(plan, 3)->name, "blk.0.attn_k.weight");
    const ggufq_plan_entry *down = NULL;
    for (int64_t i = 0; i < ggufq_plan_count(plan); i++)
        if (strcmp(ggufq_plan_at(plan, i)->name, "blk.0.ffn_down.weight") == 0)
            down = ggufq_plan_at(plan, i);
    assert_non_null(down);
    assert_int_equal(down->out_type, GGUFQ_TYPE_Q5_0);   /* rows of 32: q4_K falls back to q5_0 */
    assert_int_equal(down->out_bytes, 8 * 22);
    ggufq_plan_free(plan);
    /* dry run writes nothing */
    const char *dir = tu_tmpdir("requant-dry");
    char out[4200];
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    o.dry_run = true;
    assert_int_equal(ggufq_requant(tu_path("data/llama-2-tiny-random.gguf"), out, &o, NULL, NULL, NULL), GGUFQ_OK);
    assert_int_equal(count_files(dir), 0);
    /* unknown target, bad override */
    o.dry_run = false;
    o.target = "q9_K";
    assert_int_equal(ggufq_requant_plan(tu_path("data/llama-2-tiny-random.gguf"), &o, &plan, NULL), GGUFQ_E_UNKNOWN_TYPE);
    o.target = "q4_K";
    const char *bad[] = { "general.name=text:x" };
    o.kv_overrides = bad;
    o.n_kv_overrides = 1;
    ggufq_error err;
    assert_int_equal(ggufq_requant(tu_path("data/llama-2-tiny-random.gguf"), out, &o, NULL, NULL, &err),
                     GGUFQ_E_INVALID_ARG);
}

/* Our outputs load in ggml's own GGUF reader. */
static void test_output_loads_in_ggml(void **state)
{
    (void)state;
    void *ggml = tu_peer_open("libggml-base.so");
    if (!ggml)
        skip();
    typedef struct { bool no_alloc; void **ctx; } init_params;
    void *(*init)(const char *, init_params) = (void *(*)(const char *, init_params))dlsym(ggml, "gguf_init_from_file");
    int64_t (*n_tensors)(const void *) = (int64_t (*)(const void *))dlsym(ggml, "gguf_get_n_tensors");
    void (*gfree)(void *) = (void (*)(void *))dlsym(ggml, "gguf_free");
    assert_non_null(init);
    const char *dir = tu_tmpdir("requant-ggml");
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    make_model(in, &SMALL, GGUFQ_TYPE_F16, 11, -1);
    run_opts ro = { 0 };
    run_ours(in, "Q3_K_M", out, &ro);
    init_params ip = { true, NULL };
    void *ctx = init(out, ip);
    assert_non_null(ctx);
    assert_int_equal(n_tensors(ctx), 2 + 9 * SMALL.n_layer + 1);
    gfree(ctx);
}

int main(void)
{
    _Static_assert(sizeof(peer_qparams) == 64, "llama_model_quantize_params of the peer is 64 bytes");
    _Static_assert(sizeof(peer_kv_override) == 264, "llama_model_kv_override is 264 bytes");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_and_dry_run),
        cmocka_unit_test(test_parity_bare_f16),
        cmocka_unit_test(test_parity_recipes_f16),
        cmocka_unit_test(test_parity_f32_and_requantize),
        cmocka_unit_test(test_parity_fixture_fallbacks),
        cmocka_unit_test(test_target_names_like_llama_quantize),
        cmocka_unit_test(test_allow_requantize),
        cmocka_unit_test(test_parity_imatrix),
        cmocka_unit_test(test_parity_kv_overrides),
        cmocka_unit_test(test_threads_do_not_change_bytes),
        cmocka_unit_test(test_split_input_and_keep_split),
        cmocka_unit_test(test_failures_leave_nothing),
        cmocka_unit_test(test_error_messages_name_file_and_offset),
        cmocka_unit_test(test_interrupt_leaves_nothing),
        cmocka_unit_test(test_output_loads_in_ggml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
