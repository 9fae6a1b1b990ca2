/*
 * test_requant_inputs.c — requant on unusual and hostile inputs:
 *  - the dimension count of every written tensor is llama.cpp's (trailing 1s
 *    dropped, copied tensors too), checked exactly and, with the peer, as
 *    whole files byte-identical to llama_model_quantize's;
 *  - nested-array metadata (ggml refuses it) is refused, on every shard;
 *  - empty tensors of huge dimensions: no overflow, exact messages;
 *  - imatrix files: only regular files, de-duplicated in linear time;
 *  - messages escape control bytes and invalid UTF-8 (gq_fail), wherever the
 *    text comes from.
 */
#include "requant_util.h"   /* the peer quantizer (peer_quantize.h) */
#include "testutil.h"
#include "gguf_build.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/errors.h"
#include "requant/requant_internal.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

/* A private copy of tu_tmpdir's (static) answer. */
static void tmpdir(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "%s", tu_tmpdir(tag));
}

static void opts_init(ggufq_requant_options *o, const char *target)
{
    ggufq_requant_options_init(o);
    o->target = target;
    o->nthreads = 2;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

typedef struct tspec {
    const char *name;
    ggufq_type  type;
    uint32_t    n_dims;
    int64_t     dims[4];
    uint32_t    want_dims;   /* in the output */
} tspec;

static int64_t elements(const tspec *t)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->dims[d];
    return n;
}

/* The keys llama.cpp's loader needs to accept a file as "llama". */
static void put_llama_keys(ggufq_writer *w)
{
    assert_int_equal(ggufq_writer_set_string(w, "general.architecture", "llama", 5), GGUFQ_OK);
    ggufq_writer_set_uint(w, "llama.context_length", GGUFQ_VT_UINT32, 64);
    ggufq_writer_set_uint(w, "llama.embedding_length", GGUFQ_VT_UINT32, 256);
    ggufq_writer_set_uint(w, "llama.block_count", GGUFQ_VT_UINT32, 1);
    ggufq_writer_set_uint(w, "llama.feed_forward_length", GGUFQ_VT_UINT32, 256);
    ggufq_writer_set_uint(w, "llama.attention.head_count", GGUFQ_VT_UINT32, 1);
    ggufq_writer_set_float(w, "llama.attention.layer_norm_rms_epsilon", GGUFQ_VT_FLOAT32, 1e-5);
}

/* A llama-labelled model of the given tensors, random weights; split keys when n_split > 0. */
static void write_model(const char *path, const tspec *t, int n, uint64_t seed, int split_no, int n_split,
                        int total_tensors)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    if (split_no == 0)
        put_llama_keys(w);
    if (n_split > 0) {
        ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, (uint64_t)split_no);
        ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, (uint64_t)n_split);
        ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, total_tensors);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(ggufq_writer_add_tensor(w, t[i].name, t[i].type, t[i].n_dims, t[i].dims), GGUFQ_OK);
    tu_rng rng = { seed };
    for (int i = 0; i < n; i++) {
        int64_t cnt = elements(&t[i]);
        if (cnt == 0)
            continue;
        float *x = malloc((size_t)cnt * sizeof *x);
        size_t bytes = ggufq_row_size(t[i].type, cnt);
        void *enc = malloc(bytes);
        assert_non_null(x);
        assert_non_null(enc);
        for (int64_t k = 0; k < cnt; k++)
            x[k] = 0.05f * tu_rand_gauss(&rng);
        assert_int_equal(ggufq_quantize(t[i].type, x, enc, 1, cnt, NULL), GGUFQ_OK);
        assert_int_equal(ggufq_writer_write(w, enc, bytes), GGUFQ_OK);
        free(x);
        free(enc);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

/* Every tensor of `path` named in t has t's want_dims dimensions, and t's dims. */
static void expect_dims(const char *path, const tspec *t, int n)
{
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(path, NULL, &f, NULL), GGUFQ_OK);
    for (int i = 0; i < n; i++) {
        int64_t k = ggufq_find_tensor(f, t[i].name);
        if (k < 0)
            continue;   /* in another shard */
        ggufq_tensor_info ti;
        assert_int_equal(ggufq_tensor_at(f, k, &ti), GGUFQ_OK);
        if (ti.n_dims != t[i].want_dims)
            fprintf(stderr, "%s: %s has %u dims, llama.cpp writes %u\n", path, t[i].name, ti.n_dims,
                    t[i].want_dims);
        assert_int_equal(ti.n_dims, t[i].want_dims);
        for (int d = 0; d < 4; d++)
            assert_int_equal(ti.dims[d], (uint32_t)d < t[i].n_dims ? t[i].dims[d] : 1);
    }
    ggufq_close(f);
}

