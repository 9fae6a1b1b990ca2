/*
 * cmd_dequant.c — `ggufq dequant IN OUT [--to f32|f16|bf16] [--threads N]
 * [--progress bar|json|none] [--quiet]`.
 *
 * Every tensor is decoded with ggufq_dequantize_to on --threads threads:
 * to F32, or to F16/BF16 exactly as decoding to F32 then encoding with
 * ggufq_quantize would. Tensors are streamed in chunks of whole blocks, so
 * memory use is bounded whatever the tensor's shape.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_progress.h"
#include "sigbus.h"

/* Weights decoded per chunk (rounded down to whole blocks); the library
 * spreads a chunk over the threads. */
#define CHUNK_WEIGHTS ((int64_t)1 << 20)

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
    void         *out_buf;   /* CHUNK_WEIGHTS weights as the target type */
    int           progress_mode;   /* --progress: PROGRESS_AUTO unless given */
    bool          quiet;
    cli_progress  progress;
    ggufq_progress done;     /* what is done so far, as the library reports a requant's progress */
} dequant_job;

static int parse_args(int argc, char **argv, dequant_job *job)
{
    const char *pos[2] = { NULL, NULL };
    int n_pos = 0;
    bool options_done = false;
    job->target = GGUFQ_TYPE_F32;
    job->threads = 0;   /* all cores (or OMP_NUM_THREADS), like requant */
    job->progress_mode = PROGRESS_AUTO;
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
        if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            job->quiet = true;
            continue;
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
        if (strcmp(opt, "--to") != 0 && strcmp(opt, "--threads") != 0 && strcmp(opt, "--progress") != 0)
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
        } else if (strcmp(opt, "--progress") == 0) {
            job->progress_mode = cli_progress_mode_named(val);
            if (job->progress_mode < 0)
                return cli_usage_error("dequant", "--progress must be bar, json or none, not '%s'", val);
        } else {
            long n;
            if (!cli_parse_int(val, 0, 1024, &n))
                return cli_usage_error("dequant", "--threads must be a number from 0 (all cores) to 1024, "
                                       "not '%s'", val);
            job->threads = (int)n;
        }
    }
    if (n_pos < 2)
        return cli_usage_error("dequant", n_pos == 0 ? "IN and OUT are required" : "OUT is required");
    job->in_path = pos[0];
    job->out_path = pos[1];
    return CLI_EXIT_OK;
}

/* True (after reporting it) if the input shrank or faulted while mapped: that is the error to show. */
static bool input_changed(const dequant_job *job)
{
    if (!cli_input_changed(job->in_path, ggufq_file_size(job->in)))
        return false;
    cli_report_input_changed(job->in_path, job->out_path);
    return true;
}

/*
 * Report the writer's last error (or status) while handling `what` (a key or
 * a tensor name, added to the message unless the writer's already names it).
 */
static void report_writer(const dequant_job *job, int rc, const char *what)
{
    if (input_changed(job))
        return;
    const ggufq_error *err = job->out ? ggufq_writer_error(job->out) : NULL;
    if (err && err->status != GGUFQ_OK && err->message[0] != '\0') {
        /* I/O errors name the output offset and what lies there; the writer buffers,
         * so the tensor being handed over is not necessarily the one that failed */
        bool io = err->status == GGUFQ_E_IO || err->status == GGUFQ_E_NO_SPACE;
        if (what && !io && !strstr(err->message, what))
            cli_error("%s (while writing '%s')", err->message, what);
        else
            cli_error("%s", err->message);
    } else {
        cli_error("%s: %s: %s", job->out_path, what, ggufq_strerror(rc));
    }
}

static uint64_t target_file_type(ggufq_type target)
{
    return target == GGUFQ_TYPE_F16 ? LLAMA_FTYPE_MOSTLY_F16
         : target == GGUFQ_TYPE_BF16 ? LLAMA_FTYPE_MOSTLY_BF16
         : LLAMA_FTYPE_ALL_F32;
}

