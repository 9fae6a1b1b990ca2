/* float.c — placeholder: kernels not written yet. */
#include "quants.h"

void gq_dequantize_f32(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_f32(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_f16(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_f16(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_bf16(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
int gq_quantize_bf16(const float *src, void *dst, int64_t nrows, int64_t n_per_row, const float *imatrix)
{ (void)src; (void)dst; (void)nrows; (void)n_per_row; (void)imatrix; return GGUFQ_E_NOT_IMPLEMENTED; }
void gq_dequantize_f64(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
void gq_dequantize_i8(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
void gq_dequantize_i16(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
void gq_dequantize_i32(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
void gq_dequantize_i64(const void *src, float *dst, int64_t n) { (void)src; (void)dst; (void)n; }
