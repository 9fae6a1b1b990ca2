/*
 * make_seeds.c — writes the seed corpus of the fuzz targets.
 *
 *   fuzz_make_seeds TESTS_DIR CORPUS_DIR
 *
 * TESTS_DIR is tests/ (the fixture and the golden files are read from it);
 * CORPUS_DIR is tests/fuzz/corpus. Writes, for each target, a few small seeds:
 *  - a minimized fixture (the llama-2-tiny-random metadata with a 64-token
 *    vocabulary and 64-row embedding/output tensors; every other tensor as is);
 *  - golden files cut down to one row of `raw` and `quant`;
 *  - hand-made edge cases (gguf_build.h): every value type, nesting limits,
 *    alignment variants, version 2, zero-sized tensors, bad headers ...;
 *  - for fuzz_requant_opts: a small llama with a GGUF and a legacy imatrix,
 *    kv overrides, tensor-type rules, weight filters, and as a split model.
 * Deterministic: running it again rewrites the same bytes. The output is
 * committed; crash inputs found later sit next to it (crash-*), never rewritten.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufq.h"
#include "gguf_build.h"

static const char *corpus;
static int failures;

static void put(const char *target, const char *name, const void *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", corpus, target, name);
    FILE *fp = fopen(path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
        failures++;
        return;
    }
}

/* fuzz_convert's inputs: a selector byte, then the file. */
static void put_convert(const char *name, uint8_t sel, const void *data, size_t size)
{
    uint8_t *b = malloc(size + 1);
    b[0] = sel;
    memcpy(b + 1, data, size);
    put("fuzz_convert", name, b, size + 1);
    free(b);
}

static void *slurp(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, fp) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(fp);
    *size = (size_t)n;
    return p;
}

/* ------------------------------------------------------------------------- */
/* The fixture, minimized                                                     */

#define MINI_VOCAB 64

/* Copy a value, cutting top-level arrays to MINI_VOCAB elements. */
static int copy_cut(ggufq_writer *w, const char *key, const ggufq_value *v)
{
    if (v->type != GGUFQ_VT_ARRAY || v->count <= MINI_VOCAB)
        return ggufq_writer_set_value(w, key, v);
    if (v->elem_type == GGUFQ_VT_STRING) {
        const char *strs[MINI_VOCAB];
        size_t lens[MINI_VOCAB];
        for (uint64_t i = 0; i < MINI_VOCAB; i++) {
            ggufq_value el;
            ggufq_str s;
            if (ggufq_array_get(v, i, &el) != GGUFQ_OK || ggufq_value_str(&el, &s) != GGUFQ_OK)
                return -1;
            strs[i] = s.ptr;
            lens[i] = (size_t)s.len;
        }
        return ggufq_writer_set_string_array(w, key, strs, lens, MINI_VOCAB);
    }
    const void *data;
    size_t esz;
    if (ggufq_array_data(v, &data, &esz) != GGUFQ_OK)
        return -1;
    return ggufq_writer_set_array(w, key, v->elem_type, data, MINI_VOCAB);
}

static int write_mini_fixture(const char *in, const char *out)
{
    ggufq_file *f;
    ggufq_writer *w;
    ggufq_error err;
    if (ggufq_open(in, NULL, &f, &err) != GGUFQ_OK) {
        fprintf(stderr, "make_seeds: %s\n", err.message);
        return -1;
    }
    if (ggufq_writer_create(out, NULL, &w, &err) != GGUFQ_OK) {
        ggufq_close(f);
        return -1;
    }
    int rc = 0;
    for (int64_t i = 0; i < ggufq_kv_count(f) && rc == 0; i++) {
        ggufq_value v;
        rc = ggufq_kv_value(f, i, &v);
        if (rc == 0)
            rc = copy_cut(w, ggufq_kv_key(f, i), &v);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f) && rc == 0; i++) {
        ggufq_tensor_info t;
        rc = ggufq_tensor_at(f, i, &t);
        if (t.n_dims == 2 && t.dims[1] > MINI_VOCAB)
            t.dims[1] = MINI_VOCAB;
        if (rc == 0)
            rc = ggufq_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f) && rc == 0; i++) {
        ggufq_tensor_info t;
        rc = ggufq_tensor_at(f, i, &t);
        uint64_t size = t.size;
        if (t.n_dims == 2 && t.dims[1] > MINI_VOCAB)
            size = ggufq_row_size(t.type, t.dims[0]) * MINI_VOCAB;
        if (rc == 0)
            rc = ggufq_writer_write(w, t.data, (size_t)size);
    }
    ggufq_close(f);
    if (rc != 0) {
        ggufq_writer_abort(w);
        return -1;
    }
    return ggufq_writer_finish(w, NULL);
}

