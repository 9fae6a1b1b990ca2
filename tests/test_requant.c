/*
 * test_requant.c — ggufq_requant against llama.cpp's llama_model_quantize
 * (the peer's libllama): small llama models of random weights (F16 and F32)
 * are quantized by both, and every tensor must come out with the same name,
 * type and bytes, in the same order; for bare types (llama-quantize --pure),
 * for recipes, for the fixture's fallbacks, with an importance matrix and
 * metadata overrides. Then: any thread count gives the same file, and split
 * inputs. Failures, messages and plans: test_requant_failures.c; the shared
 * peer and models: requant_util.c.
 */
#include "requant_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "requant/plan.h"

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
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-bare");
    char in[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 1, -1);
    run_opts ro = { .pure = true };
    for (size_t i = 0; i < sizeof BARE_TYPES / sizeof BARE_TYPES[0]; i++)
        rq_parity(dir, in, BARE_TYPES[i], &ro);
}

static void test_parity_recipes_f16(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-recipes");
    char in[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 2, -1);
    run_opts ro = { 0 };
    for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
        rq_parity(dir, in, RECIPES[i], &ro);
}

static void test_parity_f32_and_requantize(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-f32");
    char in[4200], q8[4200];
    snprintf(in, sizeof in, "%s/model-f32.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F32, 3, -1);
    run_opts pure = { .pure = true }, mix = { 0 };
    rq_parity(dir, in, "q4_K", &pure);
    rq_parity(dir, in, "Q4_K_M", &mix);
    rq_parity(dir, in, "Q5_K_S", &mix);
    /* already quantized input: dequantize, then quantize (--allow-requantize) */
    snprintf(q8, sizeof q8, "%s/model-q8_0.gguf", dir);
    rq_run_ours(in, "q8_0", q8, &pure);
    rq_parity(dir, q8, "q4_K", &pure);
    rq_parity(dir, q8, "Q3_K_M", &mix);
}

static void test_parity_fixture_fallbacks(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-fixture");
    const char *in = tu_path("data/llama-2-tiny-random.gguf");
    run_opts pure = { .pure = true };
    static const char *const types[] = { "q4_K", "q6_K", "q2_K", "iq4_xs", "q5_K", "q4_0", "q8_0" };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        rq_parity(dir, in, types[i], &pure);
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
    rq_run_ours(in, target, ours, &ro);
    peer_qparams p = rq_peer.defaults();
    p.nthread = 2;
    p.ftype = ftype;
    p.allow_requantize = true;
    p.only_copy = only_copy;
    assert_int_equal(rq_peer.quantize(in, theirs, &p), 0);
    char what[256];
    snprintf(what, sizeof what, "%s -> %s", in, target);
    rq_assert_same_tensors(ours, theirs, what);
    if (!rq_same_file_bytes(ours, theirs)) {
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
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-names");
    static const struct { const char *name; int ftype; bool copy; } T[] = {
        { "Q4_K", 15, false }, { "q4_k_m", 15, false }, { "Q3_K", 12, false }, { "Q5_K", 17, false },
        { "q5_k", 17, false }, { "15", 15, false },     { "7", 7, false },      { "12", 12, false },
        { "0", 0, false },     { "COPY", 0, true },     { "copy", 0, true },
    };
    char in[4200], f32[4200], noft[4200], q8[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 21, -1);
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
    rq_run_ours(in, "Q4_K", a, &ro);
    rq_run_ours(in, "Q4_K_M", b, &ro);
    assert_true(rq_same_file_bytes(a, b));
    /* COPY without general.file_type: the loader's guess | 1024 */
    snprintf(noft, sizeof noft, "%s/model-noft.gguf", dir);
    rq_make_model_ft(noft, &RQ_SMALL, GGUFQ_TYPE_F16, 22, -1, RQ_NO_FILE_TYPE);
    parity_exact(dir, noft, "COPY", 0, true);
    snprintf(f32, sizeof f32, "%s/model-f32-noft.gguf", dir);
    rq_make_model_ft(f32, &RQ_SMALL, GGUFQ_TYPE_F32, 23, -1, RQ_NO_FILE_TYPE);
    parity_exact(dir, f32, "COPY", 0, true);
    /* an input already quantized: COPY keeps it as it is */
    snprintf(q8, sizeof q8, "%s/q8-noft.gguf", dir);
    rq_make_model_ft(q8, &RQ_SMALL, GGUFQ_TYPE_Q8_0, 24, -1, RQ_NO_FILE_TYPE);
    parity_exact(dir, q8, "COPY", 0, true);
    ggufq_file *f = NULL;
    rq_run_ours(q8, "COPY", a, &ro);
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
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-allow");
    char q8[4200], f16[4200], out[4200], theirs[4200];
    snprintf(q8, sizeof q8, "%s/model-q8_0.gguf", dir);
    snprintf(f16, sizeof f16, "%s/model-f16.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    snprintf(theirs, sizeof theirs, "%s/llama.gguf", dir);
    rq_make_model(q8, &RQ_SMALL, GGUFQ_TYPE_Q8_0, 31, -1);
    rq_make_model(f16, &RQ_SMALL, GGUFQ_TYPE_F16, 32, -1);
    {
        ggufq_requant_options d;
        ggufq_requant_options_init(&d);
        assert_true(d.allow_requantize);   /* the library's default: allowed */
    }
    peer_qparams p = rq_peer.defaults();
    assert_false(p.allow_requantize);     /* llama.cpp's: refused */
    p.nthread = 2;
    /* a quantized input converted: llama.cpp fails; we fail first, writing nothing */
    p.ftype = 15;
    assert_int_not_equal(rq_peer.quantize(q8, theirs, &p), 0);
    remove(theirs);
    ggufq_error err;
    assert_int_equal(run_ours_allow(q8, "Q4_K_M", out, false, &err), GGUFQ_E_INVALID_ARG);
    char want[4400];
    snprintf(want, sizeof want, "%s: requantizing from type q8_0 is disabled (tensor output.weight would become "
             "q6_K): quantizing already quantized weights again loses quality; --allow-requantize does it "
             "anyway", q8);
    assert_string_equal(err.message, want);
    assert_int_equal(tu_count_files(dir), 2);
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
    assert_int_equal(tu_count_files(dir), 2);
    /* allowed: the same bytes as llama.cpp with allow_requantize */
    parity_exact(dir, q8, "Q4_K_M", 15, false);
    /* nothing quantized changes type (Q8_0 of a q8_0 model), or an f16 input: both run without it */
    const struct { const char *in, *target; int ftype; } ok[] = {
        { q8, "Q8_0", 7 }, { q8, "COPY", 0 }, { f16, "Q4_K_M", 15 }, { f16, "q4_k", 15 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        p.ftype = ok[i].ftype;
        p.only_copy = strcmp(ok[i].target, "COPY") == 0;
        assert_int_equal(rq_peer.quantize(ok[i].in, theirs, &p), 0);
        assert_int_equal(run_ours_allow(ok[i].in, ok[i].target, out, false, &err), GGUFQ_OK);
        assert_true(rq_same_file_bytes(out, theirs));
        remove(out);
        remove(theirs);
    }
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
    return strstr(name, "ffn_down") ? RQ_SMALL.n_ff : RQ_SMALL.n_embd;
}

static void test_parity_imatrix(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-imatrix");
    char in[4200], dat[4200], gim[4200], a[4200], b[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    snprintf(dat, sizeof dat, "%s/imatrix.dat", dir);
    snprintf(gim, sizeof gim, "%s/imatrix.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 4, -1);
    float **vals = NULL;
    char names[64][64];
    int n = 0;
    rq_write_legacy_imatrix(dat, &RQ_SMALL, &vals, names, &n);
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
        rq_parity(dir, in, targets[i], &ro);
    }
    /* the GGUF imatrix holds the same values: the same tensors */
    ro.pure = false;
    run_opts rg = { .imatrix = gim };
    snprintf(a, sizeof a, "%s/a.gguf", dir);
    snprintf(b, sizeof b, "%s/b.gguf", dir);
    rq_run_ours(in, "IQ4_XS", a, &ro);
    rq_run_ours(in, "IQ4_XS", b, &rg);
    rq_assert_same_tensors(a, b, "legacy vs GGUF imatrix");
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
}

static void test_parity_kv_overrides(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    const char *dir = tu_tmpdir("requant-kv");
    char in[4200], ours[4200], theirs[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 5, -1);
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
    rq_run_ours(in, "q8_0", ours, &ro);
    rq_run_peer(in, "q8_0", theirs, &ro);
    rq_assert_same_tensors(ours, theirs, "kv overrides");
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
           rq_same_file_bytes(ours, theirs) ? "identical" : "differs");
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
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 6, -1);
    run_opts r1 = { .nthreads = 1 }, r3 = { .nthreads = 3 };
    rq_run_ours(in, "Q4_K_M", a, &r1);
    rq_run_ours(in, "Q4_K_M", b, &r3);
    assert_true(rq_same_file_bytes(a, b));
}

static void test_split_input_and_keep_split(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-split");
    char in[4200], shard1[4200], a[4200], b[4200], ks[4200];
    snprintf(in, sizeof in, "%s/model-f16.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 7, -1);
    rq_make_split(dir, in);
    snprintf(shard1, sizeof shard1, "%s/split-00001-of-00002.gguf", dir);
    snprintf(a, sizeof a, "%s/whole-q4.gguf", dir);
    snprintf(b, sizeof b, "%s/fromsplit-q4.gguf", dir);
    run_opts ro = { 0 };
    rq_run_ours(in, "Q4_K_M", a, &ro);
    rq_run_ours(shard1, "Q4_K_M", b, &ro);
    rq_assert_same_tensors(a, b, "split input");
    if (rq_peer_ready()) {   /* llama.cpp reads the shards the same way */
        char c[4200];
        snprintf(c, sizeof c, "%s/llama-fromsplit.gguf", dir);
        rq_run_peer(shard1, "Q4_K_M", c, &ro);
        rq_assert_same_tensors(b, c, "split input vs llama.cpp");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
