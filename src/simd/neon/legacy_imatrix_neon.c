/*
 * legacy_imatrix_neon.c — placeholder: the scalar importance-matrix
 * quantizers of Q4_0, Q4_1, Q5_0, Q5_1 (src/quants/legacy.c) until the
 * neon lane versions land.
 */
#include "quants/quants.h"
#include "simd/legacy_imatrix.h"

#define FORWARD(t)                                                                      \
    int gq_neon_quantize_##t##_imatrix(const float *src, void *dst, int64_t nrows,    \
                                         int64_t n_per_row, const float *imatrix)       \
    {                                                                                   \
        return gq_quantize_##t(src, dst, nrows, n_per_row, imatrix);                    \
    }
FORWARD(q4_0)
FORWARD(q4_1)
FORWARD(q5_0)
FORWARD(q5_1)