/* A golden file cut to one row of `raw` and of `quant` (and the golden.* keys). */
static int write_mini_golden(const char *in, const char *out)
{
    ggufq_file *f;
    ggufq_writer *w;
    ggufq_error err;
    if (ggufq_open(in, NULL, &f, &err) != GGUFQ_OK) {
        fprintf(stderr, "make_seeds: %s\n", err.message);
        return -1;
    }
    if (ggufq_writer_create(out, NULL, &w, &err) != GGUFQ_OK) {
        ggufq_close(f);
        return -1;
    }
    int rc = 0;
    for (int64_t i = 0; i < ggufq_kv_count(f) && rc == 0; i++) {
        ggufq_value v;
        rc = ggufq_kv_value(f, i, &v);
        if (rc == 0)
            rc = ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v);
    }
    static const char *const keep[] = { "raw", "quant" };
    ggufq_tensor_info ts[2];
    int n = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        int64_t i = ggufq_find_tensor(f, keep[k]);
        if (i < 0)
            continue;
        rc = ggufq_tensor_at(f, i, &ts[n]);
        int64_t dims[2] = { ts[n].dims[0], 1 };
        if (rc == 0)
            rc = ggufq_writer_add_tensor(w, ts[n].name, ts[n].type, 2, dims);
        n++;
    }
    for (int k = 0; k < n && rc == 0; k++)
        rc = ggufq_writer_write(w, ts[k].data, ggufq_row_size(ts[k].type, ts[k].dims[0]));
    ggufq_close(f);
    if (rc != 0) {
        ggufq_writer_abort(w);
        return -1;
    }
    return ggufq_writer_finish(w, NULL);
}

/* A one-layer llama with 256-wide rows: every tensor is big enough to be
 * requantized to any type, and the inputs are of several types. */
static int write_llama_mini(const char *out)
{
    static const struct { const char *name; int type; int64_t rows; } ts[] = {
        { "token_embd.weight", GGUFQ_TYPE_F16, 4 },
        { "blk.0.attn_norm.weight", GGUFQ_TYPE_F32, 0 },
        { "blk.0.attn_q.weight", GGUFQ_TYPE_F16, 2 },
        { "blk.0.attn_k.weight", GGUFQ_TYPE_Q8_0, 2 },
        { "blk.0.attn_v.weight", GGUFQ_TYPE_Q4_K, 2 },
        { "blk.0.attn_output.weight", GGUFQ_TYPE_BF16, 2 },
        { "blk.0.ffn_gate.weight", GGUFQ_TYPE_Q5_0, 2 },
        { "blk.0.ffn_up.weight", GGUFQ_TYPE_IQ4_XS, 2 },
        { "blk.0.ffn_down.weight", GGUFQ_TYPE_Q6_K, 2 },
        { "output_norm.weight", GGUFQ_TYPE_F32, 0 },
        { "output.weight", GGUFQ_TYPE_Q8_0, 4 },
    };
    enum { N = sizeof ts / sizeof ts[0], W = 256 };
    ggufq_writer *w;
    ggufq_error err;
    if (ggufq_writer_create(out, NULL, &w, &err) != GGUFQ_OK)
        return -1;
    int rc = ggufq_writer_set_string(w, "general.architecture", "llama", 5);
    const char *names[] = { "llama.block_count", "llama.embedding_length", "llama.attention.head_count",
                            "llama.attention.head_count_kv", "llama.feed_forward_length" };
    const uint64_t vals[] = { 1, W, 4, 4, W };
    for (int i = 0; i < 5 && rc == 0; i++)
        rc = ggufq_writer_set_uint(w, names[i], GGUFQ_VT_UINT32, vals[i]);
    for (int i = 0; i < N && rc == 0; i++) {
        int64_t dims[2] = { W, ts[i].rows };
        rc = ggufq_writer_add_tensor(w, ts[i].name, (ggufq_type)ts[i].type, ts[i].rows ? 2 : 1, dims);
    }
    float x[W * 4];
    uint8_t q[W * 4 * 4];
    uint32_t seed = 7;
    for (int i = 0; i < N && rc == 0; i++) {
        int64_t rows = ts[i].rows ? ts[i].rows : 1;
        for (int64_t k = 0; k < rows * W; k++) {   /* sum of 4 uniforms: roughly Gaussian */
            float v = 0;
            for (int j = 0; j < 4; j++) {
                seed = seed * 1664525u + 1013904223u;
                v += (float)(seed >> 8) / 16777216.0f - 0.5f;
            }
            x[k] = ts[i].rows ? v * 0.1f : 1.0f + v * 0.01f;
        }
        rc = ggufq_quantize((ggufq_type)ts[i].type, x, q, rows, W, NULL);
        if (rc == 0)
            rc = ggufq_writer_write(w, q, ggufq_row_size((ggufq_type)ts[i].type, W) * (size_t)rows);
    }
    if (rc != 0) {
        ggufq_writer_abort(w);
        return -1;
    }
    return ggufq_writer_finish(w, NULL);
}

