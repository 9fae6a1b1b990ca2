/*
 * test_golden.c — every golden file (tests/golden/<type>.gguf, see its README)
 * decoded and re-encoded with the public API must give ggml's bytes exactly.
 *
 * The directory is enumerated at run time, one cmocka test per file, so new
 * golden files are picked up without touching this program. GGUFQ_GOLDEN_DIR
 * overrides the directory (tools/make-golden output can be checked that way).
 *
 * Checks, each skipped when its tensors are absent from the file:
 *   dequant          dequantize(quant)           == dequant
 *   dequant_imatrix  dequantize(quant_imatrix)   == dequant_imatrix
 *   raw              dequantize(raw)             == raw_dequant
 *   raw_special      dequantize(raw_special)     == raw_special_dequant (NaN/Inf/... scales)
 *   quant            quantize(input)             == quant
 *   quant_imatrix    quantize(input, imatrix)    == quant_imatrix
 * Bytes compare with memcmp; floats by bit pattern, NaN payloads and signs included
 * (off x86, a NaN made by Inf * 0 or Inf - Inf may be the CPU's own default NaN:
 * see is_default_nan_of_this_cpu).
 */
#include "testutil.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GOLDEN_FILES 256

static char golden_dir[4096];
static char *golden_paths[MAX_GOLDEN_FILES];
static char *golden_test_names[MAX_GOLDEN_FILES];
static size_t n_golden;

/* ------------------------------------------------------------------------- */
/* One file                                                                   */

typedef struct golden_ctx {
    ggufq_file *f;
    const char *file;      /* base name, for messages */
    ggufq_type  type;
    int         checks_run;
    int         checks_failed;
} golden_ctx;

static void check_failed(golden_ctx *g, const char *check, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->checks_failed++;
    print_error("FAIL %s [%s] %s: %s\n", g->file, ggufq_type_name(g->type), check, msg);
}

/* Look up a tensor; false (quietly) if absent. */
static bool find(golden_ctx *g, const char *name, ggufq_tensor_info *out)
{
    const int64_t i = ggufq_find_tensor(g->f, name);
    if (i < 0)
        return false;
    return ggufq_tensor_at(g->f, i, out) == GGUFQ_OK;
}

/* The tensor must be of `type` with `n` elements in rows of `n_per_row`. */
static bool has_shape(golden_ctx *g, const char *check, const ggufq_tensor_info *t,
                      ggufq_type type, int64_t n, int64_t n_per_row)
{
    if (t->type != type || t->n_elements != n || t->dims[0] != n_per_row) {
        check_failed(g, check, "tensor %s is %s with %" PRId64 " elements (row %" PRId64
                     "), expected %s with %" PRId64 " (row %" PRId64 ")", t->name,
                     ggufq_type_name(t->type) ? ggufq_type_name(t->type) : "?", t->n_elements,
                     t->dims[0], ggufq_type_name(type), n, n_per_row);
        return false;
    }
    return true;
}

static bool same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/*
 * A NaN that an invalid operation (Inf * 0, Inf - Inf) makes from non-NaN
 * operands is the CPU's default NaN: 0xFFC00000 on x86, where ggml made the
 * golden files, 0x7FC00000 on AArch64 (ggml built for AArch64 gives that one
 * too). Off x86 that single difference passes, and only in blocks with an Inf
 * scale, the only ones where a dequantizer can make a NaN of its own.
 */
#if defined(__x86_64__) || defined(__i386__)
#define DEFAULT_NAN_DIFFERS 0
#else
#define DEFAULT_NAN_DIFFERS 1
#endif

/*
 * qemu's x86 emulation (scripts/test-x86-fallbacks sets GGUFQ_TEST_QEMU_X86)
 * picks the result of an SSE operation with two NaN operands by the x87 rule
 * (the larger significand), where x86 CPUs return the first operand: with a
 * NaN d and a NaN dmin, the emulated d*x - dmin*m keeps dmin's NaN where the
 * CPU (and ggml) keep d's. Under qemu only, a NaN where ggml has another NaN
 * passes (and is counted).
 */
static bool qemu_x86_nan_pick(uint32_t got, uint32_t want)
{
    static int under_qemu = -1;
    if (under_qemu < 0) {
        const char *v = getenv("GGUFQ_TEST_QEMU_X86");
        under_qemu = v != NULL && *v != '\0';
    }
    const uint32_t exp = 0x7F800000u, man = 0x007FFFFFu;
    return under_qemu && (got & exp) == exp && (got & man) != 0 && (want & exp) == exp && (want & man) != 0;
}

static bool is_default_nan_of_this_cpu(const golden_ctx *g, const uint8_t *coded, int64_t i,
                                       uint32_t got, uint32_t want)
{
    if (qemu_x86_nan_pick(got, want))
        return true;
    if (!DEFAULT_NAN_DIFFERS || want != 0xFFC00000u || got != 0x7FC00000u)
        return false;
    const pk_type *t = pk_type_of(g->type);
    const int64_t block = i / ggufq_type_block_size(g->type);
    return t && pk_block_has_inf_scale(t, coded + block * (int64_t)ggufq_type_block_bytes(g->type));
}

