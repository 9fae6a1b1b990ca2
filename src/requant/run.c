/*
 * run.c — executes a requant plan: writes the metadata as llama.cpp's
 * llama_model_quantize does, then streams every tensor through
 * dequantize → quantize in chunks of rows, the rows of a chunk spread over
 * the library's threads (api/threads.h). Rows are independent in every
 * quantizer, so the bytes do not depend on the thread count. Memory: one
 * chunk of F32 rows and its encoded form, whatever the tensor's size.
 *
 * Input checks follow llama.cpp's loader (check_tensors): any NaN/Inf in a
 * float tensor, or in a quantized tensor's scales, is an error, reported
 * with the input file (the shard, for split models), the absolute byte
 * offset, the tensor and row; the quantized output is checked the same way
 * (ggml_validate_row_data).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include "api/threads.h"
#include "gguf/writer_internal.h"
#include "requant/requant_internal.h"

/* Weights per chunk (a chunk is whole rows; at least one row). */
#define CHUNK_WEIGHTS ((int64_t)1 << 21)
/* Weights per parallel work item inside a chunk (whole rows, at least one). */
#define ITEM_WEIGHTS  ((int64_t)1 << 15)

typedef struct run_state {
    const gq_run  *run;
    gq_pool       *pool;      /* the run's threads; NULL: the caller alone */
    bool           pool_made; /* the pool was asked for (once per run) */
    ggufq_writer **w;
    float         *f32;       /* CHUNK rows, decoded */
    uint8_t       *enc;       /* the same rows, encoded */
    size_t         f32_cap, enc_cap;
    ggufq_progress pr;
    struct timespec t0;
} run_state;

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static int writer_status(ggufq_writer *w, int rc, ggufq_error *err)
{
    const ggufq_error *we = ggufq_writer_error(w);
    if (err && we && we->status != GGUFQ_OK) {
        *err = *we;
        return we->status;
    }
    return gq_rq_fail(err, rc, "writing the output: %s", ggufq_strerror(rc));
}

/* ------------------------------------------------------------------------- */
/* Metadata                                                                   */
/* ------------------------------------------------------------------------- */

/* gguf_set_val_*: an existing key is removed and the new value appended. */
static int set_override(ggufq_writer *w, const gq_kv_override *o)
{
    ggufq_writer_remove(w, o->key);
    switch (o->tag) {
    case GQ_KV_FLOAT:   /* stored as float32 */
        return ggufq_writer_set_float(w, o->key, GGUFQ_VT_FLOAT32, (double)(float)o->val_f64);
    case GQ_KV_INT:     /* stored as uint32 of the absolute value (llama.cpp PR 14182) */
        return ggufq_writer_set_uint(w, o->key, GGUFQ_VT_UINT32,
                                     (uint32_t)(o->val_i64 < 0 ? -(uint64_t)o->val_i64 : (uint64_t)o->val_i64));
    case GQ_KV_BOOL:
        return ggufq_writer_set_bool(w, o->key, o->val_bool);
    default:
        return ggufq_writer_set_string(w, o->key, o->val_str, strlen(o->val_str));
    }
}