/* ------------------------------------------------------------------------- */
/* fuzz_requant_opts: selector, then segments separated by "\n#~#\n"         */

#define RQ_SEP "\n#~#\n"

typedef struct { const void *p; size_t n; } blob;

static void put_requant_opts(const char *name, uint8_t sel, const blob *segs, int n)
{
    gb_buf b = { 0 };
    gb_u8(&b, sel);
    for (int i = 0; i < n; i++) {
        if (i)
            gb_bytes(&b, RQ_SEP, 5);
        gb_bytes(&b, segs[i].p, segs[i].n);
    }
    put("fuzz_requant_opts", name, b.p, b.len);
    gb_free(&b);
}

/* The 2D weights of llama-mini (write_llama_mini): name, rows of 256. */
static const char *const mini_weights[] = {
    "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
    "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight", "token_embd.weight",
    "output.weight",
};
#define N_MINI_WEIGHTS (sizeof mini_weights / sizeof mini_weights[0])

/* A GGUF imatrix (llama-imatrix's format) for llama-mini. */
static int write_mini_imatrix(const char *out)
{
    ggufq_writer *w;
    if (ggufq_writer_create(out, NULL, &w, NULL) != GGUFQ_OK)
        return -1;
    const char *ds[1] = { "seeds.txt" };
    const size_t dl[1] = { 9 };
    int rc = ggufq_writer_set_string_array(w, "imatrix.datasets", ds, dl, 1);
    if (rc == 0)
        rc = ggufq_writer_set_uint(w, "imatrix.chunk_count", GGUFQ_VT_UINT32, 4);
    if (rc == 0)
        rc = ggufq_writer_set_uint(w, "imatrix.chunk_size", GGUFQ_VT_UINT32, 512);
    char name[96];
    for (size_t i = 0; i < N_MINI_WEIGHTS && rc == 0; i++) {
        const int64_t sum2[2] = { 256, 1 }, counts[2] = { 1, 1 };
        snprintf(name, sizeof name, "%s.in_sum2", mini_weights[i]);
        rc = ggufq_writer_add_tensor(w, name, GGUFQ_TYPE_F32, 2, sum2);
        snprintf(name, sizeof name, "%s.counts", mini_weights[i]);
        if (rc == 0)
            rc = ggufq_writer_add_tensor(w, name, GGUFQ_TYPE_F32, 2, counts);
    }
    float v[256];
    for (size_t i = 0; i < N_MINI_WEIGHTS && rc == 0; i++) {
        for (int k = 0; k < 256; k++)
            v[k] = 4.0f * (float)(1 + (k * 37 + (int)i) % 97) / 97.0f;
        const float count = 4.0f;
        rc = ggufq_writer_write(w, v, sizeof v);
        if (rc == 0)
            rc = ggufq_writer_write(w, &count, sizeof count);
    }
    if (rc != 0) {
        ggufq_writer_abort(w);
        return -1;
    }
    return ggufq_writer_finish(w, NULL);
}

