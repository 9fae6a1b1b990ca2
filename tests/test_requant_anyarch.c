/*
 * test_requant_anyarch.c — requant of files llama.cpp refuses: a vision
 * projector (architecture "clip") and a diffusion-model file with no
 * general.architecture at all (ComfyUI style). The documented rule: 2D+
 * "*.weight" tensors whose rows fit the type are quantized, 1D tensors,
 * norms and non-weights are kept; every quantized tensor holds exactly what
 * ggufq_quantize gives for its input.
 */
#include "testutil.h"
#include "gguf_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spec {
    const char *name;
    uint32_t    n_dims;
    int64_t     dims[4];
    ggufq_type  in_type;
    ggufq_type  want;      /* expected output type for target q4_K --pure */
} spec;

static int64_t count_of(const spec *s)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < s->n_dims; d++)
        n *= s->dims[d];
    return n;
}

static void fill(float *x, int64_t n, uint64_t seed)
{
    tu_rng r = { seed };
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.05f * tu_rand_gauss(&r);
}

static void write_model(const char *path, const char *arch, const spec *t, int n)
{
    ggufq_writer *w = NULL;
    assert_int_equal(ggufq_writer_create(path, NULL, &w, NULL), GGUFQ_OK);
    if (arch)
        assert_int_equal(ggufq_writer_set_string(w, "general.architecture", arch, strlen(arch)),
                         GGUFQ_OK);
    assert_int_equal(ggufq_writer_set_string(w, "general.name", "anyarch", 7), GGUFQ_OK);
    for (int i = 0; i < n; i++)
        assert_int_equal(ggufq_writer_add_tensor(w, t[i].name, t[i].in_type, t[i].n_dims, t[i].dims),
                         GGUFQ_OK);
    for (int i = 0; i < n; i++) {
        const int64_t cnt = count_of(&t[i]);
        float *x = malloc((size_t)cnt * sizeof *x);
        const size_t bytes = ggufq_row_size(t[i].in_type, cnt);
        void *enc = malloc(bytes);
        assert_non_null(x);
        assert_non_null(enc);
        fill(x, cnt, 1000u + (uint64_t)i);
        assert_int_equal(ggufq_quantize(t[i].in_type, x, enc, 1, cnt, NULL), GGUFQ_OK);
        assert_int_equal(ggufq_writer_write(w, enc, bytes), GGUFQ_OK);
        free(x);
        free(enc);
    }
    assert_int_equal(ggufq_writer_finish(w, NULL), GGUFQ_OK);
}

