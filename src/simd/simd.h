/*
 * simd.h — how per-ISA kernel files plug into dispatch.
 *
 * Each SIMD file covers one type family for one ISA (the twin of one scalar
 * file in src/quants) and exports one fill function that overwrites the rows
 * of its types in a kernel table: members it sets replace the scalar kernel,
 * members it leaves alone keep it. dispatch.c calls a fill function only
 * after checking that the CPU and OS run that ISA, since the function itself
 * is compiled with that ISA's flags.
 *
 * Every SIMD kernel gives output bit-identical to its scalar twin.
 */
#ifndef GGUFQ_SIMD_H
#define GGUFQ_SIMD_H

#include "quants/quants.h"

typedef void (*gq_fill_fn)(gq_kernels table[GGUFQ_TYPE_COUNT]);

#define GQ_SIMD_FAMILIES(isa)                                  \
    void gq_##isa##_fill_float(gq_kernels t[GGUFQ_TYPE_COUNT]);   \
    void gq_##isa##_fill_legacy(gq_kernels t[GGUFQ_TYPE_COUNT]);  \
    void gq_##isa##_fill_lowbit(gq_kernels t[GGUFQ_TYPE_COUNT]);  \
    void gq_##isa##_fill_kquants(gq_kernels t[GGUFQ_TYPE_COUNT]); \
    void gq_##isa##_fill_kquants_quant(gq_kernels t[GGUFQ_TYPE_COUNT]); \
    void gq_##isa##_fill_iq1(gq_kernels t[GGUFQ_TYPE_COUNT]);     \
    void gq_##isa##_fill_iq2(gq_kernels t[GGUFQ_TYPE_COUNT]);     \
    void gq_##isa##_fill_iq3(gq_kernels t[GGUFQ_TYPE_COUNT]);     \
    void gq_##isa##_fill_iq4(gq_kernels t[GGUFQ_TYPE_COUNT]);     \
    void gq_##isa##_fill_ternary(gq_kernels t[GGUFQ_TYPE_COUNT]); \
    void gq_##isa##_fill_fp4(gq_kernels t[GGUFQ_TYPE_COUNT]);     \
    void gq_##isa##_fill_iq_quant(gq_kernels t[GGUFQ_TYPE_COUNT]);

#if defined(__x86_64__) || defined(__i386__)
GQ_SIMD_FAMILIES(avx2)
GQ_SIMD_FAMILIES(avx512)
#elif defined(__aarch64__)
GQ_SIMD_FAMILIES(neon)
#endif

#undef GQ_SIMD_FAMILIES

#endif