/* The same as a legacy .dat (int32 count; per entry: name, ncall, nval, values; chunks, dataset). */
static void build_mini_imatrix_dat(gb_buf *b)
{
    gb_u32(b, (uint32_t)N_MINI_WEIGHTS);
    for (size_t i = 0; i < N_MINI_WEIGHTS; i++) {
        gb_u32(b, (uint32_t)strlen(mini_weights[i]));
        gb_bytes(b, mini_weights[i], strlen(mini_weights[i]));
        gb_u32(b, 4);     /* ncall */
        gb_u32(b, 256);   /* nval */
        for (int k = 0; k < 256; k++)
            gb_f32(b, 16.0f * (float)(1 + (k * 53 + (int)i) % 89) / 89.0f);
    }
    gb_u32(b, 4);
    gb_u32(b, 9);
    gb_bytes(b, "seeds.txt", 9);
}

/* llama-mini as two shards: the first 6 tensors, then the rest. */
static int write_mini_shard(const char *mini_path, const char *out, int no)
{
    ggufq_file *f = NULL;
    if (ggufq_open(mini_path, NULL, &f, NULL) != GGUFQ_OK)
        return -1;
    ggufq_writer *w;
    if (ggufq_writer_create(out, NULL, &w, NULL) != GGUFQ_OK) {
        ggufq_close(f);
        return -1;
    }
    const int64_t n = ggufq_tensor_count(f), lo = no ? 6 : 0, hi = no ? n : 6;
    int rc = 0;
    for (int64_t i = 0; i < ggufq_kv_count(f) && rc == 0; i++) {
        ggufq_value v;
        rc = ggufq_kv_value(f, i, &v);
        if (rc == 0)
            rc = ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v);
    }
    if (rc == 0)
        rc = ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, (uint64_t)no);
    if (rc == 0)
        rc = ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, 2);
    if (rc == 0)
        rc = ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, n);
    ggufq_tensor_info t;
    for (int64_t i = lo; i < hi && rc == 0; i++)
        if ((rc = ggufq_tensor_at(f, i, &t)) == 0)
            rc = ggufq_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims);
    for (int64_t i = lo; i < hi && rc == 0; i++)
        if ((rc = ggufq_tensor_at(f, i, &t)) == 0)
            rc = ggufq_writer_write(w, t.data, (size_t)t.size);
    ggufq_close(f);
    if (rc != 0) {
        ggufq_writer_abort(w);
        return -1;
    }
    return ggufq_writer_finish(w, NULL);
}

