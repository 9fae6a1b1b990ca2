/*
 * measure.h — what diff.c and stats.c share. Not public API.
 */
#ifndef GGUFQ_MEASURE_H
#define GGUFQ_MEASURE_H

#include "api/metrics.h"
#include "requant/requant_internal.h"

/*
 * The importance weights wmse uses for a tensor: its imatrix entry when the
 * size fits (ne0 * ne2, one slice per expert, or ne0), else none (w NULL).
 * diff and stats use the same rule, so their wmse agree.
 */
gq_err_importance gq_measure_importance(const gq_imatrix *im, const ggufq_tensor_info *t);

#endif
