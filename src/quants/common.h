/*
 * common.h — tiny inline helpers every scalar kernel family uses (block layouts:
 * common/blocks.h, included here).
 */
#ifndef GGUFQ_QUANTS_COMMON_H
#define GGUFQ_QUANTS_COMMON_H

#include <stdint.h>
#include <string.h>

#include "common/blocks.h"
#include "fp16.h"

/* Thresholds below which ggml treats a group as all zeros. */
#define GQ_GROUP_MAX_EPS         1e-15f
#define GQ_GROUP_MAX_EPS_IQ3_XXS 1e-8f
#define GQ_GROUP_MAX_EPS_IQ2_S   1e-8f
#define GQ_GROUP_MAX_EPS_IQ1_M   1e-7f
#define GQ_GROUP_MAX_EPS_IQ1_S   1e-12f


#define GQ_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GQ_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * Round to nearest, ties to even, for |x| < 2^22: adding 1.5*2^23 pushes the
 * fraction out of the mantissa and lets the FPU round. ggml rounds this way
 * (not with roundf) in the K- and IQ-quants, so results depend on it.
 * Out-of-range or NaN inputs give the same garbage ggml's does.
 */
static inline int gq_nearest_int(float x)
{
    const float v = x + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007FFFFF) - 0x00400000;
}

/*
 * a * b and a + b with a's NaN when both operands are NaN. x86 returns the
 * NaN of an instruction's first source, and compilers commute * and +
 * (plain C and intrinsics alike; gcc and clang each differently at -O0 and
 * -O2), so which of two NaNs a plain a * b gives depends on the build.
 * These give a's, made quiet as the hardware does, whenever a is NaN; for
 * values compared bit for bit between kernels (the SIMD ones pin it the
 * same way).
 */
static inline float gq_quiet_nan(float a)
{
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    u |= 0x00400000u;
    memcpy(&a, &u, sizeof a);
    return a;
}
static inline float gq_mul_nan_a(float a, float b) { return a != a ? gq_quiet_nan(a) : a * b; }
static inline float gq_add_nan_a(float a, float b) { return a != a ? gq_quiet_nan(a) : a + b; }

/* Index of the entry of the sorted table val[0..n) nearest to x (ties: the upper one). */
static inline int gq_best_index_int8(int n, const int8_t *val, float x)
{
    if (x <= val[0])
        return 0;
    if (x >= val[n - 1])
        return n - 1;
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < val[mid])
            hi = mid;
        else
            lo = mid;
    }
    return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}

#endif