static void requant_opts_seeds(const char *mini_path)
{
    char path[1024], shard[2][1024];
    size_t n_mini = 0, n_im = 0, n_s[2] = { 0, 0 };
    void *mini = slurp(mini_path, &n_mini);
    snprintf(path, sizeof path, "%s/fuzz_requant_opts/imatrix.tmp", corpus);
    void *im = write_mini_imatrix(path) == GGUFQ_OK ? slurp(path, &n_im) : NULL;
    remove(path);
    void *sh[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++) {
        snprintf(shard[i], sizeof shard[i], "%s/fuzz_requant_opts/shard%d.tmp", corpus, i);
        if (write_mini_shard(mini_path, shard[i], i) == GGUFQ_OK)
            sh[i] = slurp(shard[i], &n_s[i]);
        remove(shard[i]);
    }
    if (!mini || !im || !sh[0] || !sh[1]) {
        fprintf(stderr, "make_seeds: cannot build the fuzz_requant_opts seeds\n");
        failures++;
    } else {
        gb_buf dat = { 0 };
        build_mini_imatrix_dat(&dat);
        static const char kv[] = "general.name=str:fuzzed\nllama.block_count=int:1\n"
                                 "tokenizer.ggml.add_bos_token=bool:false\nllama.rope.freq_base=float:10000.5";
        static const char tt[] = "attn_v=q8_0\nffn_down=q5_K\n\\.weight$=q6_K";
        static const char inc[] = "attn\nffn", exc[] = "output";
        const blob none = { "", 0 };
        const blob plain[] = { { mini, n_mini }, { im, n_im } };
        put_requant_opts("mini-iq2_xs-imatrix", 15, plain, 2);
        put_requant_opts("mini-IQ2_M-imatrix", 31, plain, 2);
        put_requant_opts("mini-Q4_K_M-imatrix", 20, plain, 2);
        const blob legacy[] = { { mini, n_mini }, { dat.p, dat.len } };
        put_requant_opts("mini-iq1_s-dat", 18 | 128, legacy, 2);
        put_requant_opts("mini-q4_0-dat", 0 | 128, legacy, 2);
        const blob opts[] = { { mini, n_mini }, { im, n_im }, { kv, sizeof kv - 1 }, { tt, sizeof tt - 1 },
                              none, { inc, sizeof inc - 1 } };
        put_requant_opts("mini-Q5_K_M-all-options", 22, opts, 6);
        const blob opts_ex[] = { { mini, n_mini }, { im, n_im }, none, none, none, none, { exc, sizeof exc - 1 } };
        put_requant_opts("mini-Q3_K_L-exclude", 23, opts_ex, 7);
        const blob split[] = { { sh[0], n_s[0] }, none, { kv, sizeof kv - 1 }, none, { sh[1], n_s[1] } };
        put_requant_opts("split-q4_K", 7 | 32, split, 5);
        put_requant_opts("split-Q4_K_S-keep", 21 | 32 | 64, split, 5);
        const blob split_im[] = { { sh[0], n_s[0] }, { im, n_im }, none, { tt, sizeof tt - 1 }, { sh[1], n_s[1] } };
        put_requant_opts("split-IQ3_XXS-imatrix-keep", 27 | 32 | 64, split_im, 5);
        const blob missing[] = { { sh[0], n_s[0] } };
        put_requant_opts("split-missing-shard2", 7, missing, 1);   /* named as no split: refused */
        gb_free(&dat);
    }
    free(mini);
    free(im);
    free(sh[0]);
    free(sh[1]);
}

/* ------------------------------------------------------------------------- */
/* Hand-made edge cases                                                       */

typedef void (*edge_fn)(gb_buf *b);

static void edge_empty_v3(gb_buf *b) { gb_header(b, 3, 0, 0); }
static void edge_empty_v2(gb_buf *b) { gb_header(b, 2, 0, 0); }
static void edge_v1(gb_buf *b) { gb_header(b, 1, 0, 0); }
static void edge_big_endian(gb_buf *b) { gb_bytes(b, "GGUF\0\0\0\3", 8); gb_u64(b, 0); gb_u64(b, 0); }
static void edge_bad_magic(gb_buf *b) { gb_bytes(b, "GGUG", 4); gb_u32(b, 3); gb_u64(b, 0); gb_u64(b, 0); }
static void edge_short_header(gb_buf *b) { gb_bytes(b, "GGUF", 4); gb_u32(b, 3); gb_u32(b, 0); }
static void edge_huge_counts(gb_buf *b) { gb_header(b, 3, UINT64_MAX / 2, UINT64_MAX / 2); }

static void edge_nesting(gb_buf *b, int depth)
{
    gb_header(b, 3, 0, 1);
    gb_key(b, "deep", 9);
    for (int i = 1; i < depth; i++)
        gb_array(b, 9, 1);
    gb_array(b, 8, 2);
    gb_str(b, "leaf");
    gb_str(b, "");
}
static void edge_nesting_16(gb_buf *b) { edge_nesting(b, GGUFQ_MAX_NESTING); }
static void edge_nesting_17(gb_buf *b) { edge_nesting(b, GGUFQ_MAX_NESTING + 1); }

static void edge_alignment(gb_buf *b, uint32_t vtype, uint64_t value, int width)
{
    const int64_t dims[1] = { 32 };
    gb_header(b, 3, 1, 1);
    gb_key(b, "general.alignment", vtype);
    gb_le(b, value, width);
    gb_tensor(b, "t", 1, dims, 8 /* Q8_0 */, 0);
    gb_pad(b, value > 0 && value <= 4096 && (value & (value - 1)) == 0 ? (size_t)value : 32);
    for (int i = 0; i < 34; i++)
        gb_u8(b, (uint8_t)(i * 7));
}
static void edge_align_1(gb_buf *b) { edge_alignment(b, 4, 1, 4); }
static void edge_align_256(gb_buf *b) { edge_alignment(b, 4, 256, 4); }
static void edge_align_odd(gb_buf *b) { edge_alignment(b, 4, 48, 4); }
static void edge_align_zero(gb_buf *b) { edge_alignment(b, 4, 0, 4); }
static void edge_align_u64(gb_buf *b) { edge_alignment(b, 10, 64, 8); }

