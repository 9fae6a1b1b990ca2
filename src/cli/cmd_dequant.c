/*
 * cmd_dequant.c — `ggufq dequant IN OUT [--to f32|f16|bf16] [--threads N]`.
 *
 * Every tensor is decoded to F32 with ggufq_dequantize and, for f16/bf16,
 * encoded again with ggufq_quantize. Tensors are streamed in chunks of whole
 * blocks, so memory use is bounded whatever the tensor's shape.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli.h"

/* Weights decoded per chunk (rounded down to whole pieces). */
#define CHUNK_WEIGHTS ((int64_t)1 << 20)
/* Weights per unit of parallel work inside a chunk (rounded down to whole blocks). */
#define PIECE_WEIGHTS ((int64_t)1 << 16)

/* llama.cpp's llama_ftype values for the targets. */
enum {
    LLAMA_FTYPE_ALL_F32     = 0,
    LLAMA_FTYPE_MOSTLY_F16  = 1,
    LLAMA_FTYPE_MOSTLY_BF16 = 32
};

typedef struct dequant_job {
    const char   *in_path;
    const char   *out_path;
    ggufq_type    target;
    int           threads;
    ggufq_file   *in;
    ggufq_writer *out;
    float        *f32_buf;   /* CHUNK_WEIGHTS decoded weights */
    void         *enc_buf;   /* the chunk encoded as the target (f16/bf16), or NULL */
} dequant_job;

static int parse_args(int argc, char **argv, dequant_job *job)
{
    const char *pos[2] = { NULL, NULL };
    int n_pos = 0;
    bool options_done = false;
    job->target = GGUFQ_TYPE_F32;
    job->threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == '\0') {
            if (n_pos == 2)
                return cli_usage_error("dequant", "too many arguments ('%s')", a);
            pos[n_pos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = true;
            continue;
        }
        if (cli_is_help_option(a)) {
            cli_help("dequant");
            return -1;
        }
        const char *val = NULL;
        const char *opt = a;
        char name[16];
        const char *eq = strchr(a, '=');
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            opt = name;
            val = eq + 1;
        }
        if (strcmp(opt, "--to") != 0 && strcmp(opt, "--threads") != 0)
            return cli_usage_error("dequant", "unknown option '%s'", a);
        if (!val) {
            if (i + 1 >= argc)
                return cli_usage_error("dequant", "option '%s' needs a value", opt);
            val = argv[++i];
        }
        if (strcmp(opt, "--to") == 0) {
            int t = ggufq_type_from_name(val);
            if (t != GGUFQ_TYPE_F32 && t != GGUFQ_TYPE_F16 && t != GGUFQ_TYPE_BF16)
                return cli_usage_error("dequant", "--to must be f32, f16 or bf16, not '%s'", val);
            job->target = (ggufq_type)t;
        } else {
            long n;
            if (!cli_parse_int(val, 1, 1024, &n))
                return cli_usage_error("dequant", "--threads must be a number from 1 to 1024, not '%s'", val);
            job->threads = (int)n;
        }
    }
    if (n_pos < 2)
        return cli_usage_error("dequant", n_pos == 0 ? "IN and OUT are required" : "OUT is required");
    job->in_path = pos[0];
    job->out_path = pos[1];
    return CLI_EXIT_OK;
}

/* Report the writer's last error (or status) for `what`. */
static void report_writer(const dequant_job *job, int rc, const char *what)
{
    const ggufq_error *err = job->out ? ggufq_writer_error(job->out) : NULL;
    if (err && err->status != GGUFQ_OK && err->message[0] != '\0')
        cli_error("%s", err->message);
    else
        cli_error("%s: %s: %s", job->out_path, what, ggufq_strerror(rc));
}

