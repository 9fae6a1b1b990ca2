/*
 * test_requant_failures.c — ggufq_requant's plans and dry runs, and its
 * failures: a failed or interrupted run leaves no file behind, every message
 * names the file and byte offset, and what it writes loads in ggml's reader.
 * (Parity with llama.cpp: test_requant.c.)
 */
#include "requant_util.h"

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
#include "requant/requant_internal.h"

static void test_failures_leave_nothing(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant-fail");
    char in[4200], out_dir[4200], out[4200], trunc[4200], nan_in[4200];
    snprintf(in, sizeof in, "%s/model.gguf", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    snprintf(out, sizeof out, "%s/out/q.gguf", dir);
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 8, -1);
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
    assert_int_equal(tu_count_files(out_dir), 0);

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
    assert_int_equal(tu_count_files(out_dir), 0);

    /* a type that needs an importance matrix, without one: which tensor, and why */
    o.target = "IQ2_XXS";
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_NEEDS_IMATRIX);
    assert_non_null(strstr(err.message, "blk.0."));
    assert_non_null(strstr(err.message, "importance matrix"));
    assert_int_equal(tu_count_files(out_dir), 0);
    o.target = "Q4_K_M";

    /* after all that, a good run leaves exactly its output */
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_OK);
    assert_int_equal(tu_count_files(out_dir), 1);
    remove(out);

    /* NaN in the input: reported with file, offset, tensor and row (exact messages: the test below) */
    snprintf(nan_in, sizeof nan_in, "%s/nan.gguf", dir);
    rq_make_model(nan_in, &RQ_SMALL, GGUFQ_TYPE_F16, 9, 3 * 256 + 17);
    assert_int_equal(ggufq_requant(nan_in, out, &o, NULL, NULL, &err), GGUFQ_E_NONFINITE);
    assert_non_null(strstr(err.message, nan_in));
    assert_non_null(strstr(err.message, "blk.1.ffn_up.weight"));
    assert_non_null(strstr(err.message, "row 3"));
    assert_non_null(strstr(err.message, "offset "));
    assert_int_equal(tu_count_files(out_dir), 0);
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
    rq_put_tensor(w, "blk.0.ffn_up.weight", GGUFQ_TYPE_F32, 64, 4);
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
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 9, 3 * 256 + 17);
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
    rq_make_split(split_dir, in);
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
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 8, -1);
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
    rq_write_legacy_imatrix(dat, &RQ_SMALL, &vals, names, &n);
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
    assert_int_equal(tu_count_files(out_dir), 0);
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
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 10, -1);
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    int n = 0;
    assert_int_equal(ggufq_requant(in, out, &o, stop_after, &n, NULL), GGUFQ_E_INTERRUPTED);
    assert_int_equal(n, 3);
    assert_int_equal(tu_count_files(dir), 1);   /* only the input */
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
    assert_int_equal(tu_count_files(dir), 0);
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
    rq_make_model(in, &RQ_SMALL, GGUFQ_TYPE_F16, 11, -1);
    run_opts ro = { 0 };
    rq_run_ours(in, "Q3_K_M", out, &ro);
    init_params ip = { true, NULL };
    void *ctx = init(out, ip);
    assert_non_null(ctx);
    assert_int_equal(n_tensors(ctx), 2 + 9 * RQ_SMALL.n_layer + 1);
    gfree(ctx);
}

/* gq_first_invalid on plain floats: the first bad value wherever it falls
 * relative to the chunks the check vectorizes over (512 values). */
static void test_first_invalid_plain(void **state)
{
    (void)state;
    enum { N = 1500 };
    static const ggufq_type types[] = { GGUFQ_TYPE_F32, GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16, GGUFQ_TYPE_F64 };
    static const size_t widths[] = { 4, 2, 2, 8 };
    static const size_t at[] = { 0, 1, 510, 511, 512, 513, 1023, 1024, 1498, 1499 };
    static uint8_t buf[N * 8];
    for (size_t t = 0; t < 4; t++) {
        const size_t w = widths[t];
        for (size_t k = 0; k < sizeof at / sizeof at[0]; k++)
            for (int second = 0; second < 2; second++) {
                memset(buf, 0x11, sizeof buf);   /* finite in every width */
                /* an Inf (all exponent bits, sign and mantissa 0) at at[k], little-endian */
                const uint64_t inf = w == 4 ? 0x7f800000u : w == 2 ? (t == 1 ? 0x7c00u : 0x7f80u)
                                                               : 0x7ff0000000000000ull;
                for (size_t b = 0; b < w; b++)
                    buf[at[k] * w + b] = (uint8_t)(inf >> (8 * b));
                if (second && at[k] + 3 < N)   /* a later one does not matter */
                    for (size_t b = 0; b < w; b++)
                        buf[(at[k] + 3) * w + b] = (uint8_t)(inf >> (8 * b)) | (b == w - 1 ? 0x80 : 0);
                assert_int_equal(gq_first_invalid(types[t], buf, N * w), (int64_t)at[k]);
                assert_int_equal(gq_first_invalid(types[t], buf, at[k] * w), -1);   /* stops before it */
            }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_invalid_plain),
        cmocka_unit_test(test_plan_and_dry_run),
        cmocka_unit_test(test_failures_leave_nothing),
        cmocka_unit_test(test_error_messages_name_file_and_offset),
        cmocka_unit_test(test_interrupt_leaves_nothing),
        cmocka_unit_test(test_output_loads_in_ggml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
