/*
 * fp8.h — the 8-bit scale formats of the FP4 block types, with ggml's exact
 * conversions (ggml-impl.h).
 *  - E8M0 (MXFP4): a bare power-of-two exponent, 2^(e - 127). MXFP4 codebook
 *    values are stored doubled, so the kernels use half the scale, 2^(e - 128);
 *    e = 0 and 1 give F32 subnormals, e = 255 gives 2^127 (ggml has no NaN).
 *  - UE4M3 (NVFP4): unsigned, 4 exponent bits (bias 7), 3 mantissa bits, also
 *    returned halved. 0x00 and 0x7F decode to 0; the top bit is ignored.
 */
#ifndef GGUFQ_FP8_H
#define GGUFQ_FP8_H

#include <math.h>
#include <stdint.h>

#include "fp16.h"

/* 2^(e - 128): half the E8M0 scale. */
static inline float gq_e8m0_to_fp32_half(uint8_t e)
{
    if (e < 2) /* 2^-128 and 2^-127 are subnormal: mantissa bit 21 or 22 */
        return gq_f32_from_bits(0x00200000u << e);
    return gq_f32_from_bits((uint32_t)(e - 1) << 23);
}

/* Half the value of a UE4M3 byte (exact in F32). */
static inline float gq_ue4m3_to_fp32(uint8_t x)
{
    if (x == 0 || x == 0x7F)
        return 0.0f;
    const int exp = (x >> 3) & 0xF;
    const int man = x & 0x7;
    const float raw = exp == 0 ? ldexpf((float)man, -9)
                               : ldexpf(1.0f + (float)man / 8.0f, exp - 7);
    return raw * 0.5f;
}

/*
 * The UE4M3 byte for a positive scale, as ggml rounds it: values <= 0 or NaN
 * give 0, values are clamped to 448, subnormals round half up, normals round
 * on the first dropped mantissa bit only (half away from zero), and anything
 * that would reach exponent 15 saturates to 0x7E (448).
 */
static inline uint8_t gq_fp32_to_ue4m3(float x)
{
    if (!(x > 0.0f))
        return 0;
    if (x > 448.0f)
        x = 448.0f;
    const uint32_t bits = gq_f32_bits(x);
    int exp = (int)((bits >> 23) & 0xFF) - 127 + 7;
    if (exp <= 0) {
        int man = (int)(x * 512.0f + 0.5f);
        if (man > 7)
            man = 7;
        return man < 1 ? 0 : (uint8_t)man;
    }
    if (exp >= 15)
        return 0x7E;
    int man = (int)((bits >> 20) & 0x7) + (int)((bits >> 19) & 1);
    if (man > 7) {
        man = 0;
        if (++exp >= 15)
            return 0x7E;
    }
    return (uint8_t)((exp << 3) | man);
}

#endif