static int copy_metadata(dequant_job *job)
{
    int64_t n = ggufq_kv_count(job->in);
    for (int64_t i = 0; i < n; i++) {
        const char *key = ggufq_kv_key(job->in, i);
        ggufq_value v;
        int rc = ggufq_kv_value(job->in, i, &v);
        if (rc == GGUFQ_OK)
            rc = ggufq_writer_set_value(job->out, key, &v);
        if (rc < 0) {
            report_writer(job, rc, key);
            return rc;
        }
    }
    uint64_t ftype = job->target == GGUFQ_TYPE_F16  ? LLAMA_FTYPE_MOSTLY_F16
                   : job->target == GGUFQ_TYPE_BF16 ? LLAMA_FTYPE_MOSTLY_BF16
                   : LLAMA_FTYPE_ALL_F32;
    int rc = ggufq_writer_set_uint(job->out, "general.file_type", GGUFQ_VT_UINT32, ftype);
    if (rc < 0)
        report_writer(job, rc, "general.file_type");
    return rc;
}

static int declare_tensors(dequant_job *job)
{
    int64_t n = ggufq_tensor_count(job->in);
    for (int64_t i = 0; i < n; i++) {
        ggufq_tensor_info t;
        int rc = ggufq_tensor_at(job->in, i, &t);
        if (rc == GGUFQ_OK)
            rc = ggufq_writer_add_tensor(job->out, t.name, job->target, t.n_dims, t.dims);
        if (rc < 0) {
            report_writer(job, rc, t.name);
            return rc;
        }
    }
    return GGUFQ_OK;
}

/*
 * Decode n weights of t starting at weight `first` (a multiple of the block
 * size) into job->f32_buf and encode them for the target. Pieces of the chunk
 * run in parallel; each piece starts on a block boundary.
 */
static int convert_chunk(dequant_job *job, const ggufq_tensor_info *t, int64_t first, int64_t n,
                         int64_t piece)
{
    int64_t bs = ggufq_type_block_size(t->type);
    size_t block_bytes = ggufq_type_block_bytes(t->type);
    const uint8_t *src = (const uint8_t *)t->data + (size_t)(first / bs) * block_bytes;
    size_t out_elem = ggufq_row_size(job->target, 1);
    int64_t n_pieces = (n + piece - 1) / piece;
    int status = GGUFQ_OK;

#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(job->threads) if (job->threads > 1 && n_pieces > 1)
#endif
    for (int64_t p = 0; p < n_pieces; p++) {
        int64_t lo = p * piece;
        int64_t cnt = n - lo < piece ? n - lo : piece;
        int rc = ggufq_dequantize(t->type, src + (size_t)(lo / bs) * block_bytes, job->f32_buf + lo, cnt);
        if (rc == GGUFQ_OK && job->enc_buf)
            rc = ggufq_quantize(job->target, job->f32_buf + lo, (uint8_t *)job->enc_buf + (size_t)lo * out_elem,
                                1, cnt, NULL);
        if (rc < 0) {
#ifdef _OPENMP
#pragma omp critical(dequant_status)
#endif
            status = rc;
        }
    }
    return status;
}