/* dequantize(`coded`) must equal the F32 tensor `expected`. */
static void check_dequantize(golden_ctx *g, const char *check, const char *coded,
                             const char *expected)
{
    ggufq_tensor_info q, d;
    if (!find(g, coded, &q) || !find(g, expected, &d))
        return;
    g->checks_run++;
    if (!has_shape(g, check, &q, g->type, q.n_elements, q.dims[0]) ||
        !has_shape(g, check, &d, GGUFQ_TYPE_F32, q.n_elements, q.dims[0]))
        return;
    const int64_t n = q.n_elements;
    float *out = malloc((size_t)n * sizeof *out);
    assert_non_null(out);
    memset(out, 0xA5, (size_t)n * sizeof *out); /* poison: unwritten output shows */
    const int st = ggufq_dequantize(g->type, q.data, out, n);
    if (st != GGUFQ_OK) {
        check_failed(g, check, "ggufq_dequantize returned %d (%s)", st, ggufq_strerror(st));
    } else {
        const float *ref = d.data;
        int64_t default_nans = 0;
        for (int64_t i = 0; i < n; i++) {
            float r;
            memcpy(&r, &ref[i], sizeof r);
            if (!same_float(out[i], r)) {
                uint32_t uo, ur;
                memcpy(&uo, &out[i], 4);
                memcpy(&ur, &r, 4);
                if (is_default_nan_of_this_cpu(g, q.data, i, uo, ur)) {
                    default_nans++;
                    continue;
                }
                const int64_t bs = ggufq_type_block_size(g->type);
                check_failed(g, check, "first differing float %" PRId64 " (row %" PRId64
                             ", block %" PRId64 ", weight %" PRId64 "): ggufq %.9g (0x%08x), "
                             "ggml %.9g (0x%08x)", i, i / q.dims[0], (i % q.dims[0]) / bs,
                             i % bs, out[i], uo, r, ur);
                break;
            }
        }
        if (default_nans)
            print_message("%s [%s] %s: %" PRId64 " NaNs differ from ggml's as this CPU makes "
                          "them (default NaN off x86, two-NaN pick under qemu)\n", g->file,
                          ggufq_type_name(g->type), check, default_nans);
    }
    free(out);
}

/* quantize(input[, imatrix]) must equal the tensor `expected`. */
static void check_quantize(golden_ctx *g, const char *check, const char *expected,
                           bool with_imatrix)
{
    ggufq_tensor_info in, im, q;
    if (!find(g, expected, &q))
        return;
    g->checks_run++;
    if (!find(g, "input", &in)) {
        check_failed(g, check, "tensor input is missing");
        return;
    }
    if (with_imatrix && !find(g, "imatrix", &im)) {
        check_failed(g, check, "tensor imatrix is missing");
        return;
    }
    const int64_t n_per_row = in.dims[0];
    const int64_t nrows = n_per_row > 0 ? in.n_elements / n_per_row : 0;
    if (!has_shape(g, check, &in, GGUFQ_TYPE_F32, in.n_elements, n_per_row) ||
        !has_shape(g, check, &q, g->type, in.n_elements, n_per_row) ||
        (with_imatrix && !has_shape(g, check, &im, GGUFQ_TYPE_F32, n_per_row, n_per_row)))
        return;
    const size_t row_bytes = ggufq_row_size(g->type, n_per_row);
    const size_t size = (size_t)nrows * row_bytes;
    if (size != q.size) {
        check_failed(g, check, "tensor %s holds %" PRIu64 " bytes, expected %zu",
                     expected, q.size, size);
        return;
    }
    uint8_t *out = malloc(size ? size : 1);
    assert_non_null(out);
    memset(out, 0xA5, size);
    const int st = ggufq_quantize(g->type, in.data, out, nrows, n_per_row,
                                  with_imatrix ? im.data : NULL);
    if (st != GGUFQ_OK) {
        check_failed(g, check, "ggufq_quantize returned %d (%s)", st, ggufq_strerror(st));
    } else {
        const uint8_t *ref = q.data;
        for (size_t i = 0; i < size; i++) {
            if (out[i] != ref[i]) {
                const size_t bb = ggufq_type_block_bytes(g->type);
                check_failed(g, check, "first differing byte %zu (row %zu, block %zu, byte %zu "
                             "of %zu): ggufq 0x%02x, ggml 0x%02x", i, i / row_bytes,
                             (i % row_bytes) / bb, (i % row_bytes) % bb, bb, out[i], ref[i]);
                break;
            }
        }
    }
    free(out);
}