static int write_metadata(run_state *st, int k, ggufq_error *err)
{
    const gq_run *r = st->run;
    ggufq_writer *w = st->w[k];
    int rc = GGUFQ_OK;
    if (k == 0) {   /* the first output gets the model's keys; llama.cpp's other shards only split.* */
        const ggufq_file *f = r->in->files[0];
        for (int64_t i = 0; i < ggufq_kv_count(f) && rc == GGUFQ_OK; i++) {
            ggufq_value v;
            rc = ggufq_kv_value(f, i, &v);
            if (rc == GGUFQ_OK && r->plan->imatrix_names &&
                gq_prune_is_layer_array(ggufq_kv_key(f, i), &v, r->plan->arch, r->plan->block_count_in))
                rc = gq_prune_set_layer_array(w, ggufq_kv_key(f, i), &v, r->opts);   /* not in llama.cpp */
            else if (rc == GGUFQ_OK)
                rc = ggufq_writer_set_value(w, ggufq_kv_key(f, i), &v);
        }
        if (rc == GGUFQ_OK) {
            ggufq_writer_remove(w, "general.quantization_version");
            rc = ggufq_writer_set_uint(w, "general.quantization_version", GGUFQ_VT_UINT32, 2);
        }
        if (rc == GGUFQ_OK) {
            ggufq_writer_remove(w, "general.file_type");
            rc = ggufq_writer_set_uint(w, "general.file_type", GGUFQ_VT_UINT32, r->plan->file_type);
        }
        ggufq_writer_remove(w, "split.no");
        ggufq_writer_remove(w, "split.count");
        ggufq_writer_remove(w, "split.tensors.count");
        for (size_t i = 0; i < r->n_kv && rc == GGUFQ_OK; i++)
            rc = set_override(w, &r->kv[i]);
        if (rc == GGUFQ_OK && r->plan->imatrix_names) {   /* pruned: llama.cpp sets it last */
            char key[160];
            snprintf(key, sizeof key, "%s.block_count", r->plan->arch);
            ggufq_writer_remove(w, key);
            rc = ggufq_writer_set_uint(w, key, GGUFQ_VT_UINT32, (uint64_t)r->plan->block_count_out);
        }
    }
    if (rc == GGUFQ_OK && r->n_out > 1) {
        rc = ggufq_writer_set_uint(w, "split.no", GGUFQ_VT_UINT16, (uint64_t)k);
        if (rc == GGUFQ_OK)
            rc = ggufq_writer_set_uint(w, "split.count", GGUFQ_VT_UINT16, (uint64_t)r->n_out);
        if (rc == GGUFQ_OK)
            rc = ggufq_writer_set_int(w, "split.tensors.count", GGUFQ_VT_INT32, r->plan->n);
    }
    return rc < 0 ? writer_status(w, rc, err) : GGUFQ_OK;
}

/* Every file the run reads (each shard, the imatrix): no output may replace one of them. */
static const char **input_paths(const gq_run *r, size_t *n)
{
    const char **p = calloc((size_t)r->in->n + 1, sizeof *p);
    if (!p)
        return NULL;
    *n = 0;
    for (int i = 0; i < r->in->n; i++)
        p[(*n)++] = ggufq_file_name(r->in->files[i]);
    if (r->opts && r->opts->imatrix_path)
        p[(*n)++] = r->opts->imatrix_path;
    return p;
}

