/*
 * requant.c — the public requant API, the top of the requant engine: options,
 * ggufq_requant_plan, ggufq_plan_run and ggufq_requant. It opens the inputs
 * (shards.c, imatrix.c, kvover.c), has them planned (plan_make.c: order,
 * pruning, llama.cpp's policy in plan.c) and the plan executed (run.c). The
 * plan keeps what was opened, so showing a plan and running it reads the
 * inputs' metadata and plans once. Nothing below calls back into this file.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "requant/plan.h"
#include "requant/requant_internal.h"

void ggufq_requant_options_init(ggufq_requant_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->output_tensor_type = -1;
    opts->token_embedding_type = -1;
    opts->allow_requantize = true;   /* what the library always did */
}

/* The struct before prune_layers was added: what callers built against 0.1.0 pass. */
#define OPTIONS_V1_SIZE offsetof(ggufq_requant_options, prune_layers)

static int check_options(const ggufq_requant_options *opts, ggufq_error *err)
{
    if (!opts->target)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "no target type or recipe given");
    if (opts->n_include_weights && opts->n_exclude_weights)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "--include-weights and --exclude-weights cannot be used together");
    if ((opts->n_include_weights || opts->n_exclude_weights) && !opts->imatrix_path)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--include-weights/--exclude-weights need --imatrix");
    if (opts->nthreads < 0)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "negative thread count");
    return gq_prune_check_list(opts, err);
}

/*
 * The caller's options as this version's struct (fields past the caller's
 * struct_size, which it does not know, keep their defaults), then checked.
 */
static int take_options(const ggufq_requant_options *in, ggufq_requant_options *o, ggufq_error *err)
{
    if (!in || in->struct_size < OPTIONS_V1_SIZE)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "options not initialised with ggufq_requant_options_init");
    ggufq_requant_options_init(o);
    memcpy(o, in, in->struct_size < sizeof *o ? in->struct_size : sizeof *o);
    o->struct_size = sizeof *o;
    return check_options(o, err);
}

static int parse_overrides(const ggufq_requant_options *opts, gq_kv_override **out, ggufq_error *err)
{
    *out = calloc(opts->n_kv_overrides + 4, sizeof **out);   /* + the imatrix keys */
    if (!*out)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (size_t i = 0; i < opts->n_kv_overrides; i++) {
        int rc = gq_kv_override_parse(opts->kv_overrides[i], &(*out)[i], err);
        if (rc < 0)
            return rc;
    }
    return GGUFQ_OK;
}

/* llama-quantize records the imatrix in quantize.imatrix.* keys (after the user's overrides). */
static size_t add_imatrix_keys(gq_kv_override *kv, size_t n, const char *path, const gq_imatrix *im)
{
    gq_kv_override *o = &kv[n++];
    snprintf(o->key, sizeof o->key, "quantize.imatrix.file");
    o->tag = GQ_KV_STR;
    snprintf(o->val_str, sizeof o->val_str, "%s", path);
    if (im->dataset && im->dataset[0]) {
        o = &kv[n++];
        snprintf(o->key, sizeof o->key, "quantize.imatrix.dataset");
        o->tag = GQ_KV_STR;
        snprintf(o->val_str, sizeof o->val_str, "%s", im->dataset);
    }
    o = &kv[n++];
    snprintf(o->key, sizeof o->key, "quantize.imatrix.entries_count");
    o->tag = GQ_KV_INT;
    o->val_i64 = (int64_t)im->n;
    if (im->chunks > 0) {
        o = &kv[n++];
        snprintf(o->key, sizeof o->key, "quantize.imatrix.chunks_count");
        o->tag = GQ_KV_INT;
        o->val_i64 = im->chunks;
    }
    return n;
}

int ggufq_requant_options_check(const ggufq_requant_options *caller_opts, ggufq_error *err)
{
    gq_error_clear(err);
    ggufq_requant_options opts_v, *opts = &opts_v;
    int rc = take_options(caller_opts, opts, err);
    if (rc < 0)
        return rc;
    int ftype = 0;
    ggufq_type default_type;
    bool is_recipe = false;
    if ((rc = gq_plan_target(opts->target, &ftype, &default_type, &is_recipe, err)) < 0)
        return rc;
    if ((rc = gq_plan_check_tensor_types(opts, err)) < 0)
        return rc;
    gq_kv_override *kv = NULL;
    rc = parse_overrides(opts, &kv, err);
    free(kv);
    return rc;
}

