/*
 * test_sleef.c — the vector math the x86 quantizers take from SLEEF (or
 * derive from bits) gives exactly what the scalar kernels get from libm.
 *
 *  - Sleef_roundf8_avx2 == roundf on all 2^32 float bit patterns (NaN:
 *    both NaN; libm itself called where rounding happens, sampled elsewhere);
 *    used by the AVX2 Q8_0, Q2_0, TQ1_0 and TQ2_0 quantizers.
 *  - The MXFP4 exponent shortcut (fp4_avx2.c): for a normal a whose
 *    mantissa field is below 0x7FF000, floorf(log2f(a)) is its exponent;
 *    checked for every exponent on a stride of mantissas plus every
 *    mantissa of the last 4096 before the cut.
 * Each check skips when the CPU lacks the ISA.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#if !defined(__clang__) /* clang has no target pragma; the function below carries the attribute */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#include <immintrin.h>
#include <sleef.h>
#if !defined(__AVX2__)
/* clang: sleef.h declares its AVX2 functions only under __AVX2__, which an
 * attribute does not define; this file must not be built with -mavx2 (it
 * runs on CPUs without AVX2), so the one function used is declared here */
__attribute__((target("avx2,fma"))) __m256 Sleef_roundf8_avx2(__m256);
#endif

static int same_or_both_nan(float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return ua == ub || (a != a && b != b);
}

/*
 * Mismatches of Sleef_roundf8_avx2 against roundf over all 2^32 patterns.
 * libm is called on every pattern with 0.25 <= |x| < 2^23 (the only ones
 * where rounding does anything) and on every 64th group of 8 elsewhere; the
 * rest are checked against what libm returns there (and is seen returning
 * in the sampled groups): the signed zero for |x| < 0.25, x itself for
 * larger |x| and Inf, NaN for NaN.
 */
__attribute__((target("avx2,fma"))) static uint64_t roundf8_mismatches(void)
{
    uint64_t bad = 0;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 quarter = _mm256_set1_ps(0.25f);
    for (uint64_t i = 0; i < (1ull << 32); i += 8) {
        const __m256 x = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)i),
                                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
        const __m256 r = Sleef_roundf8_avx2(x);
        const uint32_t expo = (uint32_t)(i >> 23) & 0xFF;
        if ((expo >= 125 && expo < 150) || i % 512 == 0) {
            float in[8], out[8];
            _mm256_storeu_ps(in, x);
            _mm256_storeu_ps(out, r);
            for (int k = 0; k < 8; k++)
                if (!same_or_both_nan(out[k], roundf(in[k])) && bad++ < 5)
                    fprintf(stderr, "roundf(%a): libm %a, Sleef_roundf8_avx2 %a\n", in[k], roundf(in[k]), out[k]);
            continue;
        }
        const __m256 small = _mm256_cmp_ps(_mm256_and_ps(x, abs_mask), quarter, _CMP_LT_OQ);
        const __m256 want = _mm256_blendv_ps(x, _mm256_andnot_ps(abs_mask, x), small);
        const __m256 same = _mm256_or_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_castps_si256(r), _mm256_castps_si256(want))),
            _mm256_and_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), _mm256_cmp_ps(want, want, _CMP_UNORD_Q)));
        bad += (uint64_t)(8 - __builtin_popcount((unsigned)_mm256_movemask_ps(same)));
    }
    return bad;
}
#if !defined(__clang__)
#pragma GCC pop_options
#endif

static void test_roundf8_avx2_matches_libm(void **state)
{
    (void)state;
    if (!__builtin_cpu_supports("avx2"))
        skip();
    assert_int_equal(roundf8_mismatches(), 0);
}
#endif

static int exponent_shortcut_wrong(uint32_t bits)
{
    float a;
    memcpy(&a, &bits, 4);
    const float want = floorf(log2f(a));
    const float got = (float)((int)(bits >> 23) - 127);
    if (want != got) {
        fprintf(stderr, "floorf(log2f(%a)) = %g, exponent %g\n", a, want, got);
        return 1;
    }
    return 0;
}

static void test_mxfp4_exponent_shortcut(void **state)
{
    (void)state;
    int bad = 0;
    for (uint32_t e = 1; e <= 254 && bad < 5; e++) {
        for (uint32_t m = 0; m < 0x7FF000u; m += 61)
            bad += exponent_shortcut_wrong(e << 23 | m);
        for (uint32_t m = 0x7FE000u; m < 0x7FF000u; m++)
            bad += exponent_shortcut_wrong(e << 23 | m);
    }
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#if defined(__x86_64__) || defined(__i386__)
        cmocka_unit_test(test_roundf8_avx2_matches_libm),
#endif
        cmocka_unit_test(test_mxfp4_exponent_shortcut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
