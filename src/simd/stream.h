/*
 * stream.h — copies from an in-cache buffer to memory with non-temporal
 * stores as wide as the ISA has (whole 64-byte lines on AVX-512, half lines
 * on AVX2): ggufq_dequantize_to streams large outputs through them. Measured
 * on Zen 4 (one thread decoding q4_0 / q4_K to 256 MiB of F32 a stage at a
 * time), 32- and 64-byte stores wrote 10-20 % faster than SSE2's 16-byte
 * ones, which fill the store queue four times as fast and stall the next
 * stage's decoding behind them. Bit-for-bit copies of n bytes at any
 * alignment: the unaligned head and tail use plain stores. They do not
 * fence: the caller issues _mm_sfence() before anything reads dst.
 * gq_sse2_stream_copy (stream_sse2.c, baseline flags) is the one for CPUs
 * with neither; the others are in float_<isa>.c.
 */
#ifndef GGUFQ_SIMD_STREAM_H
#define GGUFQ_SIMD_STREAM_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__SSE2__)
#define GQ_HAVE_SSE2_STREAM_COPY 1
void gq_sse2_stream_copy(void *dst, const void *src, size_t n);
#endif
#if defined(__x86_64__) || defined(__i386__)
void gq_avx2_stream_copy(void *dst, const void *src, size_t n);
void gq_avx512_stream_copy(void *dst, const void *src, size_t n);
#endif

#endif
