/*
 * stats_cache.h — the --stats-cache file of ggufq_stats_run: measured
 * candidates keyed by the tensor's content hash, shape and type, the
 * candidate type, and hashes of the importance weights used. Not public API.
 */
#ifndef GGUFQ_STATS_CACHE_H
#define GGUFQ_STATS_CACHE_H

#include "api/metrics.h"

typedef struct gq_stats_cache gq_stats_cache;

/* Read path if it exists (a file of another format or version counts as empty). */
int  gq_stats_cache_open(const char *path, gq_stats_cache **out, ggufq_error *err);
/* Write the entries back (atomically: temporary file, rename) when keep and
 * something was added; frees c. Returns the status of the write. */
int  gq_stats_cache_close(gq_stats_cache *c, bool keep, ggufq_error *err);

/* The content hash of a tensor's bytes (pages released as they are hashed). */
uint64_t gq_stats_cache_hash(const ggufq_file *f, const ggufq_tensor_info *t);

/* Importance weights the quantizer and wmse used (w NULL: none), ne0 *
 * n_slices floats each. true and *m filled on a hit. */
bool gq_stats_cache_get(const gq_stats_cache *c, uint64_t hash, const ggufq_tensor_info *t, ggufq_type used,
                        const gq_err_importance *quant_w, const gq_err_importance *metric_w, ggufq_metrics *m);
void gq_stats_cache_put(gq_stats_cache *c, uint64_t hash, const ggufq_tensor_info *t, ggufq_type used,
                        const gq_err_importance *quant_w, const gq_err_importance *metric_w,
                        const ggufq_metrics *m);

#endif
