/*
 * metrics.h — the error sums behind ggufq_metrics, and the chunked, threaded
 * evaluation that ggufq_tensor_error, ggufq_diff_files and ggufq_stats_run
 * share. Not public API.
 *
 * Determinism: a tensor's rows fall in groups of G = ggufq_metrics_group_rows
 * (ncols) rows (group k: rows [kG, (k+1)G)). A group's sums start at zero
 * and take its rows in order; a tensor's sums are its groups' sums added in
 * order. Each row's sums run over 8 interleaved lanes combined in a fixed
 * tree. Chunks are whole groups, each group is one task: the result does not
 * depend on threads, chunk size or ISA (this file is built for the baseline
 * ISA, with no FMA contraction).
 */
#ifndef GGUFQ_API_METRICS_H
#define GGUFQ_API_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

typedef struct gq_err_sums {
    double  sdd, saa, sbb, sab;   /* sum (a-b)^2, a^2, b^2, ab */
    double  wrows;                /* sum over rows of the row's weighted mean square */
    double  max;                  /* largest |a-b| (NaN differences: max_nan) */
    bool    max_nan;
    bool    identical;
    int64_t n, rows;
} gq_err_sums;

/* Importance weights: row r uses w + ((r / slice_rows) % n_slices) * ncols. */
typedef struct gq_err_importance {
    const float *w;          /* NULL: none */
    int64_t      slice_rows;
    int64_t      n_slices;
} gq_err_importance;

void gq_err_sums_init(gq_err_sums *s);
/* Rows [r0, r1) (absolute indices, for the importance slice); a and b hold
 * those rows (b == a: a compared with itself, identical). */
void gq_err_sums_rows(gq_err_sums *s, const float *a, const float *b, int64_t r0, int64_t r1,
                      int64_t ncols, const gq_err_importance *im);
/* into += g, field by field (in group order). */
void gq_err_sums_add(gq_err_sums *into, const gq_err_sums *g);
void gq_err_sums_finish(const gq_err_sums *s, bool has_w, ggufq_metrics *out);

/* A tensor's chunks, evaluated on a pool of threads made on first need. */
typedef struct gq_err_ctx gq_err_ctx;

gq_err_ctx *gq_err_ctx_new(int nthreads);
void        gq_err_ctx_free(gq_err_ctx *c);
/* Rows per chunk for rows of ncols weights: whole groups, about 1 Mi weights. */
int64_t     gq_err_chunk_rows(int64_t ncols);

/*
 * One chunk, rows [r0, r1) (r0 a multiple of the group rows): a is decoded
 * from a_type bytes a_rows (or taken as is: a_type F32 with a_f32 given),
 * b from b_type bytes b_rows, or, when requant_type >= 0, made by quantizing
 * a to requant_type (with im, as ggufq_quantize) and decoding it; b_rows
 * NULL and requant_type < 0: b is a. Adds the chunk's groups to *total in
 * order. Returns GGUFQ_OK or a kernel's status (the lowest group's).
 */
typedef struct gq_err_chunk {
    ggufq_type     a_type;
    const uint8_t *a_rows;      /* row r0's bytes */
    const float   *a_f32;       /* or: row r0's floats, already decoded */
    ggufq_type     b_type;
    const uint8_t *b_rows;
    int            requant_type;
    int64_t        r0, r1, ncols;
    const gq_err_importance *quant_im;   /* importance the quantizer gets (requant_type) */
    const gq_err_importance *metric_im;  /* importance of wmse */
} gq_err_chunk;

int gq_err_chunk_run(gq_err_ctx *c, const gq_err_chunk *ch, gq_err_sums *total);
/* The chunk's decoded a (after gq_err_chunk_run decoded it), r0's row first. */
const float *gq_err_ctx_a(const gq_err_ctx *c);
/* Decode rows of `type` into the ctx's a buffer (threaded) and return it; NULL if out of memory. */
float *gq_err_decode_a(gq_err_ctx *c, ggufq_type type, const uint8_t *rows, int64_t nrows, int64_t ncols,
                       int *status);

#endif