/* Shapes with trailing 1s, quantized and copied (superpoint's biases are [1,1,64,1]). */
static const tspec TRAILING[] = {
    { "blk.0.attn_q.weight",   GGUFQ_TYPE_F16, 3, { 256, 8, 1, 1 },  2 },   /* quantized */
    { "blk.0.attn_k.weight",   GGUFQ_TYPE_F16, 4, { 256, 4, 1, 1 },  2 },   /* quantized */
    { "blk.0.ffn_up.weight",   GGUFQ_TYPE_F32, 4, { 256, 2, 2, 1 },  3 },   /* quantized, 3D */
    { "blk.0.conv.bias",       GGUFQ_TYPE_F32, 4, { 1, 1, 64, 1 },   3 },   /* copied */
    { "blk.0.conv.weight",     GGUFQ_TYPE_F16, 4, { 3, 3, 8, 16 },   4 },   /* rows of 3: kept f16 */
    { "blk.0.ffn_norm.weight", GGUFQ_TYPE_F32, 2, { 256, 1, 1, 1 },  1 },
    { "blk.0.ones.weight",     GGUFQ_TYPE_F32, 4, { 1, 1, 1, 1 },    1 },
    { "blk.0.vec.bias",        GGUFQ_TYPE_F32, 2, { 5, 1, 1, 1 },    1 },
    { "token_embd.weight",     GGUFQ_TYPE_F16, 2, { 256, 16, 1, 1 }, 2 },
};
#define N_TRAILING ((int)(sizeof TRAILING / sizeof TRAILING[0]))

static bool same_bytes(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    uint8_t *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    if (!same && x && y)
        for (size_t i = 0; i < na && i < nb; i++)
            if (x[i] != y[i]) {
                fprintf(stderr, "%s and %s (%zu and %zu bytes) differ first at byte %zu\n", a, b, na, nb, i);
                break;
            }
    free(x);
    free(y);
    return same;
}

/* ------------------------------------------------------------------------- */
/* 1. Dimension counts                                                       */
/* ------------------------------------------------------------------------- */

static void test_output_dims_drop_trailing_ones(void **state)
{
    (void)state;
    char dir[4096], in[4200], out[4200];
    tmpdir(dir, sizeof dir, "rq-inputs-dims");
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_model(in, TRAILING, N_TRAILING, 1, 0, 0, 0);
    static const char *const targets[] = { "q8_0", "Q4_K_M" };
    for (size_t k = 0; k < 2; k++) {
        ggufq_requant_options o;
        opts_init(&o, targets[k]);
        ggufq_error err;
        assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_OK);
        expect_dims(out, TRAILING, N_TRAILING);
        /* the plan says what the file will */
        ggufq_plan *plan = NULL;
        assert_int_equal(ggufq_requant_plan(in, &o, &plan, &err), GGUFQ_OK);
        for (int64_t i = 0; i < ggufq_plan_count(plan); i++) {
            const ggufq_plan_entry *e = ggufq_plan_at(plan, i);
            for (int j = 0; j < N_TRAILING; j++)
                if (strcmp(e->name, TRAILING[j].name) == 0)
                    assert_int_equal(e->n_dims, TRAILING[j].want_dims);
        }
        ggufq_plan_free(plan);
    }
    /* a zero dimension is kept (ggml_n_dims would drop it and claim bytes the file lacks) */
    static const tspec empty[] = { { "blk.0.attn_v.weight", GGUFQ_TYPE_F16, 2, { 64, 0 }, 2 },
                                   { "blk.0.attn_q.weight", GGUFQ_TYPE_F16, 2, { 64, 2 }, 2 } };
    write_model(in, empty, 2, 2, 0, 0, 0);
    ggufq_requant_options o;
    opts_init(&o, "q8_0");
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, NULL), GGUFQ_OK);
    expect_dims(out, empty, 2);
}