/* Every valid tensor type, one block each, packed at alignment 32. */
static void edge_all_types(gb_buf *b)
{
    int n = 0;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
        n += ggufq_type_is_valid(t);
    gb_header(b, 3, (uint64_t)n, 1);
    gb_kv_str(b, "general.architecture", "llama");
    uint64_t off = 0;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        char name[32];
        snprintf(name, sizeof name, "blk.0.%s.weight", ggufq_type_name((ggufq_type)t));
        const int64_t dims[2] = { ggufq_type_block_size((ggufq_type)t), 1 };
        gb_tensor(b, name, 2, dims, (uint32_t)t, off);
        off += (ggufq_type_block_bytes((ggufq_type)t) + 31) / 32 * 32;
    }
    gb_pad(b, 32);
    uint32_t x = 12345;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        size_t bb = ggufq_type_block_bytes((ggufq_type)t);
        for (size_t i = 0; i < bb; i++) {
            x = x * 1103515245u + 12345u;
            gb_u8(b, (uint8_t)(x >> 16) & 0x3b);   /* keeps fp16 scales small and finite */
        }
        gb_pad(b, 32);
    }
}

/* Tensors with 4 dims, with a zero dim, and a 63-character name. */
static void edge_shapes(gb_buf *b)
{
    const int64_t d4[4] = { 32, 2, 1, 2 }, d0[2] = { 32, 0 }, d1[1] = { 64 };
    char longname[64];
    memset(longname, 'n', 63);
    longname[63] = '\0';
    gb_header(b, 3, 3, 0);
    gb_tensor(b, "four", 4, d4, 0 /* F32 */, 0);
    gb_tensor(b, "empty", 2, d0, 2 /* Q4_0 */, 512);
    gb_tensor(b, longname, 1, d1, 30 /* BF16 */, 512);
    gb_pad(b, 32);
    for (int i = 0; i < 128; i++)
        gb_f32(b, (float)i - 64.0f);
    for (int i = 0; i < 64; i++)
        gb_u16(b, (uint16_t)(0x3f80 + i));
}

/* Duplicates and overlaps the reader must refuse. */
static void edge_dup_key(gb_buf *b) { gb_header(b, 3, 0, 2); gb_kv_u32(b, "k", 1); gb_kv_u32(b, "k", 2); }
static void edge_dup_tensor(gb_buf *b)
{
    const int64_t d[1] = { 8 };
    gb_header(b, 3, 2, 0);
    gb_tensor(b, "t", 1, d, 0, 0);
    gb_tensor(b, "t", 1, d, 0, 32);
    gb_pad(b, 32);
    gb_zeros(b, 64);
}
static void edge_overlap(gb_buf *b)
{
    const int64_t d[1] = { 16 };
    gb_header(b, 3, 2, 0);
    gb_tensor(b, "a", 1, d, 0, 0);
    gb_tensor(b, "b", 1, d, 0, 32);
    gb_pad(b, 32);
    gb_zeros(b, 96);
}
static void edge_bad_bool(gb_buf *b) { gb_header(b, 3, 0, 1); gb_key(b, "b", 7); gb_u8(b, 2); }
static void edge_bad_vtype(gb_buf *b) { gb_header(b, 3, 0, 1); gb_key(b, "x", 13); gb_u32(b, 0); }
static void edge_key_nul(gb_buf *b) { gb_header(b, 3, 0, 1); gb_strn(b, "a\0b", 3); gb_u32(b, 4); gb_u32(b, 0); }
static void edge_big_array(gb_buf *b) { gb_header(b, 3, 0, 1); gb_key(b, "a", 9); gb_array(b, 10, UINT64_MAX / 8); }
static void edge_truncated_data(gb_buf *b)
{
    const int64_t d[2] = { 256, 4 };
    gb_header(b, 3, 1, 0);
    gb_tensor(b, "q", 2, d, 12 /* Q4_K */, 0);
    gb_pad(b, 32);
    gb_zeros(b, 144 * 4 - 1);
}
static void edge_overflow_dims(gb_buf *b)
{
    const int64_t d[4] = { INT64_MAX / 2 + 1, 4, 1, 1 };
    gb_header(b, 3, 1, 0);
    gb_tensor(b, "o", 4, d, 0, 0);
}
static void edge_split(gb_buf *b)
{
    const int64_t d[2] = { 32, 2 };
    gb_header(b, 3, 1, 4);
    gb_kv_str(b, "general.architecture", "llama");
    gb_key(b, "split.no", 2); gb_u16(b, 0);
    gb_key(b, "split.count", 2); gb_u16(b, 2);
    gb_key(b, "split.tensors.count", 5); gb_u32(b, 2);
    gb_tensor(b, "blk.0.attn_q.weight", 2, d, 0, 0);
    gb_pad(b, 32);
    for (int i = 0; i < 64; i++)
        gb_f32(b, (float)(i % 9) * 0.25f - 1.0f);
}

