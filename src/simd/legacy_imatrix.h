/*
 * legacy_imatrix.h — the importance-matrix quantizers of Q4_0, Q4_1, Q5_0
 * and Q5_1 per ISA, called by that ISA's legacy quantizers (legacy_<isa>.c)
 * when they are given an imatrix. Defined in <isa>/legacy_imatrix_<isa>.c;
 * same contract and bytes as gq_quantize_<t> in src/quants/legacy.c.
 */
#ifndef GGUFQ_LEGACY_IMATRIX_H
#define GGUFQ_LEGACY_IMATRIX_H

#include <stdint.h>

#define GQ_LEGACY_IMATRIX(isa, t)                                                      \
    int gq_##isa##_quantize_##t##_imatrix(const float *src, void *dst, int64_t nrows,  \
                                          int64_t n_per_row, const float *imatrix);
#define GQ_LEGACY_IMATRIX_ISA(isa) \
    GQ_LEGACY_IMATRIX(isa, q4_0) GQ_LEGACY_IMATRIX(isa, q4_1) \
    GQ_LEGACY_IMATRIX(isa, q5_0) GQ_LEGACY_IMATRIX(isa, q5_1)

#if defined(__x86_64__) || defined(__i386__)
GQ_LEGACY_IMATRIX_ISA(avx2)
GQ_LEGACY_IMATRIX_ISA(avx512)
#elif defined(__aarch64__)
GQ_LEGACY_IMATRIX_ISA(neon)
#endif

#undef GQ_LEGACY_IMATRIX_ISA
#undef GQ_LEGACY_IMATRIX

#endif
