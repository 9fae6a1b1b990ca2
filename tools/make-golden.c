/*
 * make-golden — regenerate the golden vectors (tests/golden/<type>.gguf) from
 * the peer: ggml's own kernels in libggml-base.so, loaded with dlopen. The
 * files are written with ggufq's writer; their layout is described in
 * tests/golden/README.md:
 *
 *   input            F32 [512, rows]  row r drawn from distribution r % 16
 *   imatrix          F32 [512]        importance weights, all > 0
 *   quant            <type>           ggml's quantize(input)        (not for IQ2_XXS/IQ2_XS/IQ1_S)
 *   dequant          F32              ggml's dequantize(quant)      (not for Q8_1)
 *   quant_imatrix    <type>           ggml's quantize(input, imatrix) (not for Q8_1/Q8_K)
 *   dequant_imatrix  F32              ggml's dequantize(quant_imatrix)
 *   raw              <type>           random blocks, each redrawn until ggml decodes it
 *                                     to finite values (F16/BF16 keep NaN/Inf patterns)
 *   raw_dequant      F32              ggml's dequantize(raw)
 *   raw_special      <type>           random blocks whose scale fields are forced in turn
 *                                     to NaNs (payloads, signs), +-Inf, +-0, subnormals,
 *                                     the largest finite values (types with scale fields)
 *   raw_special_dequant F32           ggml's dequantize(raw_special)
 *   metadata: general.architecture, general.alignment, golden.type, golden.seed,
 *             golden.reference
 *
 * Usage: make-golden --peer DIR --out DIR [--keep DIR] [--seed N] [--rows N] [TYPE...]
 * Without TYPE, every type in pk_types[] (tests/peer_kernels.c) is written.
 * With --keep, a tensor that DIR/<type>.gguf already holds (same name, type
 * and size) is copied from there unchanged: new tensors can be added to the
 * golden files without touching the existing vectors.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufq.h"
#include "peer_kernels.h"
#include "tu_rng.h"

#define ROW_LENGTH   512
#define N_DISTRIBUTIONS 16
#define REFERENCE    "ggml reference kernels (libggml-base)"
#define MAX_REDRAWS  100000

/* ------------------------------------------------------------------------- */
/* The peer's kernels (tests/peer_kernels.c) and random inputs (tests/tu_rng.c) */

/*
 * ggml's quantization of nrows rows. The buffer is zeroed first: ggml leaves
 * a few bytes unwritten (Q8_K's bsums of an all-zero block), and zero is what
 * ggufq writes there.
 */
static void peer_quantize(const pk_kernels *pk, const float *src, void *dst, int64_t nrows,
                          const float *imatrix)
{
    memset(dst, 0, (size_t)nrows * ggufq_row_size(pk->info->type, ROW_LENGTH));
    pk_quantize(pk, src, dst, nrows, ROW_LENGTH, imatrix);
}

/* The 16 row distributions of the README, in its order. */
static void fill_row(tu_rng *r, int dist, float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        const float u = tu_rand_uniform(r);
        float v;
        switch (dist) {
        case 0:  v = g; break;                                   /* Gaussian sigma 1 */
        case 1:  v = 0.02f * g; break;                           /* Gaussian sigma 0.02 */
        case 2:  v = 2.0f * u - 1.0f; break;                     /* uniform (-1, 1) */
        case 3:  v = (u < 0.5f ? 1.0f : -1.0f) * -logf(1.0f - tu_rand_uniform(r)); break; /* Laplace */
        case 4:  v = (tu_rand_u64(r) % 64 == 0) ? 50.0f * g : g; break; /* outliers x50 */
        case 5:  v = 0.0f; break;                                /* all zeros */
        case 6:  v = 0.5f; break;                                /* constant 0.5 */
        case 7:  v = 1e-6f * g; break;                           /* sigma 1e-6 */
        case 8:  v = 1e3f * g; break;                            /* sigma 1e3 */
        case 9:  v = fabsf(g); break;                            /* positive only */
        case 10: v = -fabsf(0.1f * g) - 1e-5f * u; break;        /* negative only */
        case 11: v = (i & 1) ? 1.0f : -1.0f; break;              /* alternating +-1 */
        case 12: v = (u < 0.9f) ? 0.0f : g; break;               /* 90 % zeros */
        case 13: v = (float)(i - n / 2) / (float)n; break;       /* a ramp */
        case 14: v = roundf(16.0f * g) / 16.0f; break;           /* multiples of 1/16 */
        default: v = g; break;                                   /* 15: zero blocks, below */
        }
        x[i] = v;
    }
    if (dist == 15) {
        /* Zero blocks inside a Gaussian row: random 32-weight blocks, plus a
         * whole 256-weight super-block when the row has two of them. */
        for (int64_t s = 0; s + 32 <= n; s += 32)
            if (tu_rand_u64(r) % 3 == 0 || (n >= 512 && s >= 256 && s < 512))
                memset(x + s, 0, 32 * sizeof *x);
    }
}