static const struct { const char *name; edge_fn fn; } edges[] = {
    { "edge-empty-v3", edge_empty_v3 }, { "edge-empty-v2", edge_empty_v2 }, { "edge-v1", edge_v1 },
    { "edge-big-endian", edge_big_endian }, { "edge-bad-magic", edge_bad_magic },
    { "edge-short-header", edge_short_header }, { "edge-huge-counts", edge_huge_counts },
    { "edge-nesting-16", edge_nesting_16 }, { "edge-nesting-17", edge_nesting_17 },
    { "edge-align-1", edge_align_1 }, { "edge-align-256", edge_align_256 },
    { "edge-align-48", edge_align_odd }, { "edge-align-0", edge_align_zero },
    { "edge-align-u64", edge_align_u64 }, { "edge-all-types", edge_all_types },
    { "edge-shapes", edge_shapes }, { "edge-dup-key", edge_dup_key },
    { "edge-dup-tensor", edge_dup_tensor }, { "edge-overlap", edge_overlap },
    { "edge-bad-bool", edge_bad_bool }, { "edge-bad-value-type", edge_bad_vtype },
    { "edge-key-nul", edge_key_nul }, { "edge-big-array", edge_big_array },
    { "edge-truncated-data", edge_truncated_data }, { "edge-overflow-dims", edge_overflow_dims },
    { "edge-split", edge_split },
};

/* ------------------------------------------------------------------------- */
/* fuzz_dequant seeds: selector bytes + blocks                                */

static int type_selector(int type)
{
    int k = 0;
    for (int t = 0; t < type; t++)
        k += ggufq_type_is_valid(t);
    return k;
}