/* keep_split: every output shard declares its tensors the same way. */
static void test_output_dims_keep_split(void **state)
{
    (void)state;
    char dir[4096], s1[4200], s2[4200], out[4200], o1[4300], o2[4300];
    tmpdir(dir, sizeof dir, "rq-inputs-split");
    snprintf(s1, sizeof s1, "%s/m-00001-of-00002.gguf", dir);
    snprintf(s2, sizeof s2, "%s/m-00002-of-00002.gguf", dir);
    write_model(s1, TRAILING, 4, 3, 0, 2, N_TRAILING);
    write_model(s2, TRAILING + 4, N_TRAILING - 4, 4, 1, 2, N_TRAILING);
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    ggufq_requant_options o;
    opts_init(&o, "q8_0");
    o.keep_split = true;
    ggufq_error err;
    assert_int_equal(ggufq_requant(s1, out, &o, NULL, NULL, &err), GGUFQ_OK);
    snprintf(o1, sizeof o1, "%s/q-00001-of-00002.gguf", dir);
    snprintf(o2, sizeof o2, "%s/q-00002-of-00002.gguf", dir);
    expect_dims(o1, TRAILING, N_TRAILING);
    expect_dims(o2, TRAILING, N_TRAILING);
}

/* With the peer: the whole file is llama.cpp's, byte for byte. */
static void test_output_dims_match_llama(void **state)
{
    (void)state;
    if (!rq_peer_ready())
        skip();
    char dir[4096], in[4200], ours[4200], theirs[4200];
    tmpdir(dir, sizeof dir, "rq-inputs-peer");
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    write_model(in, TRAILING, N_TRAILING, 5, 0, 0, 0);
    static const struct { const char *target; int ftype; bool pure; } runs[] = {
        { "q8_0", 7, true }, { "Q4_K_M", 15, false }, { "Q6_K", 18, false },
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        snprintf(ours, sizeof ours, "%s/ours-%s.gguf", dir, runs[k].target);
        snprintf(theirs, sizeof theirs, "%s/llama-%s.gguf", dir, runs[k].target);
        ggufq_requant_options o;
        opts_init(&o, runs[k].target);
        assert_int_equal(ggufq_requant(in, ours, &o, NULL, NULL, NULL), GGUFQ_OK);
        peer_qparams p = rq_peer.defaults();
        p.nthread = 2;
        p.ftype = runs[k].ftype;
        p.allow_requantize = true;
        p.pure = runs[k].pure;
        assert_int_equal(rq_peer.quantize(in, theirs, &p), 0);
        expect_dims(theirs, TRAILING, N_TRAILING);   /* the rule, as llama.cpp applies it */
        assert_true(same_bytes(ours, theirs));
        printf("ok: %s: whole file identical to llama.cpp's\n", runs[k].target);
    }
}

/* ------------------------------------------------------------------------- */
/* 2. Nested arrays                                                          */
/* ------------------------------------------------------------------------- */

