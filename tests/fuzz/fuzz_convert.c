/*
 * fuzz_convert.c — dequant and requant of small fuzzed files, end to end.
 *
 * Input: byte 0 is a selector, the rest a GGUF file.
 *   bits 0-4  the requant target (see targets[])
 *   bit  5    write the copy as F16 instead of F32
 *   bit  6    requantize the written copy instead of the original
 *   bit  7    writer alignment 64 instead of the file's own
 * Steps, for a file the reader accepts:
 *  1. every tensor is dequantized through the public API into an
 *     exactly-sized buffer;
 *  2. a copy is written with the writer (all metadata copied value by value,
 *     every tensor as F32/F16, or as-is if it has no dequantizer), then read
 *     back: keys, values, shapes and data must match what was written;
 *  3. ggufq_requant runs on the original (or the copy), one thread; its output,
 *     if any, must open, walk cleanly and dequantize.
 * Files live in a private directory under /dev/shm (else $TMPDIR or /tmp).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufq.h"
#include "gguf_build.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_convert: check failed: %s (line %d)\n", #cond, __LINE__); __builtin_trap(); } } while (0)

static const char *const targets[32] = {
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K",
    "q5_K", "q6_K", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "f16",
    "bf16", "f32", "iq3_s", "iq2_s", "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q3_K_L",
    "Q2_K", "Q2_K_S", "Q3_K_S", "IQ3_XXS", "IQ3_M", "IQ4_XS", "Q6_K", "IQ2_XXS",
};

static char dir[256];
static char in_path[300], copy_path[300], out_path[300];

static void remove_dir(void)
{
    unlink(in_path);
    unlink(copy_path);
    unlink(out_path);
    rmdir(dir);
}

static void init_dir(void)
{
    if (dir[0])
        return;
    const char *bases[] = { "/dev/shm", getenv("TMPDIR"), "/tmp" };
    for (size_t i = 0; i < sizeof bases / sizeof bases[0] && !dir[0]; i++) {
        if (!bases[i] || access(bases[i], W_OK) != 0)
            continue;
        snprintf(dir, sizeof dir, "%s/ggufq-fuzz-XXXXXX", bases[i]);
        if (!mkdtemp(dir))
            dir[0] = '\0';
    }
    CHECK(dir[0] != '\0');
    snprintf(in_path, sizeof in_path, "%s/in.gguf", dir);
    snprintf(copy_path, sizeof copy_path, "%s/copy.gguf", dir);
    snprintf(out_path, sizeof out_path, "%s/out.gguf", dir);
    atexit(remove_dir);
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, fp) == size);
    CHECK(fclose(fp) == 0);
}

/* Dequantize a tensor into a new exactly-sized buffer; NULL if the type has no dequantizer. */
static float *dequantize_tensor(const ggufq_tensor_info *t)
{
    float *x = malloc((size_t)t->n_elements * sizeof(float) + (t->n_elements == 0));
    CHECK(x != NULL);
    int rc = ggufq_dequantize(t->type, t->data, x, t->n_elements);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_NOT_IMPLEMENTED);
    if (rc != GGUFQ_OK) {
        free(x);
        return NULL;
    }
    return x;
}

/* The bytes to write for tensor t as `as` (F32/F16), or its own bytes; *owned if malloc'd. */
static const void *converted(const ggufq_tensor_info *t, ggufq_type as, ggufq_type *type, size_t *size,
                             int *owned)
{
    float *x = dequantize_tensor(t);
    *owned = 0;
    if (x == NULL) {
        *type = t->type;
        *size = (size_t)t->size;
        return t->data;
    }
    *type = as;
    *owned = 1;
    if (as == GGUFQ_TYPE_F32) {
        *size = (size_t)t->n_elements * sizeof(float);
        return x;
    }
    *size = ggufq_row_size(as, t->n_elements);
    void *enc = malloc(*size + (*size == 0));
    CHECK(enc != NULL);
    CHECK(ggufq_quantize(as, x, enc, 1, t->n_elements, NULL) == GGUFQ_OK);
    free(x);
    return enc;
}