/* Requant to q4_K and check every tensor's type and bytes. */
static void check_requant(const char *arch, const spec *t, int n, const char *tag)
{
    const char *dir = tu_tmpdir(tag);
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_model(in, arch, t, n);

    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q4_K";
    o.pure = true;   /* q4_K everywhere (the name alone is llama-quantize's Q4_K_M) */
    o.nthreads = 2;
    ggufq_error err;
    int rc = ggufq_requant(in, out, &o, NULL, NULL, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "%s: %s\n", tag, err.message);
    assert_int_equal(rc, GGUFQ_OK);

    ggufq_file *fi = NULL, *fo = NULL;
    assert_int_equal(ggufq_open(in, NULL, &fi, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_open(out, NULL, &fo, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_tensor_count(fo), n);
    for (int i = 0; i < n; i++) {
        ggufq_tensor_info a, b;
        assert_int_equal(ggufq_tensor_at(fi, ggufq_find_tensor(fi, t[i].name), &a), GGUFQ_OK);
        int64_t j = ggufq_find_tensor(fo, t[i].name);
        assert_true(j >= 0);
        assert_int_equal(ggufq_tensor_at(fo, j, &b), GGUFQ_OK);
        if (b.type != t[i].want)
            fprintf(stderr, "%s: %s is %s, expected %s\n", tag, t[i].name,
                    ggufq_type_name(b.type), ggufq_type_name(t[i].want));
        assert_int_equal(b.type, t[i].want);
        if (b.type == a.type) {           /* kept: copied byte for byte */
            assert_int_equal(a.size, b.size);
            assert_memory_equal(a.data, b.data, a.size);
            continue;
        }
        /* quantized: exactly ggufq_quantize of the decoded input, row by row */
        const int64_t cnt = a.n_elements, rows = cnt / a.dims[0];
        float *x = malloc((size_t)cnt * sizeof *x);
        void *want = malloc(b.size);
        assert_int_equal(ggufq_dequantize(a.type, a.data, x, cnt), GGUFQ_OK);
        assert_int_equal(ggufq_quantize(b.type, x, want, rows, a.dims[0], NULL), GGUFQ_OK);
        assert_memory_equal(want, b.data, b.size);
        free(x);
        free(want);
    }
    ggufq_value v;
    uint64_t qv = 0;
    assert_int_equal(ggufq_get(fo, "general.quantization_version", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_uint(&v, &qv), GGUFQ_OK);
    assert_int_equal(qv, 2);
    ggufq_close(fi);
    ggufq_close(fo);
}

/* A CLIP vision projector, as llama.cpp's mmproj files hold (llama.cpp's
 * quantizer refuses the architecture). */
static void test_clip_projector(void **state)
{
    (void)state;
    const spec t[] = {
        { "v.patch_embd.weight", 4, { 14, 14, 3, 256 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_F16 },
        { "v.position_embd.weight", 2, { 256, 64 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_F16 },
        { "v.blk.0.attn_q.weight", 2, { 256, 256 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_Q4_K },
        { "v.blk.0.attn_q.bias", 1, { 256 }, GGUFQ_TYPE_F32, GGUFQ_TYPE_F32 },
        { "v.blk.0.ln1.weight", 1, { 256 }, GGUFQ_TYPE_F32, GGUFQ_TYPE_F32 },
        { "v.blk.0.ffn_up.weight", 2, { 256, 512 }, GGUFQ_TYPE_F32, GGUFQ_TYPE_Q4_K },
        { "mm.0.weight", 2, { 256, 128 }, GGUFQ_TYPE_BF16, GGUFQ_TYPE_Q4_K },
    };
    check_requant("clip", t, (int)(sizeof t / sizeof t[0]), "anyarch-clip");
}

/* A diffusion model written without any architecture key. */
static void test_no_architecture(void **state)
{
    (void)state;
    const spec t[] = {
        { "model.diffusion_model.input_blocks.0.0.weight", 2, { 512, 64 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_Q4_K },
        { "model.diffusion_model.input_blocks.0.0.bias", 1, { 64 }, GGUFQ_TYPE_F32, GGUFQ_TYPE_F32 },
        { "model.diffusion_model.out.norm.weight", 1, { 512 }, GGUFQ_TYPE_F32, GGUFQ_TYPE_F32 },
        { "model.diffusion_model.small.weight", 2, { 48, 16 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_F16 },
        { "model.diffusion_model.proj.weight", 3, { 256, 8, 4 }, GGUFQ_TYPE_F16, GGUFQ_TYPE_Q4_K },
    };
    check_requant(NULL, t, (int)(sizeof t / sizeof t[0]), "anyarch-none");
}

/* A tensor name longer than ggml's 63 bytes: readable (ggufq info shows such
 * files), but no output is written, since ggml could not load it. */
static void test_name_too_long_for_ggml(void **state)
{
    (void)state;
    const char *dir = tu_tmpdir("requant_long_name");
    char in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    char name[80];
    memset(name, 'n', 64);
    memcpy(name + 57, ".weight", 8);   /* 64 bytes */
    gb_buf b = { 0 };
    gb_header(&b, 3, 1, 1);
    gb_kv_str(&b, "general.architecture", "clip");
    const int64_t dims[2] = { 32, 2 };
    gb_tensor(&b, name, 2, dims, GGUFQ_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 256);
    FILE *fp = fopen(in, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b.p, 1, b.len, fp), b.len);
    assert_int_equal(fclose(fp), 0);
    gb_free(&b);

    ggufq_file *f = NULL;
    assert_int_equal(ggufq_open(in, NULL, &f, NULL), GGUFQ_OK);
    assert_int_equal(ggufq_find_tensor(f, name), 0);
    ggufq_close(f);

    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q8_0";
    ggufq_error err;
    assert_int_equal(ggufq_requant(in, out, &o, NULL, NULL, &err), GGUFQ_E_BAD_NAME);
    char want[4400];
    snprintf(want, sizeof want, "%s: tensor 0 '%s' has a 64-byte name; ggml and llama.cpp load names of at "
             "most 63 bytes, so no output is written", in, name);
    assert_string_equal(err.message, want);
    FILE *none = fopen(out, "rb");
    assert_null(none);
    assert_int_equal(tu_count_files(dir), 1);   /* the input only: no temporary left */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_projector),
        cmocka_unit_test(test_no_architecture),
        cmocka_unit_test(test_name_too_long_for_ggml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
