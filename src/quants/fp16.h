/*
 * fp16.h — scalar conversions between F32 and the small float formats used
 * inside blocks (IEEE half, bfloat16), with ggml's exact results:
 *  - F32 -> F16 rounds to nearest even; overflow gives Inf; every NaN
 *    becomes 0x7E00 with the sign kept (ggml does not keep NaN payloads).
 *  - F16 -> F32 is exact (NaN payloads shifted into place, made quiet).
 *  - F32 -> BF16 rounds to nearest even; NaN is made quiet by setting bit 6.
 */
#ifndef GGUFQ_FP16_H
#define GGUFQ_FP16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t gq_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float gq_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float gq_fp16_to_fp32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp  = (h >> 10) & 0x1Fu;
    const uint32_t man  = h & 0x3FFu;
    if (exp == 0x1F) /* Inf / NaN: widen the payload; NaNs come out quiet, as in ggml */
        return gq_f32_from_bits(sign | 0x7F800000u | (man ? 0x400000u : 0u) | (man << 13));
    if (exp != 0)
        return gq_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    /* zero or subnormal: man * 2^-24 is exact in F32 */
    const float mag = (float)man * 5.9604644775390625e-08f;
    return gq_f32_from_bits(sign | gq_f32_bits(mag));
}

static inline uint16_t gq_fp32_to_fp16(float f)
{
    const uint32_t x    = gq_f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)            /* NaN */
        return sign | 0x7E00u;
    if (ax >= 0x477FF000u)           /* rounds to >= 65536: Inf */
        return sign | 0x7C00u;
    if (ax < 0x38800000u) {          /* below 2^-14: F16 subnormal or zero */
        /* Adding 0.5 aligns the F16 subnormal ulp (2^-24) with the F32 ulp
         * of 0.5, so the FPU does the round-to-nearest-even for us. */
        const float r = gq_f32_from_bits(ax) + 0.5f;
        return sign | (uint16_t)(gq_f32_bits(r) - 0x3F000000u);
    }
    /* normal: rebias the exponent and round the 13 dropped bits to even */
    ax += 0xC8000FFFu + ((ax >> 13) & 1u);
    return sign | (uint16_t)(ax >> 13);
}

static inline float gq_bf16_to_fp32(uint16_t h)
{
    return gq_f32_from_bits((uint32_t)h << 16);
}

static inline uint16_t gq_fp32_to_bf16(float f)
{
    const uint32_t x = gq_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep the payload's top, force quiet */
        return (uint16_t)((x >> 16) | 64u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

#endif