static void test_nested_arrays_refused(void **state)
{
    (void)state;
    char dir[4096], out[4200], want[9000];
    tmpdir(dir, sizeof dir, "rq-inputs-nested");
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    const char *in = tu_path("data/nested_array_15.gguf");
    snprintf(want, sizeof want, "%s: key 'deep' is an array of arrays: valid GGUF, but ggml's GGUF reader refuses "
             "nested arrays (llama.cpp cannot quantize this file, nor load an output with this key)", in);
    ggufq_requant_options o;
    opts_init(&o, "q8_0");
    ggufq_error err;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NESTING);
    assert_string_equal(err.message, want);
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(in, &o, &plan, &err), GGUFQ_E_NESTING);
    assert_string_equal(err.message, want);
    o.dry_run = true;
    assert_int_equal(ggufq_requant(in, NULL, &o, NULL, NULL, &err), GGUFQ_E_NESTING);
    assert_int_equal(tu_count_files(dir), 0);

    /* the writer itself still writes them (valid GGUF; documented as not loadable by ggml) */
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(in, NULL, &f, NULL), GGUFQ_OK);
    ggufq_value v;
    assert_int_equal(ggufq_get(f, "deep", &v), GGUFQ_OK);
    char s1[4200], s2[4200];
    snprintf(s1, sizeof s1, "%s/m-00001-of-00002.gguf", dir);
    snprintf(s2, sizeof s2, "%s/m-00002-of-00002.gguf", dir);
    write_model(s1, TRAILING, 2, 6, 0, 2, 3);
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(s2, NULL, &w, NULL), GGUFQ_OK);
    ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, 1);
    ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, 2);
    ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, 3);
    assert_int_equal(ggufq_writer_set_value(w, "deep", &v), GGUFQ_OK);
    const tspec *t = &TRAILING[2];
    assert_int_equal(ggufq_writer_add_tensor(w, t->name, t->type, t->n_dims, t->dims), GGUFQ_OK);
    float zeros[1024] = { 0 };
    assert_int_equal(ggufq_writer_write(w, zeros, (size_t)elements(t) * 4), GGUFQ_OK);
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
    ggufq_close(f);

    /* ... and requant refuses it in any shard */
    o.dry_run = false;
    assert_int_equal(ggufq_requant(s1, out, &o, NULL, NULL, &err), GGUFQ_E_NESTING);
    snprintf(want, sizeof want, "%s: key 'deep' is an array of arrays", s2);
    assert_memory_equal(err.message, want, strlen(want));
    assert_false(exists(out));
}

/* ------------------------------------------------------------------------- */
/* 3. Empty tensors of huge dimensions                                       */
/* ------------------------------------------------------------------------- */