/* Importance weights, one per column, all > 0 (mean squared activations). */
static void fill_imatrix(tu_rng *r, float *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float u = tu_rand_uniform(r);
        w[i] = 10.0f * u * u + 1e-3f;
    }
}

/* ------------------------------------------------------------------------- */
/* One file                                                                   */

typedef struct golden_data {
    int64_t  rows;
    float   *input, *imatrix;
    uint8_t *quant, *quant_imatrix, *raw, *raw_special;
    float   *dequant, *dequant_imatrix, *raw_dequant, *raw_special_dequant;
} golden_data;

static void free_data(golden_data *d)
{
    free(d->quant); free(d->quant_imatrix); free(d->raw); free(d->raw_special);
    free(d->dequant); free(d->dequant_imatrix); free(d->raw_dequant); free(d->raw_special_dequant);
}

/*
 * Random blocks with their scale fields forced to special values
 * (pk_force_scales): block b's field f gets choice b * (2f + 1) + f, so the
 * first field takes every value in turn and the others other combinations.
 */
static void draw_special(const pk_type *t, tu_rng *r, uint8_t *raw, int64_t n_blocks)
{
    const size_t bb = ggufq_type_block_bytes(t->type);
    for (int64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = raw + (size_t)b * bb;
        for (size_t i = 0; i < bb; i++)
            blk[i] = (uint8_t)tu_rand_u64(r);
        uint64_t pick = 0;
        for (unsigned f = 0; f < PK_MAX_SCALES; f++)
            pick |= (((uint64_t)b * (2 * f + 1) + f) & 0xFF) << 8 * f;
        pk_force_scales(t, pick, blk);
    }
}

/* Random blocks; quantized ones redrawn until ggml decodes them to finite values. */
static bool draw_raw(const pk_kernels *pk, tu_rng *r, uint8_t *raw, int64_t n_blocks)
{
    const ggufq_type type = pk->info->type;
    const size_t bb = ggufq_type_block_bytes(type);
    const int64_t bs = ggufq_type_block_size(type);
    float tmp[256];
    for (int64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = raw + (size_t)b * bb;
        for (int tries = 0;; tries++) {
            for (size_t i = 0; i < bb; i++)
                blk[i] = (uint8_t)tu_rand_u64(r);
            if (pk->info->flags & PK_PLAIN)
                break;
            pk->dequant(blk, tmp, bs);
            bool finite = true;
            for (int64_t i = 0; i < bs && finite; i++)
                finite = isfinite(tmp[i]);
            if (finite)
                break;
            if (tries == MAX_REDRAWS) {
                fprintf(stderr, "make-golden: %s: no finite block in %d draws\n",
                        ggufq_type_name(type), MAX_REDRAWS);
                return false;
            }
        }
    }
    return true;
}

static void *alloc_or_die(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "make-golden: out of memory\n");
        exit(1);
    }
    return p;
}