/* Step 2: copy f to copy_path; returns 1 if written. */
static int write_copy(const ggufq_file *f, ggufq_type as, uint64_t alignment)
{
    ggufq_writer_options wo = { .alignment = alignment, .input = NULL };
    ggufq_writer *w = NULL;
    ggufq_error err;
    int rc = ggufq_writer_create(copy_path, &wo, &w, &err);
    CHECK(rc == GGUFQ_OK);
    int64_t nkv = ggufq_kv_count(f), nt = ggufq_tensor_count(f);
    for (int64_t i = 0; i < nkv; i++) {
        ggufq_value v;
        CHECK(ggufq_kv_value(f, i, &v) == GGUFQ_OK);
        rc = ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v);
        if (rc != GGUFQ_OK) {
            fprintf(stderr, "fuzz_convert: writer refused key '%s' the reader accepted: %s\n",
                    ggufq_kv_key(f, i), ggufq_writer_error(w)->message);
            __builtin_trap();
        }
    }
    ggufq_type types[64];
    for (int64_t i = 0; i < nt; i++) {
        ggufq_tensor_info t;
        CHECK(ggufq_tensor_at(f, i, &t) == GGUFQ_OK);
        ggufq_type type = ggufq_dequantize(t.type, NULL, NULL, 0) == GGUFQ_OK ? as : t.type;
        rc = ggufq_writer_add_tensor(w, t.name, type, t.n_dims, t.dims);
        if (rc == GGUFQ_E_BAD_NAME && strlen(t.name) > GGUFQ_MAX_NAME_LEN) {
            /* the reader accepts longer names than ggml loads; the writer does not */
            ggufq_writer_abort(w);
            return 0;
        }
        if (rc != GGUFQ_OK) {   /* F16 of a row length the source type allows: always valid */
            fprintf(stderr, "fuzz_convert: writer refused tensor '%s': %s\n", t.name,
                    ggufq_writer_error(w)->message);
            __builtin_trap();
        }
        if (i < 64)
            types[i] = type;
    }
    for (int64_t i = 0; i < nt; i++) {
        ggufq_tensor_info t;
        CHECK(ggufq_tensor_at(f, i, &t) == GGUFQ_OK);
        ggufq_type type;
        size_t size;
        int owned;
        const void *bytes = converted(&t, as, &type, &size, &owned);
        CHECK(i >= 64 || type == types[i]);
        rc = ggufq_writer_write(w, bytes, size);
        CHECK(rc == GGUFQ_OK);
        if (owned)
            free((void *)bytes);
    }
    rc = ggufq_writer_finish(w, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "fuzz_convert: finish: %s\n", err.message);
    CHECK(rc == GGUFQ_OK);
    return 1;
}

