/*
 * requant_internal.h — the pieces of the requant engine shared between its
 * files: split inputs (shards.c), importance matrices (imatrix.c), metadata
 * overrides (kvover.c), pruning (prune.c), row validation (validate.c),
 * plans (plan_make.c over plan.c's policy) and the run (run.c), all called
 * from the public entry, requant.c. Not public API.
 */
#ifndef GGUFQ_REQUANT_INTERNAL_H
#define GGUFQ_REQUANT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"
#include "gguf/errors.h"
#include "requant/plan.h"

/* A failure about no single file (messages name what they quote): gq_fail's. */
#define gq_rq_fail(err, status, ...) gq_fail((err), (status), NULL, GGUFQ_NO_OFFSET, __VA_ARGS__)

/* ------------------------------------------------------------------------- */
/* Split models (shards.c)                                                   */
/* ------------------------------------------------------------------------- */

#define GQ_MAX_SHARDS 9999

/* The files of one model: a single file, or every shard of a split one. */
typedef struct gq_shards {
    int          n;
    ggufq_file **files;   /* files[0] holds the metadata that is copied */
} gq_shards;

/*
 * Open path and, when it is shard 1 of N (split.count > 1), the other shards
 * named like llama.cpp's llama_split_path: <prefix>-%05d-of-%05d.gguf.
 */
int  gq_shards_open(const char *path, gq_shards *s, ggufq_error *err);
void gq_shards_close(gq_shards *s);
/* "<prefix>-%05d-of-%05d.gguf" (no is 0-based, printed 1-based) into buf; false if it does not fit. */
bool gq_split_path(char *buf, size_t cap, const char *prefix, int no, int count);
/*
 * The prefix of an output path for --keep-split: path without a trailing
 * "-NNNNN-of-NNNNN.gguf" or ".gguf". malloc'd; NULL when out of memory.
 */
char *gq_split_prefix(const char *path);

/* ------------------------------------------------------------------------- */
/* Importance matrices (imatrix.c)                                           */
/* ------------------------------------------------------------------------- */

typedef struct gq_imatrix_entry {
    char    *name;     /* tensor name ("blk.0.attn_q.weight") */
    float   *values;   /* ne[0] * n_experts importance weights */
    int64_t  n;
} gq_imatrix_entry;

typedef struct gq_imatrix {
    gq_imatrix_entry *e;   /* sorted by name */
    size_t            n;
    char             *dataset;  /* informational, may be NULL */
    int64_t           chunks;   /* informational, -1 if unknown */
    uint64_t          dedupe_name_reads;  /* names read to drop duplicates: O(n) (tests check it) */
} gq_imatrix;

/*
 * Load a legacy imatrix (.dat) or a GGUF imatrix, keeping only the entries
 * include/exclude select (as llama-quantize does), and refusing non-finite values.
 * path must be a regular file (read once, no further than its size); of
 * entries with the same name the last one counts.
 */
int  gq_imatrix_load(const char *path, const ggufq_requant_options *opts,
                     gq_imatrix *im, ggufq_error *err);
const gq_imatrix_entry *gq_imatrix_find(const gq_imatrix *im, const char *name);
void gq_imatrix_free(gq_imatrix *im);

/* ------------------------------------------------------------------------- */
/* Metadata overrides (kvover.c)                                             */
/* ------------------------------------------------------------------------- */

enum gq_kv_tag { GQ_KV_INT, GQ_KV_FLOAT, GQ_KV_BOOL, GQ_KV_STR };

/* llama.cpp's llama_model_kv_override: keys and strings of at most 127 bytes. */
typedef struct gq_kv_override {
    char    key[128];
    int     tag;
    int64_t val_i64;
    double  val_f64;
    bool    val_bool;
    char    val_str[128];
} gq_kv_override;

/* Parse "KEY=TYPE:VALUE" (TYPE: int, float, bool, str) exactly as llama.cpp's parser. */
int gq_kv_override_parse(const char *spec, gq_kv_override *out, ggufq_error *err);

/* ------------------------------------------------------------------------- */
/* Pruning blocks (prune.c)                                                  */
/* ------------------------------------------------------------------------- */

/* The list alone: non-negative, strictly increasing (no file needed). */
int  gq_prune_check_list(const ggufq_requant_options *opts, ggufq_error *err);
/* Against the model: every layer below block_count, and not all of them. */
int  gq_prune_check_model(const ggufq_requant_options *opts, const char *file, const char *arch,
                          int64_t block_count, ggufq_error *err);
/*
 * llama.cpp's remap_layer over n tensors named names[] in its processing
 * order: renamed[i] is NULL (unchanged), names[i] itself (dropped) or a
 * malloc'd new name (the caller's to free); *block_count_out is the block
 * count llama.cpp writes. Two tensors given the same name are refused.
 */
