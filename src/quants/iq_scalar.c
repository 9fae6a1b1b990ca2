/*
 * iq_scalar.c — the scalar IQ quantizers: each family's driver (iq1.c, iq2.c,
 * iq3.c) run with the scalar grid searches. A SIMD quantizer calls the same
 * drivers with its own gq_iq_search_ops; keeping this table out of the
 * drivers' files means no file of quants/ calls back into one that calls it.
 */
#include "iqsearch.h"
#include "quants.h"

const gq_iq_search_ops gq_iq_search_scalar = {
    .nearest8   = gq_iq_nearest8_scalar,
    .iq2_round8 = gq_iq2_round8_scalar,
    .iq2_trials = gq_iq2_trials_scalar,
    .iq2_search = gq_iq2_search_scalar,
    .iq2_prep   = gq_iq2_prep_scalar,
    .iq3_round4 = gq_iq3_round4_scalar,
    .iq3_trials = gq_iq3_trials_scalar,
    .iq1s_split = gq_iq1s_split_scalar,
    .iq1m_split = gq_iq1m_split_scalar,
    .iq1_sort   = gq_iq1_sort_scalar,
};

int gq_quantize_iq1_s(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    return gq_quantize_iq1_s_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq1_m(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    return gq_quantize_iq1_m_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq2_xxs(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                        const float *imatrix)
{
    return gq_quantize_iq2_xxs_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq2_xs(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix)
{
    return gq_quantize_iq2_xs_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq2_s(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    return gq_quantize_iq2_s_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq3_xxs(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                        const float *imatrix)
{
    return gq_quantize_iq3_xxs_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}

int gq_quantize_iq3_s(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix)
{
    return gq_quantize_iq3_s_ops(&gq_iq_search_scalar, src, dst, nrows, n_per_row, imatrix);
}