static int copy_metadata(dequant_job *job)
{
    int64_t n = ggufq_kv_count(job->in);
    for (int64_t i = 0; i < n; i++) {
        const char *key = ggufq_kv_key(job->in, i);
        ggufq_value v;
        int rc = ggufq_kv_value(job->in, i, &v);
        if (rc == GGUFQ_OK && v.type == GGUFQ_VT_ARRAY && v.elem_type == GGUFQ_VT_ARRAY) {
            /* valid GGUF, but ggml's reader refuses nested arrays: OUT would not load */
            cli_error("%s: key '%.200s%s' is an array of arrays: valid GGUF, but ggml's GGUF reader refuses "
                      "nested arrays, so OUT would not load; %s not written", job->in_path, key,
                      strlen(key) > 200 ? "..." : "", job->out_path);
            return GGUFQ_E_NESTING;
        }
        if (rc == GGUFQ_OK)
            rc = ggufq_writer_set_value(job->out, key, &v);
        if (rc < 0) {
            report_writer(job, rc, key);
            return rc;
        }
    }
    int rc = ggufq_writer_set_uint(job->out, "general.file_type", GGUFQ_VT_UINT32, target_file_type(job->target));
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

/* The input bytes of t (`in` of them) are done, `out` bytes written for them. */
static void report_progress(dequant_job *job, const ggufq_tensor_info *t, int64_t index, uint64_t in,
                            uint64_t out)
{
    job->done.tensor_name = t->name;
    job->done.tensor_index = index;
    job->done.bytes_done += in;
    job->done.bytes_written += out;
    job->done.elapsed_seconds = cli_progress_elapsed(&job->progress);
    cli_progress_update(&job->progress, &job->done);
}

/* Decode n weights of t starting at weight `first` (a multiple of the block size) into job->out_buf. */
static int convert_chunk(dequant_job *job, const ggufq_tensor_info *t, int64_t first, int64_t n)
{
    int64_t bs = ggufq_type_block_size(t->type);
    size_t block_bytes = ggufq_type_block_bytes(t->type);
    const uint8_t *src = (const uint8_t *)t->data + (size_t)(first / bs) * block_bytes;
    return ggufq_dequantize_to(t->type, src, job->target, job->out_buf, n, job->threads);
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
        else if (input_changed(job))
            rc = GGUFQ_E_IO;
        ggufq_file_release(job->in, t.data, (size_t)t.size);
        if (rc == GGUFQ_OK)
            report_progress(job, &t, index, t.size, t.size);
        return rc;
    }
    /* Chunks of whole blocks (block sizes are at most 256 today). */
    int64_t bs = ggufq_type_block_size(t.type);
    int64_t chunk = bs > 0 && bs <= CHUNK_WEIGHTS ? CHUNK_WEIGHTS - CHUNK_WEIGHTS % bs : 0;
    if (chunk == 0) {
        cli_error("%s: tensor '%s': unsupported block size", job->in_path, t.name);
        return GGUFQ_E_NOT_IMPLEMENTED;
    }
    size_t out_elem = ggufq_row_size(job->target, 1);
    for (int64_t first = 0; first < t.n_elements; first += chunk) {
        if (cli_signal_caught) {
            cli_error("interrupted; %s not written", job->out_path);
            return GGUFQ_E_INTERRUPTED;
        }
        if (cli_input_fault()) {
            cli_report_input_changed(job->in_path, job->out_path);
            return GGUFQ_E_IO;
        }
        int64_t n = t.n_elements - first < chunk ? t.n_elements - first : chunk;
        rc = convert_chunk(job, &t, first, n);
        if (rc < 0) {
            uint64_t at = ggufq_file_data_offset(job->in) + t.offset +
                          (uint64_t)(first / bs) * ggufq_type_block_bytes(t.type);
            if (!input_changed(job))
                cli_error("%s: offset %llu: tensor '%s' (%s): %s", job->in_path, (unsigned long long)at,
                          t.name, type ? type : "?", ggufq_strerror(rc));
            return rc;
        }
        rc = ggufq_writer_write(job->out, job->out_buf, (size_t)n * out_elem);
        if (rc < 0) {
            report_writer(job, rc, t.name);
            return rc;
        }
        /* bounded memory: the input pages of this chunk are done with */
        ggufq_file_release(job->in, (const uint8_t *)t.data + (size_t)(first / bs) * ggufq_type_block_bytes(t.type),
                           ggufq_row_size(t.type, n));
        report_progress(job, &t, index, ggufq_row_size(t.type, n), (uint64_t)n * out_elem);
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
    if (rc == GGUFQ_OK)
        cli_test_pause(job->in_path, ggufq_file_size(job->in));
    int64_t n = ggufq_tensor_count(job->in);
    for (int64_t i = 0; i < n && rc == GGUFQ_OK; i++)
        rc = convert_tensor(job, i);
    /* the last checkpoint before the rename: nothing read from a shrunk file goes into place */
    if (rc == GGUFQ_OK && cli_signal_caught) {
        cli_error("interrupted; %s not written", job->out_path);
        rc = GGUFQ_E_INTERRUPTED;
    }
    if (rc == GGUFQ_OK && input_changed(job))
        rc = GGUFQ_E_IO;
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

/* Tensors, bytes and weights of the run, for the JSON "start" and "summary" lines. */
static cli_run_totals run_totals(const dequant_job *job)
{
    cli_run_totals s = { job->out_path, ggufq_type_name(job->target), (int64_t)target_file_type(job->target),
                         ggufq_tensor_count(job->in), 0, 0, 0, 0, 0, 0.0, ggufq_thread_count(job->threads) };
    for (int64_t i = 0; i < s.tensors; i++) {
        ggufq_tensor_info t;
        if (ggufq_tensor_at(job->in, i, &t) < 0)
            continue;
        s.bytes_in += t.size;
        s.bytes_out += t.type == job->target ? t.size : ggufq_row_size(job->target, t.n_elements);
        s.weights += (uint64_t)t.n_elements;
        s.converted += t.type != job->target;
    }
    s.copied = s.tensors - s.converted;
    return s;
}

int cmd_dequant(int argc, char **argv)
{
    dequant_job job;
    memset(&job, 0, sizeof job);
    int st = parse_args(argc, argv, &job);
    if (st != CLI_EXIT_OK)
        return st < 0 ? CLI_EXIT_OK : st;   /* -1: help was printed */

    cli_progress_init(&job.progress, "dequant", job.progress_mode, job.quiet);
    ggufq_error err;
    memset(&err, 0, sizeof err);
    int rc = ggufq_open(job.in_path, NULL, &job.in, &err);
    if (rc < 0) {
        cli_report(rc, &err, job.in_path);
        cli_progress_fail(&job.progress, rc, CLI_EXIT_FAIL);
        return CLI_EXIT_FAIL;
    }
    cli_run_totals totals = run_totals(&job);
    job.done.tensor_count = totals.tensors;
    job.done.bytes_total = totals.bytes_in;
    /* 64-byte aligned: the kernels' full-width stores then never split a cache line
     * (malloc's large blocks sit 16 bytes into a page; measured 20-30 % slower in cache) */
    job.out_buf = aligned_alloc(64, ggufq_row_size(job.target, CHUNK_WEIGHTS));
    if (!job.out_buf) {
        cli_error("out of memory");
        rc = GGUFQ_E_NOMEM;
    } else {
        (void)ggufq_active_isa();   /* pick the kernels before any thread runs */
        cli_catch_signals();
        cli_progress_start(&job.progress, job.in_path, job.out_path, totals.target, totals.tensors,
                           totals.bytes_in, totals.threads);
        double t0 = cli_progress_elapsed(&job.progress);
        rc = run_dequant(&job);
        totals.seconds = cli_progress_elapsed(&job.progress) - t0;
        cli_progress_end(&job.progress);
    }
    free(job.out_buf);
    ggufq_close(job.in);
    if (rc < 0) {
        int exit_status = rc == GGUFQ_E_INTERRUPTED ? cli_failure_status() : CLI_EXIT_FAIL;
        cli_progress_fail(&job.progress, rc, exit_status);
        return exit_status;
    }
    if (cli_progress_is_json(&job.progress))   /* stdout is the JSON stream: the summary is its last line */
        cli_progress_summary(&job.progress, &totals);
    else if (!job.quiet)
        out_printf("wrote %s: %" PRId64 " tensor%s as %s\n", job.out_path, totals.tensors,
                   totals.tensors == 1 ? "" : "s", totals.target);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- */
/* Help                                                                      */
/* ------------------------------------------------------------------------- */

const cli_command cmd_dequant_command = {
    .name = "dequant",
    .summary = "Convert every tensor to f32, f16 or bf16",
    .usage = "usage: ggufq dequant IN OUT [--to f32|f16|bf16] [--threads N]\n"
             "                     [--progress bar|json|none] [-q]",
    .help =
      "Write OUT, a copy of the GGUF file IN with every tensor decoded to F32\n"
      "(bit for bit as ggml's reference kernels) and, for f16 and bf16, encoded\n"
      "again as that type. Tensors already of the target type are copied as they\n"
      "are. Metadata is copied in order; general.file_type is set to llama.cpp's\n"
      "file type (f32: 0, f16: 1, bf16: 32); the alignment is kept. Metadata\n"
      "holding nested arrays (valid GGUF, but refused by ggml) is refused.\n"
      "OUT is written to a temporary file renamed into place at the end: on any\n"
      "failure OUT is left untouched. OUT may not be IN.\n"
      "\n"
      "Options:\n"
      "  --to TYPE      Target type: f32 (default), f16 or bf16\n"
      "  --threads N    Worker threads (default and 0: all cores, or\n"
      "                 OMP_NUM_THREADS when set)\n"
      "  --progress bar|json|none\n"
      "                 bar: on stderr, fitted to the terminal (the default\n"
      "                 when stderr is a terminal). json: one object a line on\n"
      "                 stdout, each with an \"event\": \"start\", \"tensor\", then\n"
      "                 \"summary\" (tensors converted/copied, bytes_in/out,\n"
      "                 bpw_in/out, seconds) or, on failure, \"error\" (status,\n"
      "                 exit_status, message) last; messages stay on stderr\n"
      "  -q, --quiet    No bar, no summary (--progress json stays)\n"
      "  --             Ends the options: IN and OUT may then start with '-'\n"
      "  -h, --help     Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq dequant model-Q4_K_M.gguf model-f32.gguf\n"
      "  ggufq dequant model-Q8_0.gguf model-f16.gguf --to f16 --threads 8\n"
      "  ggufq dequant model-IQ4_XS.gguf model-bf16.gguf --to=bf16\n",
    .run = cmd_dequant,
};
