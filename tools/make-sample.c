/*
 * make-sample — write the small model `make run` quantizes.
 *
 * The bundled fixture (tests/data/llama-2-tiny-random.gguf, written by
 * llama.cpp) has rows of 8 weights: no k-quant or IQ block fits them, so
 * every tensor of it falls back or is copied, and quantizing it shows
 * nothing. This tool keeps the fixture's metadata (its 32000-token
 * vocabulary, so llama.cpp can load the result) and replaces the weights by
 * a 2-block llama of width 256 with F16 weights drawn from a fixed
 * pseudo-random sequence: every matrix has rows that are multiples of 256,
 * so every quantized type applies, and the file is 35 MB.
 *
 * The weights look like a trained model's where it matters to quantizers:
 * roughly normal with a small standard deviation, a few columns several
 * times larger than the rest (outlier channels), norms near 1. They are
 * made with integer arithmetic only, so every machine writes the same bytes.
 *
 * Usage: make-sample [--embd N] [--ff N] [--layers N] TEMPLATE.gguf OUT.gguf
 *
 * The options make larger models of the same kind for measurements
 * (`--embd 2048 --ff 5632 --layers 22`: 1.26 G weights, 2.5 GB); heads are
 * 64 wide. Without them the bytes are those of the sample.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufq.h"

/* The model's shape: the sample's unless options change it. */
static int64_t N_EMBD = 256, N_FF = 768, N_LAYERS = 2, N_HEAD = 4;

/* splitmix64: a fixed sequence; every draw goes through it. */
static uint64_t rng_state = 0x5eed5a3b1e000001ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Sum of four uniforms (Irwin-Hall): near-normal, mean 0, unit variance. */
static float rng_normal(void)
{
    int64_t sum = 0;
    for (int i = 0; i < 4; i++)
        sum += (int64_t)(rng_next() >> 40);          /* 24-bit uniform */
    double u = (double)sum / (double)(1 << 24) - 2.0; /* in [-2, 2), variance 1/3 */
    return (float)(u * 1.7320508075688772);
}

static int fail(const char *what, int status, const ggufq_error *err)
{
    if (err && err->message[0])
        fprintf(stderr, "make-sample: %s\n", err->message);
    else
        fprintf(stderr, "make-sample: %s: %s\n", what, ggufq_strerror(status));
    return 1;
}

/* Every key of the template except the ones describing the model's shape. */
static int copy_metadata(const ggufq_file *tmpl, ggufq_writer *w)
{
    for (int64_t i = 0; i < ggufq_kv_count(tmpl); i++) {
        ggufq_value v;
        int st = ggufq_kv_value(tmpl, i, &v);
        if (st == GGUFQ_OK)
            st = ggufq_writer_set_value(w, ggufq_kv_key(tmpl, i), &v);
        if (st != GGUFQ_OK)
            return st;
    }
    const struct { const char *key; uint64_t value; } shape[] = {
        { "llama.embedding_length",       (uint64_t)N_EMBD },
        { "llama.block_count",            (uint64_t)N_LAYERS },
        { "llama.feed_forward_length",    (uint64_t)N_FF },
        { "llama.rope.dimension_count",   (uint64_t)(N_EMBD / N_HEAD) },
        { "llama.attention.head_count",   (uint64_t)N_HEAD },
        { "llama.attention.head_count_kv", (uint64_t)N_HEAD },
        { "general.file_type",            1 },   /* mostly F16 */
    };
    for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
        int st = ggufq_writer_set_uint(w, shape[i].key, GGUFQ_VT_UINT32, shape[i].value);
        if (st != GGUFQ_OK)
            return st;
    }
    return ggufq_writer_set_string(w, "general.name", "ggufq sample (random weights)", 29);
}

typedef struct sample_tensor {
    char    name[64];
    int64_t cols, rows;   /* rows == 1: a norm vector (F32) */
} sample_tensor;

static size_t list_tensors(sample_tensor *t, int64_t n_vocab)
{
    const struct { const char *name; int64_t cols, rows; } block[] = {
        { "attn_norm.weight",   N_EMBD, 1 },
        { "attn_q.weight",      N_EMBD, N_EMBD },
        { "attn_k.weight",      N_EMBD, N_EMBD },
        { "attn_v.weight",      N_EMBD, N_EMBD },
        { "attn_output.weight", N_EMBD, N_EMBD },
        { "ffn_norm.weight",    N_EMBD, 1 },
        { "ffn_gate.weight",    N_EMBD, N_FF },
        { "ffn_up.weight",      N_EMBD, N_FF },
        { "ffn_down.weight",    N_FF,   N_EMBD },
    };
    size_t n = 0;
    t[n++] = (sample_tensor){ "token_embd.weight", N_EMBD, n_vocab };
    for (int l = 0; l < N_LAYERS; l++)
        for (size_t b = 0; b < sizeof block / sizeof block[0]; b++, n++) {
            snprintf(t[n].name, sizeof t[n].name, "blk.%d.%s", l, block[b].name);
            t[n].cols = block[b].cols;
            t[n].rows = block[b].rows;
        }
    t[n++] = (sample_tensor){ "output_norm.weight", N_EMBD, 1 };
    t[n++] = (sample_tensor){ "output.weight", N_EMBD, n_vocab };
    return n;
}

