/*
 * float_avx512.h — the two AVX-512 F32 -> BF16 kernels, by name: the AVX-512
 * table lists both (the second needs AVX512_BF16, which dispatch checks), and
 * tests hold each one to the scalar reference whichever this CPU would pick.
 */
#ifndef GGUFQ_FLOAT_AVX512_H
#define GGUFQ_FLOAT_AVX512_H

#include <stdint.h>

/* gcc >= 10 and clang >= 9 have the AVX512_BF16 intrinsics (target attribute). */
#if defined(__clang__) ? __clang_major__ >= 9 : (defined(__GNUC__) && __GNUC__ >= 10)
#define GQ_HAVE_AVX512BF16_INTRINSICS 1
#endif

/* Integer rounding on 16 lanes; AVX-512 F/BW. */
int gq_avx512_quantize_bf16_int(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                                const float *imatrix);
#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
/* vcvtneps2bf16 with the subnormal fix-up; only where gq_cpu()->avx512bf16. */
int gq_avx512_quantize_bf16_ne(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix);
#endif

#endif
