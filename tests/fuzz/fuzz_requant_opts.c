/*
 * fuzz_requant_opts.c — requant with fuzzed side inputs: importance matrices
 * (GGUF or legacy .dat), --override-kv strings, --tensor-type rules,
 * --include/--exclude-weights and split models.
 *
 * Input: byte 0 is a selector, the rest segments separated by SEP:
 *   0 the model (shard 1 of 2 when bit 5 is set), 1 the imatrix file (none
 *   when empty), 2 kv overrides (one per line), 3 tensor-type rules (one per
 *   line, each cut to 40 bytes: regex time is not what is fuzzed here),
 *   4 shard 2 of a split model, 5 include-weights lines, 6 exclude-weights.
 * Selector: bits 0-4 the target, bit 5 split model, bit 6 keep_split,
 * bit 7 imatrix named .dat instead of .gguf.
 * Checks: a status in range with a terminated message naming something; on
 * failure nothing but the inputs is left in the directory; on success every
 * output opens, walks cleanly and dequantizes.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufq.h"
#include "gguf_build.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_requant_opts: check failed: %s (line %d)\n", #cond, __LINE__); __builtin_trap(); } } while (0)

#define SEP      "\n#~#\n"
#define SEP_LEN  5
#define N_SEGS   7
#define MAX_LINES 8
#define MAX_RULE  40

static const char *const targets[32] = {
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K",
    "q5_K", "q6_K", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "iq2_xxs", "iq2_xs",
    "iq2_s", "iq3_xxs", "iq1_s", "iq1_m", "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q3_K_L",
    "Q2_K", "Q2_K_S", "IQ2_XXS", "IQ3_XXS", "IQ1_M", "IQ4_XS", "Q6_K", "IQ2_M",
};

static char dir[256];

static void remove_dir(void)
{
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
        snprintf(dir, sizeof dir, "%s/ggufq-fuzzrq-XXXXXX", bases[i]);
        if (!mkdtemp(dir))
            dir[0] = '\0';
    }
    CHECK(dir[0] != '\0');
    atexit(remove_dir);
}

/* Remove every file of dir; returns how many there were. */
static int clear_dir(void)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    char path[600];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
        n++;
    }
    closedir(d);
    return n;
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    CHECK(size == 0 || fwrite(data, 1, size, fp) == size);
    CHECK(fclose(fp) == 0);
}

typedef struct { const uint8_t *p; size_t n; } seg;

/* Up to MAX_LINES NUL-terminated lines of s (each cut to max bytes), into store. */
static size_t split_lines(seg s, size_t max, char store[MAX_LINES][128], const char *ptrs[MAX_LINES])
{
    size_t n = 0, i = 0;
    while (i < s.n && n < MAX_LINES) {
        size_t j = i;
        while (j < s.n && s.p[j] != '\n')
            j++;
        size_t len = j - i < max ? j - i : max;
        if (len > 127)
            len = 127;
        memcpy(store[n], s.p + i, len);
        store[n][len] = '\0';
        ptrs[n] = store[n];
        n++;
        i = j + 1;
    }
    return n;
}

static void check_output(const char *path)
{
    ggufq_file *g = NULL;
    ggufq_error err;
    int rc = ggufq_open(path, NULL, &g, &err);
    if (rc != GGUFQ_OK)
        fprintf(stderr, "fuzz_requant_opts: output does not open: %s\n", err.message);
    CHECK(rc == GGUFQ_OK);
    CHECK(gb_walk(g) == 0);
    for (int64_t i = 0; i < ggufq_tensor_count(g); i++) {
        ggufq_tensor_info t;
        CHECK(ggufq_tensor_at(g, i, &t) == GGUFQ_OK);
        float *x = malloc((size_t)t.n_elements * sizeof(float) + 1);
        CHECK(x != NULL);
        rc = ggufq_dequantize(t.type, t.data, x, t.n_elements);
        CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_NOT_IMPLEMENTED);
        free(x);
    }
    ggufq_close(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    init_dir();
    const uint8_t sel = data[0];
    seg s[N_SEGS] = { { 0 } };
    size_t k = 0, start = 1;
    for (size_t i = 1; k + 1 < N_SEGS && i + SEP_LEN <= size; i++)
        if (memcmp(data + i, SEP, SEP_LEN) == 0) {
            s[k++] = (seg){ data + start, i - start };
            start = i + SEP_LEN;
            i += SEP_LEN - 1;
        }
    s[k] = (seg){ data + start, size - start };

    const bool split = sel & 32;
    char model[300], shard2[300], imatrix[300], out[300];
    snprintf(model, sizeof model, "%s/m%s", dir, split ? "-00001-of-00002.gguf" : ".gguf");
    snprintf(shard2, sizeof shard2, "%s/m-00002-of-00002.gguf", dir);
    snprintf(imatrix, sizeof imatrix, "%s/imatrix.%s", dir, (sel & 128) ? "dat" : "gguf");
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    write_file(model, s[0].p, s[0].n);
    int inputs = 1;
    if (split) {
        write_file(shard2, s[4].p, s[4].n);
        inputs++;
    }
    if (s[1].n) {
        write_file(imatrix, s[1].p, s[1].n);
        inputs++;
    }

    char kv_store[MAX_LINES][128], tt_store[MAX_LINES][128], in_store[MAX_LINES][128], ex_store[MAX_LINES][128];
    const char *kv[MAX_LINES], *tt[MAX_LINES], *inc[MAX_LINES], *exc[MAX_LINES];
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = targets[sel & 31];
    o.nthreads = 1;
    o.imatrix_path = s[1].n ? imatrix : NULL;
    o.n_kv_overrides = split_lines(s[2], 127, kv_store, kv);
    o.kv_overrides = kv;
    o.n_tensor_types = split_lines(s[3], MAX_RULE, tt_store, tt);
    o.tensor_types = tt;
    o.n_include_weights = split_lines(s[5], 127, in_store, inc);
    o.include_weights = inc;
    o.n_exclude_weights = split_lines(s[6], 127, ex_store, exc);
    o.exclude_weights = exc;
    o.keep_split = sel & 64;

    ggufq_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = ggufq_requant(model, out, &o, NULL, NULL, &err);
    if (getenv("GGUFQ_FUZZ_VERBOSE"))   /* to see what a seed reaches */
        fprintf(stderr, "  %s: %s\n", o.target, rc < 0 ? err.message : "ok");
    CHECK(rc <= 0 && rc >= GGUFQ_E_STATE);
    if (rc < 0) {
        CHECK(err.status == rc && memchr(err.message, '\0', sizeof err.message) != NULL);
        CHECK(err.message[0] != '\0');
        CHECK(clear_dir() == inputs);   /* nothing left behind */
        return 0;
    }
    /* every output (one file, or one per shard with keep_split) */
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int outputs = 0;
    char p[600];
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "out", 3) == 0) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            check_output(p);
            outputs++;
        }
    closedir(d);
    CHECK(outputs >= 1);
    clear_dir();
    return 0;
}
