/* ternary.c — placeholder: kernels not written yet. */
#include "quants.h"

void gq_dequantize_tq1_0(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_tq1_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_tq2_0(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_tq2_0(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