static void test_empty_tensor_huge_dims(void **state)
{
    (void)state;
    char dir[4096], out[4200], want[9000];
    tmpdir(dir, sizeof dir, "rq-inputs-zdims");
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    char za[4200], z3[4200], im[4200];
    snprintf(za, sizeof za, "%s", tu_path("data/zdims_a.gguf"));   /* [2^62, 0, 2^62, 2^62] f16 */
    snprintf(z3, sizeof z3, "%s", tu_path("data/z3a.gguf"));       /* [2^40, 0, 2] f16 */
    snprintf(im, sizeof im, "%s", tu_path("data/one_entry.dat"));  /* blk.0.attn_q.weight: 256 values */
    static const char *const targets[] = { "q8_0", "Q4_K_M", "iq4_nl", "f32" };
    const char *models[] = { za, z3 };
    for (size_t m = 0; m < 2; m++)
        for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
            ggufq_requant_options o;
            opts_init(&o, targets[k]);
            ggufq_error err;
            int rc = ggufq_requant(models[m], out, &o, NULL, NULL, &err);
            if (rc != GGUFQ_OK)
                fprintf(stderr, "%s -> %s: %s\n", models[m], targets[k], err.message);
            assert_int_equal(rc, GGUFQ_OK);
            ggufq_file *f = NULL;
            assert_int_equal(ggufq_open(out, NULL, &f, NULL), GGUFQ_OK);
            ggufq_tensor_info t;
            assert_int_equal(ggufq_tensor_at(f, ggufq_find_tensor(f, "blk.0.attn_q.weight"), &t), GGUFQ_OK);
            assert_int_equal(t.n_elements, 0);
            assert_int_equal(t.size, 0);
            assert_int_equal(t.dims[1], 0);
            assert_int_equal(t.dims[0], m == 0 ? (int64_t)1 << 62 : (int64_t)1 << 40);
            ggufq_close(f);
        }
    /* with an imatrix entry for it: llama.cpp's size check, without overflow, naming file and tensor */
    ggufq_requant_options o;
    opts_init(&o, "q8_0");
    o.imatrix_path = im;
    ggufq_error err;
    assert_int_equal(ggufq_requant(za, out, &o, NULL, NULL, &err), GGUFQ_E_FORMAT);
    snprintf(want, sizeof want, "%s: imatrix size 256 is different from tensor size 4611686018427387904 x "
             "4611686018427387904 for blk.0.attn_q.weight", im);
    assert_string_equal(err.message, want);
    assert_int_equal(ggufq_requant(z3, out, &o, NULL, NULL, &err), GGUFQ_E_FORMAT);
    snprintf(want, sizeof want, "%s: imatrix size 256 is different from tensor size 2199023255552 for "
             "blk.0.attn_q.weight", im);
    assert_string_equal(err.message, want);
    /* the plan (a dry run) refuses the same way, with the same message */
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(z3, &o, &plan, &err), GGUFQ_E_FORMAT);
    assert_string_equal(err.message, want);
    assert_null(plan);
    o.dry_run = true;
    assert_int_equal(ggufq_requant(z3, out, &o, NULL, NULL, &err), GGUFQ_E_FORMAT);
    assert_string_equal(err.message, want);
    /* without the imatrix the plan sizes it: nothing to write */
    o.imatrix_path = NULL;
    assert_int_equal(ggufq_requant_plan(za, &o, &plan, &err), GGUFQ_OK);
    for (int64_t i = 0; i < ggufq_plan_count(plan); i++) {
        const ggufq_plan_entry *e = ggufq_plan_at(plan, i);
        if (strcmp(e->name, "blk.0.attn_q.weight") == 0) {
            assert_int_equal(e->out_bytes, 0);
            assert_int_equal(e->n_dims, 4);
            assert_false(e->uses_imatrix);
        }
    }
    ggufq_plan_free(plan);
}

/* ------------------------------------------------------------------------- */
/* 4. Imatrix files                                                          */
/* ------------------------------------------------------------------------- */