/* One tensor's weights, row by row, streamed into the writer. */
static int write_tensor(ggufq_writer *w, const sample_tensor *t, float *row, uint16_t *row_f16)
{
    bool norm = t->rows == 1;
    float *outlier = malloc((size_t)t->cols * sizeof *outlier);
    if (!outlier)
        return GGUFQ_E_NOMEM;
    for (int64_t c = 0; c < t->cols; c++)            /* about 1 column in 64 is 6x larger */
        outlier[c] = (rng_next() % 64 == 0) ? 6.0f : 1.0f;
    int st = GGUFQ_OK;
    for (int64_t r = 0; r < t->rows; r++) {
        for (int64_t c = 0; c < t->cols; c++)
            row[c] = norm ? 1.0f + 0.1f * rng_normal() : 0.02f * outlier[c] * rng_normal();
        st = norm ? ggufq_writer_write(w, row, (size_t)t->cols * sizeof(float))
                      : ggufq_quantize(GGUFQ_TYPE_F16, row, row_f16, 1, t->cols, NULL);
        if (st == GGUFQ_OK && !norm)
            st = ggufq_writer_write(w, row_f16, (size_t)t->cols * sizeof(uint16_t));
        if (st != GGUFQ_OK)
            break;
    }
    free(outlier);
    return st;
}

/* "--embd N" and the like; false on anything else. */
static bool parse_shape(int *argc, char ***argv)
{
    while (*argc > 3 && strncmp((*argv)[1], "--", 2) == 0) {
        const char *opt = (*argv)[1], *val = (*argv)[2];
        char *end = NULL;
        long long v = strtoll(val, &end, 10);
        if (!*val || *end || v < 1 || v > (1 << 20) || (v % 64 != 0 && strcmp(opt, "--layers") != 0))
            return false;
        if (strcmp(opt, "--embd") == 0)
            N_EMBD = v, N_HEAD = v / 64;
        else if (strcmp(opt, "--ff") == 0)
            N_FF = v;
        else if (strcmp(opt, "--layers") == 0 && v <= 1000)
            N_LAYERS = v;
        else
            return false;
        (*argv)[2] = (*argv)[0];
        *argv += 2;
        *argc -= 2;
    }
    return *argc == 3;
}

int main(int argc, char **argv)
{
    if (!parse_shape(&argc, &argv)) {
        fprintf(stderr, "usage: make-sample [--embd N] [--ff N] [--layers N] TEMPLATE.gguf OUT.gguf\n"
                        "(widths: multiples of 64)\n");
        return 2;
    }
    ggufq_error err = { 0 };
    ggufq_file *tmpl = NULL;
    int st = ggufq_open(argv[1], NULL, &tmpl, &err);
    if (st != GGUFQ_OK)
        return fail(argv[1], st, &err);
    ggufq_value tokens;
    if (ggufq_get(tmpl, "tokenizer.ggml.tokens", &tokens) != GGUFQ_OK || tokens.count == 0) {
        fprintf(stderr, "make-sample: %s: no tokenizer.ggml.tokens to take the vocabulary from\n", argv[1]);
        ggufq_close(tmpl);
        return 1;
    }
    int64_t n_vocab = (int64_t)tokens.count;

    ggufq_writer_options wo = { .alignment = 0, .input = tmpl };
    ggufq_writer *w = NULL;
    st = ggufq_writer_create(argv[2], &wo, &w, &err);
    if (st != GGUFQ_OK) {
        ggufq_close(tmpl);
        return fail(argv[2], st, &err);
    }
    sample_tensor *tensors = malloc((size_t)(3 + 9 * N_LAYERS) * sizeof *tensors);
    float *row = malloc((size_t)(N_FF > N_EMBD ? N_FF : N_EMBD) * sizeof *row);
    uint16_t *row_f16 = malloc((size_t)(N_FF > N_EMBD ? N_FF : N_EMBD) * sizeof *row_f16);
    if (!tensors || !row || !row_f16) {
        fprintf(stderr, "make-sample: out of memory\n");
        return 1;
    }
    size_t n = list_tensors(tensors, n_vocab);
    st = copy_metadata(tmpl, w);
    for (size_t i = 0; i < n && st == GGUFQ_OK; i++) {
        int64_t dims[2] = { tensors[i].cols, tensors[i].rows };
        st = ggufq_writer_add_tensor(w, tensors[i].name,
                                     tensors[i].rows == 1 ? GGUFQ_TYPE_F32 : GGUFQ_TYPE_F16,
                                     tensors[i].rows == 1 ? 1 : 2, dims);
    }
    for (size_t i = 0; i < n && st == GGUFQ_OK; i++)
        st = write_tensor(w, &tensors[i], row, row_f16);
    int rc = 0;
    if (st != GGUFQ_OK) {
        rc = fail(argv[2], st, ggufq_writer_error(w));
        ggufq_writer_abort(w);
    } else if ((st = ggufq_writer_finish(w, &err)) != GGUFQ_OK) {
        rc = fail(argv[2], st, &err);
    }
    ggufq_close(tmpl);   /* after finish: the writer checks OUT is not the template up to the rename */
    free(tensors);
    free(row);
    free(row_f16);
    return rc;
}
