/*
 * bench_bound.c — the "bound" of `ggufq bench`: how fast a kernel with a
 * type's byte shape but no decoding runs, i.e. what the memory system allows
 * that type. It reads the type's input bytes per output weight
 * (block_bytes / block_size: every 64-byte line of an input as large as the
 * type's), widens bytes to the output's width (u8 -> f32, or u8 -> u16 for
 * f16/bf16 outputs) and stores as many output bytes as the type's
 * dequantization does. A dequantizer cannot beat it by much: it reads and
 * writes the same lines and does more work per vector.
 *
 * The loop reads 16 * bytes-per-weight bytes per 16 outputs (32 for half
 * outputs with AVX-512) at a position kept in 32.32 fixed point, so every
 * input line is read whatever the ratio; loads past the input's end stay
 * inside BOUND_PAD bytes of padding.
 *
 * The CLI is compiled for the baseline CPU: the AVX2 and AVX-512 loops carry
 * target attributes and run only when ggufq_isa_supported() says the CPU and
 * OS can (the library's own check, as for --isa).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#if defined(__x86_64__) || defined(_M_X64)
#define BOUND_X86 1
#include <immintrin.h>
#elif defined(__aarch64__)
#define BOUND_NEON 1
#include <arm_neon.h>
#endif

#define BOUND_PAD 64   /* bytes after the input: the widest load starting inside it */

/* in: input bytes; step: input bytes per 16 outputs, 32.32 fixed point; n: outputs (a multiple of 32). */
typedef void (*bound_fn)(const uint8_t *in, uint64_t step, void *out, int64_t n);

/* ------------------------------------------------------------------------- */
/* The synthetic kernels                                                     */
/* ------------------------------------------------------------------------- */

static void bound_f32_generic(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    float *o = out;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 16, pos += step) {
        const uint8_t *p = in + (pos >> 32);
        for (int k = 0; k < 16; k++)
            o[i + k] = (float)p[k];
    }
}

static void bound_half_generic(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    uint16_t *o = out;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 16, pos += step) {
        const uint8_t *p = in + (pos >> 32);
        for (int k = 0; k < 16; k++)
            o[i + k] = p[k];
    }
}

#if defined(BOUND_X86)
__attribute__((target("avx2")))
static void bound_f32_avx2(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    float *o = out;
    const uint64_t half = step / 2;   /* 8 outputs per vector */
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 8, pos += half) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(in + (pos >> 32)));
        _mm256_storeu_ps(o + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)));
    }
}

__attribute__((target("avx2")))
static void bound_half_avx2(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    uint16_t *o = out;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 16, pos += step) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + (pos >> 32)));
        _mm256_storeu_si256((__m256i *)(void *)(o + i), _mm256_cvtepu8_epi16(b));
    }
}

__attribute__((target("avx512f")))
static void bound_f32_avx512(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    float *o = out;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 16, pos += step) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + (pos >> 32)));
        _mm512_storeu_ps(o + i, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)));
    }
}

__attribute__((target("avx512f,avx512bw")))
static void bound_half_avx512(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    uint16_t *o = out;
    const uint64_t twice = step * 2;   /* 32 outputs per vector */
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 32, pos += twice) {
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(in + (pos >> 32)));
        _mm512_storeu_si512((void *)(o + i), _mm512_cvtepu8_epi16(b));
    }
}
#endif

#if defined(BOUND_NEON)
static void bound_f32_neon(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    float *o = out;
    const uint64_t half = step / 2;   /* 8 outputs per step */
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 8, pos += half) {
        uint16x8_t w = vmovl_u8(vld1_u8(in + (pos >> 32)));
        vst1q_f32(o + i, vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))));
        vst1q_f32(o + i + 4, vcvtq_f32_u32(vmovl_high_u16(w)));
    }
}

static void bound_half_neon(const uint8_t *in, uint64_t step, void *out, int64_t n)
{
    uint16_t *o = out;
    uint64_t pos = 0;
    for (int64_t i = 0; i < n; i += 16, pos += step) {
        uint8x16_t b = vld1q_u8(in + (pos >> 32));
        vst1q_u16(o + i, vmovl_u8(vget_low_u8(b)));
        vst1q_u16(o + i + 8, vmovl_high_u8(b));
    }
}
#endif

/* The widest loop this CPU runs for the output width; its ISA's name in *isa. */
static bound_fn bound_pick(bool half, const char **isa)
{
#if defined(BOUND_X86)
    if (ggufq_isa_supported(GGUFQ_ISA_AVX512)) {
        *isa = "avx512";
        return half ? bound_half_avx512 : bound_f32_avx512;
    }
    if (ggufq_isa_supported(GGUFQ_ISA_AVX2)) {
        *isa = "avx2";
        return half ? bound_half_avx2 : bound_f32_avx2;
    }
#elif defined(BOUND_NEON)
    *isa = "neon";
    return half ? bound_half_neon : bound_f32_neon;
#endif
    *isa = "scalar";
    return half ? bound_half_generic : bound_f32_generic;
}

/* ------------------------------------------------------------------------- */
/* Timing                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct bound_case {
    bound_fn       fn;
    const uint8_t *in;
    uint64_t       step;
    void          *out;
} bound_case;

static void call_bound(void *ctx)
{
    bound_case *b = ctx;
    b->fn(b->in, b->step, b->out, BENCH_WEIGHTS);
}

const char *bench_bound_isa(void)
{
    const char *isa;
    bound_pick(false, &isa);
    return isa;
}

double bench_bound_time(ggufq_type type, bench_out out, double budget)
{
    const int64_t bs = ggufq_type_block_size(type);
    const size_t bb = ggufq_type_block_bytes(type);
    const size_t in_bytes = ggufq_row_size(type, BENCH_WEIGHTS);
    /* Up to 2 input bytes per weight: the widest load per step covers 32 outputs' worth. */
    if (bs <= 0 || in_bytes == 0 || bb > 2 * (size_t)bs)
        return 0;
    const bool half = out != OUT_F32;
    const char *isa;
    bound_case b = { bound_pick(half, &isa), NULL, ((uint64_t)(16 * bb) << 32) / (uint64_t)bs, NULL };
    uint8_t *in = aligned_alloc(64, (in_bytes + BOUND_PAD + 63) / 64 * 64);
    b.out = aligned_alloc(64, (size_t)BENCH_WEIGHTS * (half ? 2 : 4));
    double t = 0;
    if (in && b.out) {
        for (size_t k = 0; k < in_bytes + BOUND_PAD; k++)
            in[k] = (uint8_t)(k * 131u + 7u);
        b.in = in;
        t = bench_time_best(call_bound, &b, budget);
    }
    free(in);
    free(b.out);
    return t;
}