/* Run ggml on the shared input: fill every tensor the type's file holds. */
static bool compute(const pk_kernels *pk, uint64_t seed, golden_data *d)
{
    const pk_type *gt = pk->info;
    const int64_t n = d->rows * ROW_LENGTH;
    const size_t qbytes = (size_t)d->rows * ggufq_row_size(gt->type, ROW_LENGTH);
    const bool has_dequant = !(gt->flags & PK_NO_DEQUANT);
    if (!(gt->flags & PK_NEEDS_IMATRIX)) {
        d->quant = alloc_or_die(qbytes);
        peer_quantize(pk, d->input, d->quant, d->rows, NULL);
        if (has_dequant) {
            d->dequant = alloc_or_die((size_t)n * sizeof(float));
            pk->dequant(d->quant, d->dequant, n);
        }
    }
    if (!(gt->flags & PK_NO_IMATRIX)) {
        d->quant_imatrix = alloc_or_die(qbytes);
        peer_quantize(pk, d->input, d->quant_imatrix, d->rows, d->imatrix);
        d->dequant_imatrix = alloc_or_die((size_t)n * sizeof(float));
        pk->dequant(d->quant_imatrix, d->dequant_imatrix, n);
    }
    if (has_dequant) {
        /* Each type draws its own raw blocks, reproducibly from the seed. */
        tu_rng r = { seed * 0x100000001B3ull + (uint64_t)gt->type };
        d->raw = alloc_or_die(qbytes);
        if (!draw_raw(pk, &r, d->raw, n / ggufq_type_block_size(gt->type)))
            return false;
        d->raw_dequant = alloc_or_die((size_t)n * sizeof(float));
        pk->dequant(d->raw, d->raw_dequant, n);
    }
    if (has_dequant && pk_n_scales(gt) > 0) {
        /* a stream of its own: the tensors above stay as they were */
        tu_rng r = { seed * 0x100000001B3ull + (uint64_t)gt->type + 0x5BEC1A15ull };
        d->raw_special = alloc_or_die(qbytes);
        draw_special(gt, &r, d->raw_special, n / ggufq_type_block_size(gt->type));
        d->raw_special_dequant = alloc_or_die((size_t)n * sizeof(float));
        pk->dequant(d->raw_special, d->raw_special_dequant, n);
    }
    return true;
}

typedef struct out_tensor {
    const char *name;
    ggufq_type  type;
    uint32_t    n_dims;
    const void *data;
    size_t      size;
} out_tensor;

/* The data of tensor `name` in `keep` if it has that type and size, else `data`. */
static const void *kept_or(const ggufq_file *keep, const char *name, ggufq_type type, size_t size,
                           const void *data)
{
    ggufq_tensor_info t;
    const int64_t i = keep ? ggufq_find_tensor(keep, name) : -1;
    if (data == NULL || i < 0 || ggufq_tensor_at(keep, i, &t) != GGUFQ_OK || t.type != type ||
        t.size != size)
        return data;
    return t.data;
}

