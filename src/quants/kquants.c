/* kquants.c — placeholder: kernels not written yet. */
#include "quants.h"

void gq_dequantize_q2_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q2_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_q3_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q3_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_q4_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q4_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_q5_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q5_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_q6_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q6_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_q8_K(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_q8_K(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