static void dequant_seeds(const char *tests)
{
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t))
            continue;
        const char *name = ggufq_type_name((ggufq_type)t);
        size_t bb = ggufq_type_block_bytes((ggufq_type)t);
        size_t nb = bb >= 64 ? 3 : 9;   /* odd block counts: SIMD tails */
        uint8_t *b = malloc(3 + nb * bb);
        char fname[128];
        /* 1: the golden `raw` blocks (finite in ggml), aligned, quantized back to the type */
        char gpath[1024];
        snprintf(gpath, sizeof gpath, "%s/golden/%s.gguf", tests, name);
        ggufq_file *f = NULL;
        int have = 0;
        if (ggufq_open(gpath, NULL, &f, NULL) == GGUFQ_OK) {
            int64_t i = ggufq_find_tensor(f, "raw");
            ggufq_tensor_info ti;
            if (i >= 0 && ggufq_tensor_at(f, i, &ti) == GGUFQ_OK && ti.size >= nb * bb) {
                memcpy(b + 3, ti.data, nb * bb);
                have = 1;
            }
            ggufq_close(f);
        }
        if (!have) {   /* no golden file: small patterned values */
            for (size_t i = 0; i < nb * bb; i++)
                b[3 + i] = (uint8_t)((i * 37 + 11) & 0x3f);
        }
        b[0] = (uint8_t)type_selector(t);
        b[1] = 0x80;
        b[2] = b[0];   /* quantize back to the same type */
        snprintf(fname, sizeof fname, "%s-raw", name);
        put("fuzz_dequant", fname, b, 3 + nb * bb);
        /* 2: every byte 0xff (NaN/Inf scales for fp16/bf16-scaled types), misaligned */
        memset(b + 3, 0xff, nb * bb);
        b[1] = 0x40 | 24;   /* 8-byte aligned, not 16: SIMD must load unaligned */
        b[2] = (uint8_t)type_selector(GGUFQ_TYPE_Q4_K);
        snprintf(fname, sizeof fname, "%s-ff", name);
        put("fuzz_dequant", fname, b, 3 + nb * bb);
        free(b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TESTS_DIR CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const char *tests = argv[1];
    corpus = argv[2];
    char path[1024], out[1024];

    /* the minimized fixture, written by the writer, then shared */
    snprintf(path, sizeof path, "%s/data/llama-2-tiny-random.gguf", tests);
    snprintf(out, sizeof out, "%s/fuzz_gguf/fixture-mini.gguf", corpus);
    if (write_mini_fixture(path, out) != GGUFQ_OK) {
        fprintf(stderr, "make_seeds: cannot minimize %s\n", path);
        return 1;
    }
    size_t n;
    void *mini = slurp(out, &n);
    if (!mini)
        return 1;
    put_convert("fixture-mini-q4_K_M", 20, mini, n);          /* Q4_K_M */
    put_convert("fixture-mini-q8_0-f16", 4 | 32, mini, n);    /* q8_0, copy as F16 */
    put_convert("fixture-mini-q2_K-copy", 5 | 64 | 128, mini, n);
    free(mini);

    snprintf(out, sizeof out, "%s/fuzz_gguf/llama-mini.gguf", corpus);
    if (write_llama_mini(out) != GGUFQ_OK) {
        fprintf(stderr, "make_seeds: cannot write %s\n", out);
        return 1;
    }
    mini = slurp(out, &n);
    if (!mini)
        return 1;
    put_convert("llama-mini-Q4_K_M", 20, mini, n);
    put_convert("llama-mini-q2_K", 5, mini, n);
    put_convert("llama-mini-IQ3_XXS-f16", 27 | 32, mini, n);   /* needs an imatrix: refused */
    put_convert("llama-mini-iq4_nl-copy", 10 | 64, mini, n);
    put_convert("llama-mini-tq1_0", 12, mini, n);
    free(mini);
    requant_opts_seeds(out);

    static const char *const goldens[] = { "q4_0", "q4_K", "q6_K", "iq2_xxs", "iq1_m", "iq4_xs",
                                           "tq1_0", "mxfp4", "bf16" };
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        snprintf(path, sizeof path, "%s/golden/%s.gguf", tests, goldens[i]);
        snprintf(out, sizeof out, "%s/fuzz_gguf/golden-%s.gguf", corpus, goldens[i]);
        if (write_mini_golden(path, out) != GGUFQ_OK) {
            fprintf(stderr, "make_seeds: cannot cut %s\n", path);
            return 1;
        }
        void *g = slurp(out, &n);
        char name[64];
        snprintf(name, sizeof name, "golden-%s", goldens[i]);
        if (g)
            put_convert(name, (uint8_t)(i * 3), g, n);
        free(g);
    }

    gb_buf s = { 0 };
    gb_build_sample(&s);
    put("fuzz_gguf", "sample.gguf", s.p, s.len);
    put_convert("sample", 7, s.p, s.len);
    gb_free(&s);

    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        gb_buf b = { 0 };
        edges[i].fn(&b);
        put("fuzz_gguf", edges[i].name, b.p, b.len);
        if (strcmp(edges[i].name, "edge-all-types") == 0 || strcmp(edges[i].name, "edge-shapes") == 0 ||
            strcmp(edges[i].name, "edge-split") == 0 || strcmp(edges[i].name, "edge-align-256") == 0)
            put_convert(edges[i].name, (uint8_t)(i + 1), b.p, b.len);
        gb_free(&b);
    }
    dequant_seeds(tests);
    return failures ? 1 : 0;
}