/* The run's copies of the options (the caller's strings may be gone by then). */
static int keep_options(gq_plan_source *src, const ggufq_requant_options *opts, ggufq_error *err)
{
    src->opts = *opts;
    src->opts.target = NULL;   /* planned: the run reads only what is copied here */
    src->opts.tensor_types = src->opts.include_weights = src->opts.exclude_weights = NULL;
    src->opts.kv_overrides = NULL;   /* parsed into src->kv */
    src->opts.imatrix_path = src->imatrix_path = opts->imatrix_path ? strdup(opts->imatrix_path) : NULL;
    src->opts.prune_layers = NULL;
    if (opts->n_prune_layers > 0) {
        int32_t *layers = malloc(opts->n_prune_layers * sizeof *layers);
        if (layers)
            memcpy(layers, opts->prune_layers, opts->n_prune_layers * sizeof *layers);
        src->opts.prune_layers = src->prune_layers = layers;
    }
    if ((opts->imatrix_path && !src->imatrix_path) || (opts->n_prune_layers > 0 && !src->prune_layers))
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    return GGUFQ_OK;
}

/*
 * Open the inputs and plan: the checks in the order the run makes them
 * (options, overrides, shards, imatrix, plan). The plan keeps the inputs.
 */
static int plan_inputs(const char *in_path, const ggufq_requant_options *caller_opts, ggufq_plan **out,
                       ggufq_error *err)
{
    ggufq_requant_options opts_v, *opts = &opts_v;
    int rc = take_options(caller_opts, opts, err);
    if (rc < 0)
        return rc;
    gq_plan_source *src = calloc(1, sizeof *src);
    if (!src)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    src->n_kv = opts->n_kv_overrides;
    if ((rc = parse_overrides(opts, &src->kv, err)) < 0 || (rc = gq_shards_open(in_path, &src->shards, err)) < 0)
        goto fail;
    if (opts->imatrix_path) {
        if ((rc = gq_imatrix_load(opts->imatrix_path, opts, &src->imatrix, err)) < 0)
            goto fail;
        if (src->imatrix.n > 0)
            src->n_kv = add_imatrix_keys(src->kv, src->n_kv, opts->imatrix_path, &src->imatrix);
    }
    ggufq_plan *plan = NULL;
    if ((rc = gq_plan_make(&src->shards, opts, src->imatrix.n > 0, &plan, err)) < 0)
        goto fail;
    plan->source = src;   /* freed with the plan from now on */
    if ((rc = gq_plan_mark_imatrix(plan, &src->imatrix, opts->imatrix_path, err)) < 0 ||
        (rc = keep_options(src, opts, err)) < 0) {
        ggufq_plan_free(plan);
        return rc;
    }
    *out = plan;
    return GGUFQ_OK;
fail:
    gq_plan_source_free(src);
    return rc;
}

int ggufq_requant_plan(const char *in_path, const ggufq_requant_options *caller_opts, ggufq_plan **out,
                       ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!in_path || !out)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    return plan_inputs(in_path, caller_opts, out, err);
}

/* ------------------------------------------------------------------------- */
/* ggufq_requant                                                              */
/* ------------------------------------------------------------------------- */

/*
 * Output file paths: OUT, or with keep_split <prefix>-0000i-of-0000N.gguf for the N shards,
 * even when N is 1 (llama.cpp names a single kept shard OUT-00001-of-00001.gguf too).
 * N counts up to the last shard that still has a tensor (as llama.cpp: pruning can empty
 * the last shards).
 */