static int open_outputs(run_state *st, ggufq_error *err)
{
    const gq_run *r = st->run;
    size_t n_in = 0;
    const char **in = input_paths(r, &n_in);
    st->w = calloc((size_t)r->n_out, sizeof *st->w);
    if (!st->w || !in) {
        free(in);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    int rc = GGUFQ_OK;
    for (int k = 0; k < r->n_out && rc == GGUFQ_OK; k++) {
        ggufq_writer_options wo = { ggufq_file_alignment(r->in->files[0]), NULL };
        rc = gq_writer_create_guarded(r->out_paths[k], &wo, in, n_in, &st->w[k], err);
        if (rc < 0)
            st->w[k] = NULL;
        else
            rc = write_metadata(st, k, err);
    }
    free(in);
    if (rc < 0)
        return rc;
    for (int64_t i = 0; i < r->plan->n; i++) {
        const ggufq_plan_entry *e = &r->plan->entries[i];
        int k = r->n_out > 1 ? r->plan->shard[i] : 0;
        int rc = ggufq_writer_add_tensor(st->w[k], e->name, e->out_type, e->n_dims, e->dims);
        if (rc < 0)
            return writer_status(st->w[k], rc, err);
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* One tensor                                                                 */
/* ------------------------------------------------------------------------- */

typedef struct tensor_job {
    const ggufq_plan_entry *e;
    const char   *file;       /* the input file holding the tensor (its shard) */
    uint64_t      file_offset;/* where the tensor's bytes start in that file */
    const uint8_t *src;       /* input bytes */
    int64_t       ne0, ne1, ne2, nrows;
    size_t        in_row, out_row;
    const float  *imatrix;    /* ne0 * ne2 values, or NULL */
    const char   *im_name;    /* the name of its imatrix entry (the input's, when blocks were pruned) */
} tensor_job;

/* First problem found in a chunk; the lowest row wins, so reports do not depend on threads. */
typedef struct chunk_fault {
    pthread_mutex_t lock;   /* guards the rest */
    int64_t row;       /* INT64_MAX: none */
    int     status;
    int64_t where;     /* element or block inside the row */
    bool    output;    /* found in the quantized output (else the input) */
} chunk_fault;

static void note_fault(chunk_fault *f, int64_t row, int status, int64_t where, bool output)
{
    pthread_mutex_lock(&f->lock);
    if (row < f->row) {
        f->row = row;
        f->status = status;
        f->where = where;
        f->output = output;
    }
    pthread_mutex_unlock(&f->lock);
}

/* Rows [r0, r1) of one item: decode, check, encode, check. All rows share one expert. */
static void convert_rows(const tensor_job *j, int64_t first_row, int64_t r0, int64_t r1,
                         float *f32, uint8_t *enc, chunk_fault *fault)
{
    const ggufq_type in_t = j->e->in_type, out_t = j->e->out_type;
    const uint8_t *src = j->src + (size_t)r0 * j->in_row;
    size_t nin = (size_t)(r1 - r0) * j->in_row;
    int64_t bad = gq_first_invalid(in_t, src, nin);
    if (bad >= 0) {
        int64_t per_row = (int64_t)(j->in_row / ggufq_type_block_bytes(in_t));
        note_fault(fault, r0 + bad / per_row, GGUFQ_E_NONFINITE, bad % per_row, false);
        return;
    }
    const float *x;
    float *dst = f32 + (size_t)(r0 - first_row) * (size_t)j->ne0;
    if (in_t == GGUFQ_TYPE_F32 && ((uintptr_t)src % _Alignof(float)) == 0) {
        x = (const float *)(const void *)src;
    } else if (in_t == GGUFQ_TYPE_F32) {   /* general.alignment 1 can place floats anywhere */
        memcpy(dst, src, nin);
        x = dst;
    } else {
        int rc = ggufq_dequantize(in_t, src, dst, (r1 - r0) * j->ne0);
        if (rc < 0) {
            note_fault(fault, r0, rc, 0, false);
            return;
        }
        x = dst;
    }
    const float *im = j->imatrix ? j->imatrix + ((r0 / j->ne1) % j->ne2) * j->ne0 : NULL;
    uint8_t *out = enc + (size_t)(r0 - first_row) * j->out_row;
    int rc = ggufq_quantize(out_t, x, out, r1 - r0, j->ne0, im);
    if (rc < 0) {
        note_fault(fault, r0, rc, 0, true);
        return;
    }
    bad = gq_first_invalid(out_t, out, (size_t)(r1 - r0) * j->out_row);
    if (bad >= 0) {
        int64_t per_row = (int64_t)(j->out_row / ggufq_type_block_bytes(out_t));
        note_fault(fault, r0 + bad / per_row, GGUFQ_E_NONFINITE, bad % per_row, true);
    }
}

/* A copied chunk: only the input check. */
static void check_rows(const tensor_job *j, int64_t r0, int64_t r1, chunk_fault *fault)
{
    const uint8_t *src = j->src + (size_t)r0 * j->in_row;
    int64_t bad = gq_first_invalid(j->e->in_type, src, (size_t)(r1 - r0) * j->in_row);
    if (bad >= 0) {
        int64_t per_row = (int64_t)(j->in_row / ggufq_type_block_bytes(j->e->in_type));
        note_fault(fault, r0 + bad / per_row, GGUFQ_E_NONFINITE, bad % per_row, false);
    }
}

/* The name the user gave for the imatrix (messages only). */
static const char *imatrix_name(const gq_run *r)
{
    return r->opts && r->opts->imatrix_path ? r->opts->imatrix_path : "the imatrix";
}

/*
 * The input byte a fault points at: the start of the faulty input block, or
 * for a faulty output block the input block holding its first weight (input
 * and output blocks need not line up: 256 input weights can feed 8 outputs).
 */
static uint64_t fault_offset(const tensor_job *j, const chunk_fault *f)
{
    uint64_t off = j->file_offset + (uint64_t)f->row * (uint64_t)j->in_row;
    const ggufq_type in_t = j->e->in_type, out_t = j->e->out_type;
    if (f->status != GGUFQ_E_NONFINITE)
        return off;   /* a kernel refused the row: its start */
    int64_t in_block = f->where;
    if (f->output)
        in_block = f->where * ggufq_type_block_size(out_t) / ggufq_type_block_size(in_t);
    return off + (uint64_t)in_block * (uint64_t)ggufq_type_block_bytes(in_t);
}

static int report_fault(const gq_run *r, const tensor_job *j, const chunk_fault *f, ggufq_error *err)
{
    const char *in_n = ggufq_type_name(j->e->in_type), *out_n = ggufq_type_name(j->e->out_type);
    if (f->status == GGUFQ_E_NEEDS_IMATRIX) {   /* about the whole tensor: no offset */
        if (!r->opts || !r->opts->imatrix_path)
            return gq_rq_fail(err, f->status, "%s: tensor '%s': %s can only be made with an importance "
                              "matrix (--imatrix)", j->file, j->e->name, out_n);
        return gq_rq_fail(err, f->status, "%s: tensor '%s': %s can only be made with an importance matrix "
                          "that has an entry for this tensor, and %s has none", j->file, j->e->name, out_n,
                          imatrix_name(r));
    }
    unsigned long long off = fault_offset(j, f);
    int rc;
    if (f->status == GGUFQ_E_NONFINITE && !f->output)
        rc = gq_rq_fail(err, f->status,
                        "%s: offset %llu: tensor '%s' row %lld: NaN or Inf in the input (%s %s %lld)",
                        j->file, off, j->e->name, (long long)f->row, in_n,
                        ggufq_type_is_quantized(j->e->in_type) ? "scale of block" : "weight",
                        (long long)f->where);
    else if (f->status == GGUFQ_E_NONFINITE)
        rc = gq_rq_fail(err, f->status,
                        "%s: offset %llu: tensor '%s' row %lld: quantized to %s, block %lld has a NaN or Inf scale",
                        j->file, off, j->e->name, (long long)f->row, out_n, (long long)f->where);
    else
        rc = gq_rq_fail(err, f->status, "%s: offset %llu: tensor '%s' row %lld: %s to %s: %s", j->file, off,
                        j->e->name, (long long)f->row, in_n, out_n, ggufq_strerror(f->status));
    if (err)
        err->offset = off;
    return rc;
}

/* One chunk, as the tasks of a pool run see it. */
typedef struct chunk_job {
    const run_state  *st;
    const tensor_job *j;
    int64_t           c0, c1, rows_per_item;
    bool              copy;
    chunk_fault      *fault;
} chunk_job;

static void chunk_item(void *ctx, int64_t it)
{
    const chunk_job *c = ctx;
    const tensor_job *j = c->j;
    int64_t r0 = c->c0 + it * c->rows_per_item;
    int64_t r1 = r0 + c->rows_per_item < c->c1 ? r0 + c->rows_per_item : c->c1;
    if (c->copy) {
        check_rows(j, r0, r1, c->fault);
        return;
    }
    /* split at expert boundaries: each expert has its own imatrix slice */
    while (r0 < r1) {
        int64_t next = (r0 / j->ne1 + 1) * j->ne1;
        int64_t e1 = next < r1 ? next : r1;
        convert_rows(j, c->c0, r0, e1, c->st->f32, c->st->enc, c->fault);
        r0 = e1;
    }
}

static int process_chunk(run_state *st, const tensor_job *j, int64_t c0, int64_t c1, bool copy,
                         chunk_fault *fault)
{
    int64_t rows_per_item = ITEM_WEIGHTS / j->ne0 > 0 ? ITEM_WEIGHTS / j->ne0 : 1;
    int64_t n_items = (c1 - c0 + rows_per_item - 1) / rows_per_item;
    if (n_items > 1 && !st->pool_made) {
        /* made when first needed (a run with nothing to split starts no
         * thread), then kept: its workers sleep between chunks */
        st->pool = gq_pool_create(gq_threads_resolve(st->run->nthreads));
        st->pool_made = true;
    }
    chunk_job c = { st, j, c0, c1, rows_per_item, copy, fault };
    gq_pool_run(st->pool, n_items, chunk_item, &c);
    return fault->row == INT64_MAX ? GGUFQ_OK : fault->status;
}

/* Room for `rows` rows of j, decoded and encoded; sizes checked, failures name the tensor. */
static int ensure_buffers(run_state *st, const tensor_job *j, uint64_t rows, ggufq_error *err)
{
    uint64_t ne0 = (uint64_t)j->ne0;
    if (ne0 > SIZE_MAX / sizeof(float) / rows || (j->out_row && j->out_row > SIZE_MAX / rows))
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "%s: tensor '%s': a chunk of %llu rows of %llu weights does not "
                          "fit in memory", j->file, j->e->name, (unsigned long long)rows,
                          (unsigned long long)ne0);
    size_t f32_bytes = (size_t)(rows * ne0 * sizeof(float)), enc_bytes = (size_t)rows * j->out_row;
    if (f32_bytes > st->f32_cap) {
        free(st->f32);
        st->f32 = malloc(f32_bytes);
        st->f32_cap = st->f32 ? f32_bytes : 0;
    }
    if (enc_bytes > st->enc_cap) {
        free(st->enc);
        st->enc = malloc(enc_bytes);
        st->enc_cap = st->enc ? enc_bytes : 0;
    }
    if ((f32_bytes && !st->f32) || (enc_bytes && !st->enc))
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "%s: tensor '%s': out of memory for a chunk of %zu + %zu bytes",
                          j->file, j->e->name, f32_bytes, enc_bytes);
    return GGUFQ_OK;
}

/* The imatrix row of a tensor: the plan matched them (and refused what llama.cpp refuses). */
static const float *imatrix_row(const gq_run *r, const tensor_job *j)
{
    const gq_imatrix_entry *m = j->e->uses_imatrix && r->imatrix ? gq_imatrix_find(r->imatrix, j->im_name) : NULL;
    return m ? m->values : NULL;
}

static int report_progress(run_state *st, ggufq_error *err)
{
    if (!st->run->progress)
        return GGUFQ_OK;
    st->pr.elapsed_seconds = seconds_since(&st->t0);
    if (st->run->progress(&st->pr, st->run->user_data) != 0)
        return gq_rq_fail(err, GGUFQ_E_INTERRUPTED, "interrupted");
    return GGUFQ_OK;
}

static int process_tensor(run_state *st, int64_t i, ggufq_error *err)
{
    const gq_run *r = st->run;
    const ggufq_plan_entry *e = &r->plan->entries[i];
    const ggufq_file *f = r->in->files[r->plan->shard[i]];
    ggufq_tensor_info t;
    ggufq_tensor_at(f, r->plan->index[i], &t);
    ggufq_writer *w = st->w[r->n_out > 1 ? r->plan->shard[i] : 0];
    tensor_job j = { e, ggufq_file_name(f), ggufq_file_data_offset(f) + t.offset, t.data, t.dims[0],
                     t.n_dims >= 2 ? t.dims[1] : 1, t.n_dims >= 3 ? t.dims[2] : 1, 0, 0, 0, NULL, NULL };
    j.nrows = j.ne0 ? t.n_elements / j.ne0 : 0;
    j.im_name = gq_plan_imatrix_name(r->plan, i);
    j.in_row = ggufq_row_size(e->in_type, j.ne0);
    j.out_row = ggufq_row_size(e->out_type, j.ne0);
    bool copy = e->out_type == e->in_type;
    j.imatrix = copy ? NULL : imatrix_row(r, &j);
    int rc = GGUFQ_OK;
    st->pr.tensor_name = e->name;
    st->pr.tensor_index = i;
    int64_t rows_per_chunk = CHUNK_WEIGHTS / (j.ne0 ? j.ne0 : 1);
    if (rows_per_chunk < 1)
        rows_per_chunk = 1;
    /* An empty tensor (nrows 0) needs no buffers, whatever its row length says. */
    if (!copy && j.nrows > 0 && (rc = ensure_buffers(st, &j, (uint64_t)rows_per_chunk, err)) < 0)
        return rc;
    for (int64_t c0 = 0; c0 < j.nrows; c0 += rows_per_chunk) {
        int64_t c1 = c0 + rows_per_chunk < j.nrows ? c0 + rows_per_chunk : j.nrows;
        chunk_fault fault = { PTHREAD_MUTEX_INITIALIZER, INT64_MAX, GGUFQ_OK, 0, false };
        rc = process_chunk(st, &j, c0, c1, copy, &fault);
        pthread_mutex_destroy(&fault.lock);
        if (rc < 0)
            return report_fault(r, &j, &fault, err);
        const void *bytes = copy ? (const void *)(j.src + (size_t)c0 * j.in_row) : (const void *)st->enc;
        size_t n = (size_t)(c1 - c0) * (copy ? j.in_row : j.out_row);
        if ((rc = ggufq_writer_write(w, bytes, n)) < 0)
            return writer_status(w, rc, err);
        /* Bounded memory: drop the input pages of the chunk just written (the
         * whole mapped file would otherwise end up resident). */
        ggufq_file_release(f, j.src + (size_t)c0 * j.in_row, (size_t)(c1 - c0) * j.in_row);
        st->pr.bytes_done += (uint64_t)(c1 - c0) * j.in_row;
        st->pr.bytes_written += n;
        if ((rc = report_progress(st, err)) < 0)
            return rc;
    }
    if (j.nrows == 0 && (rc = report_progress(st, err)) < 0)
        return rc;
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* The run                                                                    */
/* ------------------------------------------------------------------------- */

/*
 * All outputs appear together or none does: every file is first completed
 * and fsynced (the step that can run out of space or fail on I/O), then each
 * gets a temporary name, and only then are they renamed over their OUT
 * paths one after another. A failure before the renames leaves every existing
 * OUT file as it was (the caller's ggufq_writer_abort removes the new ones).
 * A rename itself failing (not expected: our own file, in OUT's directory)
 * leaves the shards renamed before it in place.
 */
static int finish_all(run_state *st, ggufq_error *err)
{
    const gq_run *r = st->run;
    int rc = GGUFQ_OK;
    for (int k = 0; k < r->n_out && rc == GGUFQ_OK; k++)
        if ((rc = gq_writer_prepare(st->w[k])) < 0)
            return writer_status(st->w[k], rc, err);
    for (int k = 0; k < r->n_out && rc == GGUFQ_OK; k++)
        if ((rc = gq_writer_stage(st->w[k])) < 0)
            return writer_status(st->w[k], rc, err);
    for (int k = 0; k < r->n_out && rc == GGUFQ_OK; k++)
        if ((rc = gq_writer_commit(st->w[k])) < 0)
            return writer_status(st->w[k], rc, err);
    return rc;
}

int gq_run_requant(const gq_run *r, ggufq_error *err)
{
    run_state st;
    memset(&st, 0, sizeof st);
    st.run = r;
    clock_gettime(CLOCK_MONOTONIC, &st.t0);
    st.pr.tensor_count = r->plan->n;
    st.pr.bytes_total = r->plan->in_total;
    int rc = open_outputs(&st, err);
    for (int64_t i = 0; i < r->plan->n && rc == GGUFQ_OK; i++)
        rc = process_tensor(&st, i, err);
    if (rc == GGUFQ_OK)
        rc = finish_all(&st, err);
    for (int k = 0; st.w && k < r->n_out; k++)
        ggufq_writer_abort(st.w[k]);
    free(st.w);
    free(st.f32);
    free(st.enc);
    gq_pool_free(st.pool);
    return rc;
}