/* Step 2, continued: the copy holds exactly what f holds, converted. */
static void check_copy(const ggufq_file *f, ggufq_type as, uint64_t alignment)
{
    ggufq_file *g = NULL;
    ggufq_error err;
    int rc = ggufq_open(copy_path, NULL, &g, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "fuzz_convert: the copy does not open: %s\n", err.message);
    CHECK(rc == GGUFQ_OK);
    CHECK(gb_walk(g) == 0);
    /* the writer adds general.alignment when asked for a non-default one the file lacks */
    int added = ggufq_find_key(f, "general.alignment") < 0 && alignment != GGUFQ_DEFAULT_ALIGNMENT;
    CHECK(ggufq_kv_count(g) == ggufq_kv_count(f) + added);
    if (added) {
        ggufq_value v;
        uint64_t a = 0;
        CHECK(ggufq_kv_value(g, ggufq_kv_count(f), &v) == GGUFQ_OK);
        CHECK(strcmp(ggufq_kv_key(g, ggufq_kv_count(f)), "general.alignment") == 0);
        CHECK(v.type == GGUFQ_VT_UINT32 && ggufq_value_uint(&v, &a) == GGUFQ_OK && a == alignment);
    }
    CHECK(ggufq_file_alignment(g) == (added ? alignment : ggufq_file_alignment(f)));
    CHECK(ggufq_tensor_count(g) == ggufq_tensor_count(f));
    for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
        ggufq_value a, b;
        CHECK(strcmp(ggufq_kv_key(f, i), ggufq_kv_key(g, i)) == 0);
        CHECK(ggufq_kv_value(f, i, &a) == GGUFQ_OK && ggufq_kv_value(g, i, &b) == GGUFQ_OK);
        CHECK(a.type == b.type && a.elem_type == b.elem_type && a.count == b.count);
        CHECK(a.p_size == b.p_size && memcmp(a.p_data, b.p_data, (size_t)a.p_size) == 0);
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {
        ggufq_tensor_info s, t;
        CHECK(ggufq_tensor_at(f, i, &s) == GGUFQ_OK && ggufq_tensor_at(g, i, &t) == GGUFQ_OK);
        CHECK(strcmp(s.name, t.name) == 0 && s.n_dims == t.n_dims && s.n_elements == t.n_elements);
        CHECK(memcmp(s.dims, t.dims, sizeof s.dims) == 0);
        ggufq_type type;
        size_t size;
        int owned;
        const void *bytes = converted(&s, as, &type, &size, &owned);
        CHECK(t.type == type && t.size == size && memcmp(t.data, bytes, size) == 0);
        if (owned)
            free((void *)bytes);
    }
    ggufq_close(g);
}

/* Step 3: requant; whatever it writes must be a sound file. */
static void requant(const char *path, const char *target)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = target;
    o.nthreads = 1;
    ggufq_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = ggufq_requant(path, out_path, &o, NULL, NULL, &err);
    CHECK(rc <= 0 && rc >= GGUFQ_E_STATE);
    if (rc < 0) {
        CHECK(err.status == rc && memchr(err.message, '\0', sizeof err.message) != NULL);
        CHECK(access(out_path, F_OK) != 0);   /* nothing left behind */
        return;
    }
    ggufq_file *g = NULL;
    rc = ggufq_open(out_path, NULL, &g, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "fuzz_convert: requant output does not open: %s\n", err.message);
    CHECK(rc == GGUFQ_OK);
    CHECK(gb_walk(g) == 0);
    for (int64_t i = 0; i < ggufq_tensor_count(g); i++) {
        ggufq_tensor_info t;
        CHECK(ggufq_tensor_at(g, i, &t) == GGUFQ_OK);
        free(dequantize_tensor(&t));
    }
    ggufq_close(g);
    unlink(out_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    init_dir();
    uint8_t sel = data[0];
    data++;
    size--;
    ggufq_file *f = NULL;
    if (ggufq_open_memory(data, size, "fuzz.gguf", NULL, &f, NULL) != GGUFQ_OK)
        return 0;
    if (ggufq_tensor_count(f) > 64) {   /* small files only: keep each run fast */
        ggufq_close(f);
        return 0;
    }
    for (int64_t i = 0; i < ggufq_tensor_count(f); i++) {   /* step 1 */
        ggufq_tensor_info t;
        CHECK(ggufq_tensor_at(f, i, &t) == GGUFQ_OK);
        free(dequantize_tensor(&t));
    }
    ggufq_type as = (sel & 32) ? GGUFQ_TYPE_F16 : GGUFQ_TYPE_F32;
    uint64_t alignment = (sel & 128) ? 64 : ggufq_file_alignment(f);
    int copied = write_copy(f, as, alignment);
    if (copied)
        check_copy(f, as, alignment);
    ggufq_close(f);

    const char *target = targets[sel & 31];
    if ((sel & 64) && copied) {
        requant(copy_path, target);
    } else {
        write_file(in_path, data, size);
        requant(in_path, target);
    }
    unlink(copy_path);
    unlink(in_path);
    return 0;
}