static int output_paths(const ggufq_plan *plan, const ggufq_requant_options *opts, const char *out_path,
                        char ***paths, int *n_paths, ggufq_error *err)
{
    int n = 1;
    for (int64_t i = 0; opts->keep_split && i < plan->n; i++)
        if (plan->shard[i] + 1 > n)
            n = plan->shard[i] + 1;
    char **p = calloc((size_t)n, sizeof *p);
    if (!p)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    *paths = p;
    *n_paths = n;
    if (!opts->keep_split) {
        p[0] = strdup(out_path);
        return p[0] ? GGUFQ_OK : gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    char *prefix = gq_split_prefix(out_path);
    if (!prefix)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    size_t cap = strlen(prefix) + 32;
    for (int i = 0; i < n; i++) {
        p[i] = malloc(cap);
        if (!p[i] || !gq_split_path(p[i], cap, prefix, i, n)) {
            free(prefix);
            return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
        }
    }
    free(prefix);
    return GGUFQ_OK;
}

static void free_paths(char **p, int n)
{
    for (int i = 0; p && i < n; i++)
        free(p[i]);
    free(p);
}

/* Fail early when the destination cannot hold the planned output. */
static int check_free_space(const gq_shards *s, const ggufq_plan *plan, const char *out_path,
                            ggufq_error *err)
{
    struct stat st;
    bool exists = stat(out_path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return GGUFQ_OK;   /* a FIFO or device is written to directly (or refused by the writer) */
    /* a symbolic link: the file it leads to is replaced, in that file's directory */
    char *dir = exists ? realpath(out_path, NULL) : NULL;
    if (!dir)
        dir = strdup(out_path);
    if (!dir)
        return GGUFQ_OK;
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct statvfs v;
    int rc = GGUFQ_OK;
    if (statvfs(dir, &v) == 0) {
        uint64_t align = ggufq_file_alignment(s->files[0]);
        uint64_t need = ggufq_file_data_offset(s->files[0]) + 4096;   /* header: about the input's */
        for (int64_t i = 0; i < plan->n; i++)
            need += (plan->entries[i].out_bytes + align - 1) / align * align;
        uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
        if (avail < need)
            rc = gq_rq_fail(err, GGUFQ_E_NO_SPACE,
                            "%s: not enough free space: the output needs about %llu bytes, %llu are available",
                            dir, (unsigned long long)need, (unsigned long long)avail);
    }
    free(dir);
    return rc;
}

/* Write the plan's output: checked paths and space, then the engine (run.c). */
static int run_plan(const ggufq_plan *plan, const char *out_path, ggufq_progress_fn progress, void *user_data,
                    ggufq_error *err)
{
    const gq_plan_source *src = plan->source;
    char **paths = NULL;
    int n_paths = 0;
    int rc = output_paths(plan, &src->opts, out_path, &paths, &n_paths, err);
    /* no output may be an input (a shard, the imatrix): the writers refuse that (run.c) */
    if (rc == GGUFQ_OK)
        rc = check_free_space(&src->shards, plan, paths[0], err);
    if (rc == GGUFQ_OK) {
        gq_run run = {
            .in = &src->shards, .plan = plan, .imatrix = src->imatrix.n > 0 ? &src->imatrix : NULL,
            .opts = &src->opts, .kv = src->kv, .n_kv = src->n_kv,
            .out_paths = (const char *const *)paths, .n_out = n_paths,
            .progress = progress, .user_data = user_data, .nthreads = src->opts.nthreads,
        };
        rc = gq_run_requant(&run, err);
    }
    free_paths(paths, n_paths);
    return rc;
}

int ggufq_plan_run(const ggufq_plan *plan, const char *out_path, ggufq_progress_fn progress, void *user_data,
                   ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!plan || !plan->source || !out_path)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    return run_plan(plan, out_path, progress, user_data, err);
}

int ggufq_requant(const char *in_path, const char *out_path, const ggufq_requant_options *caller_opts,
                  ggufq_progress_fn progress, void *user_data, ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!in_path || (!out_path && !(caller_opts && caller_opts->dry_run)))
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    ggufq_plan *plan = NULL;
    int rc = plan_inputs(in_path, caller_opts, &plan, err);
    if (rc == GGUFQ_OK && !plan->source->opts.dry_run)
        rc = run_plan(plan, out_path, progress, user_data, err);
    ggufq_plan_free(plan);
    return rc;
}