static int convert_tensor(dequant_job *job, int64_t index)
{
    ggufq_tensor_info t;
    int rc = ggufq_tensor_at(job->in, index, &t);
    if (rc < 0)
        return rc;
    const char *type = ggufq_type_name(t.type);
    if (t.type == job->target) {   /* already the target: the bytes as they are */
        rc = ggufq_writer_write(job->out, t.data, (size_t)t.size);
        if (rc < 0)
            report_writer(job, rc, t.name);
        return rc;
    }
    /* Pieces and chunks of whole blocks (block sizes are at most 256 today). */
    int64_t bs = ggufq_type_block_size(t.type);
    int64_t piece = bs > 0 && bs <= PIECE_WEIGHTS ? PIECE_WEIGHTS - PIECE_WEIGHTS % bs : 0;
    if (piece == 0) {
        cli_error("%s: tensor '%s': unsupported block size", job->in_path, t.name);
        return GGUFQ_E_NOT_IMPLEMENTED;
    }
    int64_t chunk = CHUNK_WEIGHTS - CHUNK_WEIGHTS % piece;
    size_t out_elem = ggufq_row_size(job->target, 1);
    for (int64_t first = 0; first < t.n_elements; first += chunk) {
        if (cli_signal_caught) {
            cli_error("interrupted; %s not written", job->out_path);
            return GGUFQ_E_INTERRUPTED;
        }
        int64_t n = t.n_elements - first < chunk ? t.n_elements - first : chunk;
        rc = convert_chunk(job, &t, first, n, piece);
        if (rc < 0) {
            cli_error("%s: tensor '%s' (%s): %s", job->in_path, t.name, type ? type : "?",
                      ggufq_strerror(rc));
            return rc;
        }
        const void *bytes = job->enc_buf ? job->enc_buf : (const void *)job->f32_buf;
        rc = ggufq_writer_write(job->out, bytes, (size_t)n * out_elem);
        if (rc < 0) {
            report_writer(job, rc, t.name);
            return rc;
        }
    }
    return GGUFQ_OK;
}

/* Everything after opening the input: returns a status, reports its own errors. */
static int run_dequant(dequant_job *job)
{
    ggufq_writer_options opts;
    memset(&opts, 0, sizeof opts);
    opts.alignment = ggufq_file_alignment(job->in);
    opts.input = job->in;
    ggufq_error err;
    memset(&err, 0, sizeof err);
    int rc = ggufq_writer_create(job->out_path, &opts, &job->out, &err);
    if (rc < 0) {
        job->out = NULL;
        cli_report(rc, &err, job->out_path);
        return rc;
    }
    rc = copy_metadata(job);
    if (rc == GGUFQ_OK)
        rc = declare_tensors(job);
    int64_t n = ggufq_tensor_count(job->in);
    for (int64_t i = 0; i < n && rc == GGUFQ_OK; i++)
        rc = convert_tensor(job, i);
    if (rc < 0) {
        ggufq_writer_abort(job->out);
        job->out = NULL;
        return rc;
    }
    memset(&err, 0, sizeof err);
    rc = ggufq_writer_finish(job->out, &err);
    job->out = NULL;   /* freed by finish whatever the outcome */
    if (rc < 0)
        cli_report(rc, &err, job->out_path);
    return rc;
}

int cmd_dequant(int argc, char **argv)
{
    dequant_job job;
    memset(&job, 0, sizeof job);
    int st = parse_args(argc, argv, &job);
    if (st != CLI_EXIT_OK)
        return st < 0 ? CLI_EXIT_OK : st;   /* -1: help was printed */

    ggufq_error err;
    memset(&err, 0, sizeof err);
    int rc = ggufq_open(job.in_path, NULL, &job.in, &err);
    if (rc < 0) {
        cli_report(rc, &err, job.in_path);
        return CLI_EXIT_FAIL;
    }
    job.f32_buf = malloc((size_t)CHUNK_WEIGHTS * sizeof(float));
    if (job.target != GGUFQ_TYPE_F32)
        job.enc_buf = malloc(ggufq_row_size(job.target, CHUNK_WEIGHTS));
    if (!job.f32_buf || (job.target != GGUFQ_TYPE_F32 && !job.enc_buf)) {
        cli_error("out of memory");
        rc = GGUFQ_E_NOMEM;
    } else {
        (void)ggufq_active_isa();   /* pick the kernels before any thread runs */
        cli_catch_signals();
        rc = run_dequant(&job);
    }
    int64_t n_tensors = ggufq_tensor_count(job.in);
    free(job.f32_buf);
    free(job.enc_buf);
    ggufq_close(job.in);
    if (rc < 0)
        return CLI_EXIT_FAIL;
    out_printf("wrote %s: %" PRId64 " tensor%s as %s\n", job.out_path, n_tensors, n_tensors == 1 ? "" : "s",
               ggufq_type_name(job.target));
    return CLI_EXIT_OK;
}