static int write_file(const char *path, const pk_type *gt, uint64_t seed, const golden_data *d,
                      const ggufq_file *keep)
{
    const size_t qbytes = (size_t)d->rows * ggufq_row_size(gt->type, ROW_LENGTH);
    const size_t fbytes = (size_t)d->rows * ROW_LENGTH * sizeof(float);
    const out_tensor all[] = {
        { "input",           GGUFQ_TYPE_F32, 2, d->input,           fbytes },
        { "imatrix",         GGUFQ_TYPE_F32, 1, d->imatrix,         ROW_LENGTH * sizeof(float) },
        { "quant",           gt->type,       2, d->quant,           qbytes },
        { "dequant",         GGUFQ_TYPE_F32, 2, d->dequant,         fbytes },
        { "quant_imatrix",   gt->type,       2, d->quant_imatrix,   qbytes },
        { "dequant_imatrix", GGUFQ_TYPE_F32, 2, d->dequant_imatrix, fbytes },
        { "raw",             gt->type,       2, d->raw,             qbytes },
        { "raw_dequant",     GGUFQ_TYPE_F32, 2, d->raw_dequant,     fbytes },
        { "raw_special",     gt->type,       2, d->raw_special,     qbytes },
        { "raw_special_dequant", GGUFQ_TYPE_F32, 2, d->raw_special_dequant, fbytes },
    };
    const size_t n_all = sizeof all / sizeof all[0];
    const void *data[sizeof all / sizeof all[0]];
    for (size_t i = 0; i < n_all; i++)
        data[i] = kept_or(keep, all[i].name, all[i].type, all[i].size, all[i].data);
    const char *tname = ggufq_type_name(gt->type);
    ggufq_writer *w = NULL;
    ggufq_error err;
    int st = ggufq_writer_create(path, NULL, &w, &err);
    if (st != GGUFQ_OK) {
        fprintf(stderr, "make-golden: %s\n", err.message);
        return st;
    }
    if (st == GGUFQ_OK) st = ggufq_writer_set_string(w, "general.architecture", "golden", 6);
    if (st == GGUFQ_OK) st = ggufq_writer_set_uint(w, "general.alignment", GGUFQ_VT_UINT32, 32);
    if (st == GGUFQ_OK) st = ggufq_writer_set_string(w, "golden.type", tname, strlen(tname));
    if (st == GGUFQ_OK) st = ggufq_writer_set_uint(w, "golden.seed", GGUFQ_VT_UINT32, seed);
    if (st == GGUFQ_OK) st = ggufq_writer_set_string(w, "golden.reference", REFERENCE,
                                                      strlen(REFERENCE));
    const int64_t dims[2] = { ROW_LENGTH, d->rows };
    for (size_t i = 0; i < n_all && st == GGUFQ_OK; i++)
        if (all[i].data)
            st = ggufq_writer_add_tensor(w, all[i].name, all[i].type, all[i].n_dims, dims);
    for (size_t i = 0; i < n_all && st == GGUFQ_OK; i++)
        if (all[i].data)
            st = ggufq_writer_write(w, data[i], all[i].size);
    if (st != GGUFQ_OK) {
        fprintf(stderr, "make-golden: %s\n", ggufq_writer_error(w)->message);
        ggufq_writer_abort(w);
        return st;
    }
    st = ggufq_writer_finish(w, &err);
    if (st != GGUFQ_OK)
        fprintf(stderr, "make-golden: %s\n", err.message);
    return st;
}

static bool make_one(const pk_peer *peer, const pk_type *gt, const char *out_dir,
                     const char *keep_dir, uint64_t seed, float *input, float *imatrix,
                     int64_t rows)
{
    pk_kernels pk;
    if (!pk_kernels_of(peer, gt->type, &pk))   /* also builds ggml's IQ grids for the type */
        return false;
    golden_data d = { .rows = rows, .input = input, .imatrix = imatrix };
    bool ok = compute(&pk, seed, &d);
    ggufq_file *keep = NULL;
    char path[4200];
    if (ok && keep_dir) {
        ggufq_error err;
        snprintf(path, sizeof path, "%s/%s.gguf", keep_dir, ggufq_type_name(gt->type));
        FILE *exists = fopen(path, "rb");
        if (!exists)
            printf("make-golden: --keep: no %s, nothing kept\n", path);
        else
            fclose(exists);
        if (exists && ggufq_open(path, NULL, &keep, &err) != GGUFQ_OK) {
            fprintf(stderr, "make-golden: --keep: %s\n", err.message);
            ok = false;
        }
    }
    if (ok) {
        snprintf(path, sizeof path, "%s/%s.gguf", out_dir, ggufq_type_name(gt->type));
        ok = write_file(path, gt, seed, &d, keep) == GGUFQ_OK;
        if (ok)
            printf("make-golden: wrote %s\n", path);
    }
    ggufq_close(keep);
    free_data(&d);
    return ok;
}

/* ------------------------------------------------------------------------- */
/* Command line                                                               */