int  gq_prune_tensors(const ggufq_requant_options *opts, const char *file, const char *const *names, int64_t n,
                      char **renamed, int64_t *block_count_out, ggufq_error *err);
/* A per-layer array of the model (see prune.c) that loses the pruned entries. */
bool gq_prune_is_layer_array(const char *key, const ggufq_value *v, const char *arch, int64_t block_count);
/* Set key to v without the pruned entries (same element type). */
int  gq_prune_set_layer_array(ggufq_writer *w, const char *key, const ggufq_value *v,
                              const ggufq_requant_options *opts);

/* ------------------------------------------------------------------------- */
/* Validation (validate.c)                                                   */
/* ------------------------------------------------------------------------- */

/*
 * ggml_validate_row_data's rules: the index of the first element (plain
 * types) or block (quantized types) holding a NaN or Inf (for quantized
 * types: in a scale), or -1 if the bytes are valid.
 */
int64_t gq_first_invalid(ggufq_type type, const void *data, size_t nbytes);

/* ------------------------------------------------------------------------- */
/* Plans (plan_make.c)                                                       */
/* ------------------------------------------------------------------------- */

/*
 * What ggufq_requant_plan opened and parsed (requant.c), kept with the plan
 * so that ggufq_plan_run executes it without opening or planning again.
 */
typedef struct gq_plan_source {
    gq_shards              shards;
    gq_imatrix             imatrix;        /* n == 0: none */
    gq_kv_override        *kv;             /* the --override-kv ones, then the imatrix keys */
    size_t                 n_kv;
    ggufq_requant_options  opts;           /* as checked; points only at the copies below */
    char                  *imatrix_path;   /* copies of the caller's */
    int32_t               *prune_layers;
} gq_plan_source;

struct ggufq_plan {
    ggufq_plan_entry *entries;   /* in output order */
    int64_t           n;
    uint32_t          file_type;
    bool              pure;      /* no recipe rules: a bare type, or opts->pure */
    int              *shard;     /* input shard of each entry */
    int64_t          *index;     /* tensor index inside that shard */
    char            **names;     /* owned copies of the names */
    uint64_t          n_weights; /* all tensors */
    uint64_t          in_total, out_total;
    /* with --prune-layers */
    char            **imatrix_names;   /* the input's name of each entry (its imatrix entry); NULL: none pruned */
    char              arch[128];       /* general.architecture */
    int64_t           block_count_in;  /* <arch>.block_count of the input */
    int64_t           block_count_out; /* written as <arch>.block_count (llama.cpp's count) */
    gq_plan_source   *source;          /* owned; NULL: planned over shards the caller holds */
};

/* The name a plan entry's imatrix row has (its input name when blocks were renumbered). */
static inline const char *gq_plan_imatrix_name(const struct ggufq_plan *p, int64_t i)
{
    return p->imatrix_names ? p->imatrix_names[i] : p->entries[i].name;
}

/* The target as llama-quantize reads it (gq_resolve_target), or the error naming it. */
int gq_plan_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe,
                   ggufq_error *err);
/*
 * Plan over opened shards, in llama.cpp's processing order (has_imatrix: an
 * imatrix was given). gq_plan_build fills every entry field but uses_imatrix,
 * which gq_plan_mark_imatrix sets (false until then).
 */
int gq_plan_make(const gq_shards *s, const ggufq_requant_options *opts, bool has_imatrix,
                 ggufq_plan **out, ggufq_error *err);
/*
 * Which entries get a row of im (im_name: its path, for messages), and the
 * refusals the run would meet (a row of the wrong size; none for a tensor
 * whose type needs one): the run uses exactly the rows marked here.
 */
int gq_plan_mark_imatrix(ggufq_plan *p, const gq_imatrix *im, const char *im_name, ggufq_error *err);
/* Close and free what src holds, and src (NULL: nothing). */
void gq_plan_source_free(gq_plan_source *src);
/*
 * order[0..n-1] = indices of in[] in llama.cpp's processing and writing order
 * (layer number, then name), by the comparison gq_plan_make sorts with.
 */
int gq_plan_order(const gq_plan_input *in, int64_t n, int64_t *order);

/* ------------------------------------------------------------------------- */
/* Execution (run.c)                                                         */
/* ------------------------------------------------------------------------- */

typedef struct gq_run {
    const gq_shards         *in;
    const ggufq_plan        *plan;
    const gq_imatrix        *imatrix;   /* NULL: none */
    const ggufq_requant_options *opts;
    const gq_kv_override    *kv;
    size_t                   n_kv;
    const char *const       *out_paths;  /* one per output file (shards with keep_split) */
    int                      n_out;
    ggufq_progress_fn        progress;
    void                    *user_data;
    int                      nthreads;
} gq_run;

int gq_run_requant(const gq_run *run, ggufq_error *err);

#endif