/* The file's type from golden.type; false (with a failure) if unusable. */
static bool read_golden_type(golden_ctx *g)
{
    ggufq_value v;
    ggufq_str s;
    int st = ggufq_get(g->f, "golden.type", &v);
    if (st == GGUFQ_OK)
        st = ggufq_value_str(&v, &s);
    if (st != GGUFQ_OK) {
        print_error("FAIL %s: metadata golden.type: %s\n", g->file, ggufq_strerror(st));
        return false;
    }
    char name[32];
    if (s.len == 0 || s.len >= sizeof name) {
        print_error("FAIL %s: golden.type has a bad length (%" PRIu64 ")\n", g->file, s.len);
        return false;
    }
    memcpy(name, s.ptr, s.len);
    name[s.len] = '\0';
    const int t = ggufq_type_from_name(name);
    if (t < 0) {
        print_error("FAIL %s: golden.type \"%s\" is not a ggml type\n", g->file, name);
        return false;
    }
    g->type = (ggufq_type)t;
    return true;
}

static void test_golden_file(void **state)
{
    const char *path = *state;
    const char *slash = strrchr(path, '/');
    golden_ctx g = { .file = slash ? slash + 1 : path };
    ggufq_error err;
    const int st = ggufq_open(path, NULL, &g.f, &err);
    if (st != GGUFQ_OK)
        fail_msg("cannot open %s: %s", path, err.message);
    if (!read_golden_type(&g)) {
        ggufq_close(g.f);
        fail();
    }
    check_dequantize(&g, "dequant", "quant", "dequant");
    check_dequantize(&g, "dequant_imatrix", "quant_imatrix", "dequant_imatrix");
    check_dequantize(&g, "raw", "raw", "raw_dequant");
    check_dequantize(&g, "raw_special", "raw_special", "raw_special_dequant");
    check_quantize(&g, "quant", "quant", false);
    check_quantize(&g, "quant_imatrix", "quant_imatrix", true);
    ggufq_close(g.f);
    print_message("%-14s %-8s %d of %d checks pass\n", g.file, ggufq_type_name(g.type),
                  g.checks_run - g.checks_failed, g.checks_run);
    if (g.checks_run == 0)
        fail_msg("%s: no checks: the file has none of the golden tensors", g.file);
    if (g.checks_failed > 0)
        fail_msg("%s: %d of %d checks fail", g.file, g.checks_failed, g.checks_run);
}

/* ------------------------------------------------------------------------- */
/* The directory                                                              */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_gguf(const char *name)
{
    const size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".gguf") == 0 && name[0] != '.';
}

/* Collect the .gguf files of the golden directory, sorted; false if the directory cannot be read. */
static bool list_golden_files(void)
{
    const char *env = getenv("GGUFQ_GOLDEN_DIR");
    snprintf(golden_dir, sizeof golden_dir, "%s", env && *env ? env : tu_path("golden"));
    DIR *d = opendir(golden_dir);
    if (!d)
        return false;
    const struct dirent *e;
    char *names[MAX_GOLDEN_FILES];
    size_t n = 0;
    bool ok = true;
    while ((e = readdir(d)) != NULL && n < MAX_GOLDEN_FILES)
        if (is_gguf(e->d_name) && (names[n] = strdup(e->d_name)) != NULL)
            n++;
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    for (size_t i = 0; i < n; i++) {
        const size_t len = strlen(golden_dir) + strlen(names[i]) + 2;
        golden_paths[i] = malloc(len);
        golden_test_names[i] = malloc(strlen(names[i]) + 8);
        if (!golden_paths[i] || !golden_test_names[i]) {
            ok = false;
            break;
        }
        snprintf(golden_paths[i], len, "%s/%s", golden_dir, names[i]);
        snprintf(golden_test_names[i], strlen(names[i]) + 8, "golden_%.*s",
                 (int)(strlen(names[i]) - 5), names[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    n_golden = ok ? n : 0;
    return ok;
}

static void test_golden_dir_not_empty(void **state)
{
    (void)state;
    if (n_golden == 0)
        fail_msg("no *.gguf files in %s", golden_dir);
    print_message("%zu golden files in %s\n", n_golden, golden_dir);
}

int main(void)
{
    if (!list_golden_files()) {
        fprintf(stderr, "test_golden: cannot read the golden directory %s\n", golden_dir);
        return 1;
    }
    struct CMUnitTest tests[MAX_GOLDEN_FILES + 1];
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_golden_dir_not_empty);
    for (size_t i = 0; i < n_golden; i++)
        tests[i + 1] = (struct CMUnitTest){ golden_test_names[i], test_golden_file,
                                            NULL, NULL, golden_paths[i] };
    const int failed = _cmocka_run_group_tests("golden", tests, n_golden + 1, NULL, NULL);
    for (size_t i = 0; i < n_golden; i++) {
        free(golden_paths[i]);
        free(golden_test_names[i]);
    }
    return failed;
}