static void usage(FILE *to)
{
    fprintf(to,
        "usage: make-golden --peer DIR --out DIR [--keep DIR] [--seed N] [--rows N] [TYPE...]\n"
        "  --peer DIR  directory holding ggml's libggml-base.so (default: $GGUFQ_PEER_DIR)\n"
        "  --out DIR   where <type>.gguf files are written (must exist)\n"
        "  --keep DIR  take the tensors DIR/<type>.gguf holds (same name, type, size) from\n"
        "              there unchanged, compute only the others (no file: compute all;\n"
        "              DIR may be the --out DIR)\n"
        "  --seed N    random seed, 0..4294967295 (default 1)\n"
        "  --rows N    rows of %d weights per tensor (default 16)\n"
        "  TYPE        ggml type names (q4_0, iq2_xxs, ...); default: all of:\n ",
        ROW_LENGTH);
    for (size_t i = 0; i < pk_n_types; i++)
        fprintf(to, " %s", ggufq_type_name(pk_types[i].type));
    fprintf(to, "\n");
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return false;
    *out = v;
    return true;
}

static const pk_type *find_golden_type(const char *name)
{
    const int t = ggufq_type_from_name(name);
    return t >= 0 ? pk_type_of((ggufq_type)t) : NULL;
}

int main(int argc, char **argv)
{
    const char *peer_dir = getenv("GGUFQ_PEER_DIR"), *out_dir = NULL, *keep_dir = NULL;
    uint64_t seed = 1, rows = 16;
    const pk_type *chosen[GGUFQ_TYPE_COUNT];
    size_t n_chosen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--peer") && has_value) {
            peer_dir = argv[++i];
        } else if (!strcmp(a, "--out") && has_value) {
            out_dir = argv[++i];
        } else if (!strcmp(a, "--keep") && has_value) {
            keep_dir = argv[++i];
        } else if (!strcmp(a, "--seed") && has_value) {
            if (!parse_u64(argv[++i], UINT32_MAX, &seed)) {
                fprintf(stderr, "make-golden: bad --seed %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--rows") && has_value) {
            if (!parse_u64(argv[++i], 1u << 16, &rows) || rows == 0) {
                fprintf(stderr, "make-golden: bad --rows %s (1..65536)\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "make-golden: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        } else {
            const pk_type *gt = find_golden_type(a);
            if (!gt) {
                fprintf(stderr, "make-golden: %s: not a type make-golden knows\n", a);
                usage(stderr);
                return 2;
            }
            bool dup = false;
            for (size_t k = 0; k < n_chosen; k++)
                dup = dup || chosen[k] == gt;
            if (!dup)
                chosen[n_chosen++] = gt;
        }
    }
    if (!peer_dir || !*peer_dir || !out_dir) {
        usage(stderr);
        return 2;
    }
    if (n_chosen == 0)
        for (size_t i = 0; i < pk_n_types; i++)
            chosen[n_chosen++] = &pk_types[i];

    pk_peer peer;
    if (!pk_open(&peer, peer_dir))
        return 1;

    /* The same input and imatrix for every type, from the seed alone. */
    const int64_t n = (int64_t)rows * ROW_LENGTH;
    float *input = alloc_or_die((size_t)n * sizeof *input);
    float imatrix[ROW_LENGTH];
    tu_rng r = { seed };
    for (int64_t row = 0; row < (int64_t)rows; row++)
        fill_row(&r, (int)(row % N_DISTRIBUTIONS), input + row * ROW_LENGTH, ROW_LENGTH);
    fill_imatrix(&r, imatrix, ROW_LENGTH);

    int failures = 0;
    for (size_t i = 0; i < n_chosen; i++) {
        if (!make_one(&peer, chosen[i], out_dir, keep_dir, seed, input, imatrix, (int64_t)rows)) {
            fprintf(stderr, "make-golden: %s: failed\n", ggufq_type_name(chosen[i]->type));
            failures++;
        }
    }
    free(input);
    pk_close(&peer);
    return failures ? 1 : 0;
}
