/*
 * stream_sse2.c — the baseline x86-64 streaming copy (simd/stream.h): SSE2
 * is part of every x86-64 CPU, so this runs where neither AVX2 nor AVX-512
 * does (GGUFQ_ISA=scalar included). Built with baseline flags.
 */
#if defined(__AVX__) || defined(__AVX2__) || defined(__AVX512F__)
#error "stream_sse2.c must be compiled for the baseline CPU (no -mavx*, no -march=native)"
#endif

#include "simd/stream.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#include <stdint.h>
#include <string.h>

/* The 16-byte aligned middle with non-temporal stores, four to a line. */
void gq_sse2_stream_copy(void *dst_, const void *src_, size_t n)
{
    uint8_t *dst = dst_;
    const uint8_t *src = src_;
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) {   /* a whole line per iteration when dst is line aligned */
        _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(const void *)(src + i)));
        _mm_stream_si128((__m128i *)(void *)(dst + i + 16),
                         _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16)));
        _mm_stream_si128((__m128i *)(void *)(dst + i + 32),
                         _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32)));
        _mm_stream_si128((__m128i *)(void *)(dst + i + 48),
                         _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48)));
    }
    for (; i + 16 <= n; i += 16)
        _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(const void *)(src + i)));
    memcpy(dst + i, src + i, n - i);
}
#endif