static void test_imatrix_must_be_regular_file(void **state)
{
    (void)state;
    char dir[4096], out[4200], fifo[4200], want[9000];
    tmpdir(dir, sizeof dir, "rq-inputs-imfile");
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const struct { const char *path, *kind; } cases[] = {
        { "/dev/zero", "a character device" },   /* never ends */
        { fifo, "a FIFO" },                       /* opening it for reading would wait for a writer */
        { dir, "a directory" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ggufq_requant_options o;
        opts_init(&o, "q4_K");
        o.imatrix_path = cases[i].path;
        ggufq_error err;
        alarm(120);   /* a hang guard only: the refusal is immediate */
        assert_int_equal(ggufq_requant(tu_path("data/llama-2-tiny-random.gguf"), out, &o, NULL, NULL, &err),
                         GGUFQ_E_IO);
        alarm(0);
        snprintf(want, sizeof want, "%s: the imatrix must be a regular file, not %s", cases[i].path,
                 cases[i].kind);
        assert_string_equal(err.message, want);
    }
    assert_false(exists(out));
}

/* A legacy imatrix of n entries named <prefix>NNNNNNN (value 1, one call); entry `dup_of` (if >= 0)
 * appended again at the end with value 2. */
static void write_many_entries(const char *path, int32_t n, const char *prefix, int32_t dup_of)
{
    gb_buf b = { 0 };
    gb_u32(&b, (uint32_t)(n + (dup_of >= 0)));
    for (int32_t i = 0; i <= n; i++) {
        if (i == n && dup_of < 0)
            break;
        char name[256];
        int len = snprintf(name, sizeof name, "%s%07d", prefix, i == n ? dup_of : i);
        gb_u32(&b, (uint32_t)len);
        gb_bytes(&b, name, (size_t)len);
        gb_u32(&b, 1);
        gb_u32(&b, 1);
        gb_f32(&b, i == n ? 2.0f : 1.0f);
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
    fclose(f);
    gb_free(&b);
}

static void test_imatrix_dedupe_is_linear(void **state)
{
    (void)state;
    char dir[4096], dat[4200], out[4200];
    tmpdir(dir, sizeof dir, "rq-inputs-imdedupe");
    snprintf(dat, sizeof dat, "%s/many.dat", dir);
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    static const char prefix[] = "blk.0.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    ggufq_requant_options o;
    opts_init(&o, "Q4_K_M");
    o.imatrix_path = dat;

    /* 99,999 distinct names (a quadratic de-duplication took 96 s): each name is read a
     * bounded number of times (hash map growth re-reads each a few times, total < 2n) */
    const int32_t n = 99999;
    write_many_entries(dat, n, prefix, -1);
    gq_imatrix im;
    ggufq_error err;
    assert_int_equal(gq_imatrix_load(dat, &o, &im, &err), GGUFQ_OK);
    assert_int_equal(im.n, (size_t)n);
    printf("ok: %d entries, %llu name reads\n", n, (unsigned long long)im.dedupe_name_reads);
    assert_true(im.dedupe_name_reads < 3 * (uint64_t)n);
    gq_imatrix_free(&im);
    assert_int_equal(ggufq_requant(tu_path("data/llama-2-tiny-random.gguf"), out, &o, NULL, NULL, &err), GGUFQ_OK);

    /* past 100,000 entries duplicates still go: the last one counts (llama.cpp's map insert) */
    write_many_entries(dat, 100001, prefix, 5);
    assert_int_equal(gq_imatrix_load(dat, &o, &im, &err), GGUFQ_OK);
    assert_int_equal(im.n, 100001);
    char name[256];
    snprintf(name, sizeof name, "%s%07d", prefix, 5);
    const gq_imatrix_entry *e = gq_imatrix_find(&im, name);
    assert_non_null(e);
    assert_true(e->values[0] == 2.0f);
    snprintf(name, sizeof name, "%s%07d", prefix, 6);
    e = gq_imatrix_find(&im, name);
    assert_non_null(e);
    assert_true(e->values[0] == 1.0f);
    gq_imatrix_free(&im);
}

/* ------------------------------------------------------------------------- */
/* 5. Escaped messages                                                       */
/* ------------------------------------------------------------------------- */

static void expect_escaped(const char *raw, size_t len, size_t cap, const char *want)
{
    char out[256];
    assert_true(cap <= sizeof out);
    size_t n = gq_escape_text(out, cap, raw, len);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void test_messages_escape_file_text(void **state)
{
    (void)state;
    /* control characters, DEL, C1 controls, invalid UTF-8; valid UTF-8 and backslashes kept */
    expect_escaped("a\x1b[31mb\n\t\r\x7f\x07", 12, 256, "a\\x1b[31mb\\n\\t\\r\\x7f\\x07");
    expect_escaped("\xc2\x9b" "2J \xc2\xa0", 7, 256, "\\xc2\\x9b2J \xc2\xa0");
    expect_escaped("ok\xff\xc3(\xed\xa0\x80\xe2\x82", 10, 256, "ok\\xff\\xc3(\\xed\\xa0\\x80\\xe2\\x82");
    expect_escaped("h\xc3\xa9 \xf0\x9f\x98\x80 C:\\x1b", 15, 256, "h\xc3\xa9 \xf0\x9f\x98\x80 C:\\x1b");
    expect_escaped("a\0b", 3, 256, "a\\x00b");
    /* idempotent: escaped text is left as it is */
    expect_escaped("a\\x1b[31mb\\n", 12, 256, "a\\x1b[31mb\\n");
    /* cut at a whole escape or character, never inside one */
    expect_escaped("ab\x1b", 3, 6, "ab");
    expect_escaped("ab\x1b", 3, 7, "ab\\x1b");
    expect_escaped("a\xf0\x9f\x98\x80", 5, 5, "a");

    /* gq_fail escapes the whole message, the file name included */
    ggufq_error err;
    assert_int_equal(gq_fail(&err, GGUFQ_E_FORMAT, "in\x1b]0;x\x07.gguf", 7, "key '%s'", "k\x1b[2J"),
                     GGUFQ_E_FORMAT);
    assert_string_equal(err.message, "in\\x1b]0;x\\x07.gguf: offset 7: key 'k\\x1b[2J'");
    assert_int_equal(err.offset, 7);
    /* a long message stays NUL-terminated, cut at an escape */
    char big[600];
    memset(big, '\x1b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gq_fail(&err, GGUFQ_E_FORMAT, NULL, GGUFQ_NO_OFFSET, "%s", big);
    assert_int_equal(strlen(err.message), 508);   /* 127 escapes of 4 characters */

    /* reader: a duplicate key made of escape sequences */
    char want[9000];
    const char *dupkey = tu_path("data/esc_dupkey.gguf");
    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(dupkey, NULL, &f, &err), GGUFQ_E_DUPLICATE_KEY);
    snprintf(want, sizeof want, "%s: offset 51: duplicate key '\\x1b]0;PWNED\\x07\\x1b[2J' (keys 0 and 1)", dupkey);
    assert_string_equal(err.message, want);

    /* requant's engine (run.c): a NaN in a tensor named with escape sequences */
    char dir[4096], out[4200], esc_in[4200];
    tmpdir(dir, sizeof dir, "rq-inputs-esc");
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    snprintf(esc_in, sizeof esc_in, "%s", tu_path("data/esc_nan_tensor.gguf"));
    ggufq_requant_options o;
    opts_init(&o, "q8_0");
    assert_int_equal(ggufq_requant(esc_in, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    snprintf(want, sizeof want, "%s: offset 160: tensor 'blk.0.\\x1b[31mRED\\x1b[0m.weight' row 0: NaN or Inf "
             "in the input (f16 weight 0)", esc_in);
    assert_string_equal(err.message, want);

    /* the plan's messages (plan.c): an option quoted back */
    static const char *const bad_tt[] = { "\x1b[2J=q9_X" };
    o.tensor_types = bad_tt;
    o.n_tensor_types = 1;
    ggufq_plan *plan = NULL;
    assert_int_equal(ggufq_requant_plan(esc_in, &o, &plan, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message, "--tensor-type '\\x1b[2J=q9_X': 'q9_X' is not a type to quantize to");
    o.tensor_types = NULL;
    o.n_tensor_types = 0;

    /* a message put after the input's name (requant.c): the path escaped too */
    char odd_dir[4200], odd_in[4300];
    snprintf(odd_dir, sizeof odd_dir, "%s/in\x1b[2Jdir", dir);
    assert_int_equal(mkdir(odd_dir, 0755), 0);
    snprintf(odd_in, sizeof odd_in, "%s/m.gguf", odd_dir);
    write_model(odd_in, TRAILING, 2, 7, 0, 0, 0);
    opts_init(&o, "IQ2_XXS");
    assert_int_equal(ggufq_requant(odd_in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    snprintf(want, sizeof want, "%s/in\\x1b[2Jdir/m.gguf: this quantization needs an importance matrix", dir);
    assert_memory_equal(err.message, want, strlen(want));
    for (const char *p = err.message; *p; p++)
        assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
    assert_false(exists(out));
}

int main(void)
{
    _Static_assert(sizeof(peer_qparams) == 64, "llama_model_quantize_params of the peer is 64 bytes");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_dims_drop_trailing_ones),
        cmocka_unit_test(test_output_dims_keep_split),
        cmocka_unit_test(test_output_dims_match_llama),
        cmocka_unit_test(test_nested_arrays_refused),
        cmocka_unit_test(test_empty_tensor_huge_dims),
        cmocka_unit_test(test_imatrix_must_be_regular_file),
        cmocka_unit_test(test_imatrix_dedupe_is_linear),
        cmocka_unit_test(test_messages_escape_file_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
