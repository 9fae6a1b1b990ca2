/*
 * iq3_quant_avx512.c — AVX-512 searches of the IQ3 (IQ3_XXS, IQ3_S) quantizers.
 * SIMD twin of the searches of src/quants/iq3.c; iq_quant_avx512.c puts them
 * in its search table (iqsearch.h).
 *  - iq3_round4: one quad, its neighbours 16 candidates per vector.
 *  - iq3_trials: AVX2's (iq3_quant_avx2.c, 8 candidates per vector). A
 *    16-lane version was here: on Zen 4, where a 512-bit operation costs
 *    two 256-bit ones, it lost to AVX2's by 12-13 % (IQ3_XXS: 5285 vs 4673
 *    TSC ticks per group of 32 weights; IQ3_S: 3235 vs 2801), and so did
 *    whole quantizers (IQ3_XXS 12.0 vs 13.3, IQ3_S 18.7 vs 21.4 Mw/s),
 *    since most neighbour lists (2 to 8 points for the 256-grid) leave
 *    half of 16 lanes idle.
 */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "quants/tables.h"
#include "simd/simd.h"
#include "simd/avx512/iq_util_avx512.h"

/* ------------------------------------------------------------------------- */
/* 4-dimensional grids (IQ3)                                                 */
/* ------------------------------------------------------------------------- */

int gq_iq3_round4_avx512(const gq_iq3_search *t, const float *xval, const float *waux,
                         float id, float scale, int8_t *L)
{
    const __m128 x = _mm_loadu_ps(xval);
    const __m128 v = _mm_mul_ps(_mm_set1_ps(0.5f),
                                _mm_sub_ps(_mm_mul_ps(_mm_set1_ps(id), x), _mm_set1_ps(1.0f)));
    __m128i l = gq_x86_nearest_int4(v);
    l = _mm_max_epi32(_mm_setzero_si128(), _mm_min_epi32(_mm_set1_epi32(7), l));
    const uint32_t packed = (uint32_t)_mm_cvtsi128_si32(_mm_cvtepi32_epi8(l));
    memcpy(L, &packed, 4);
    __m128i k = _mm_sllv_epi32(l, _mm_setr_epi32(0, 3, 6, 9));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0x4E));
    k = _mm_or_si128(k, _mm_shuffle_epi32(k, 0xB1));
    const int key = _mm_cvtsi128_si32(k);
    if (t->grid_index[key] >= 0)
        return 1;

    /* term[8i + l] = waux[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const __m512 q = _mm512_setr_ps(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i pick01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i pick23 = _mm512_add_epi32(pick01, _mm512_set1_epi32(2));
    const __m512 x4 = _mm512_castps128_ps512(x);
    const __m512 w4 = _mm512_castps128_ps512(_mm_loadu_ps(waux));
    const __m512 s = _mm512_set1_ps(scale);
    const __m512 d01 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick01, x4));
    const __m512 d23 = _mm512_sub_ps(_mm512_mul_ps(s, q), _mm512_permutexvar_ps(pick23, x4));
    const __m512 tab01 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick01, w4), d01), d01);
    const __m512 tab23 = _mm512_mul_ps(_mm512_mul_ps(_mm512_permutexvar_ps(pick23, w4), d23), d23);

    const uint16_t *list = t->neighbours + t->list_start[key];
    const int n = list[0];
    const int *lanes = (const int *)t->lane_index;
    float best_d2 = FLT_MAX;
    int best = -1;
    for (int j = 0; j < n; j += 16) {
        const __mmask16 valid = first_lanes(n - j);
        const __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(valid, list + 1 + j));
        const __m512i li = _mm512_i32gather_epi32(idx, lanes, 4);
        __m512 d2 = _mm512_setzero_ps();
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, li, tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 8), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 16), tab23));
        d2 = _mm512_add_ps(d2, _mm512_permutex2var_ps(tab01, _mm512_srli_epi32(li, 24), tab23));
        const int lane = take_best_lane(d2, valid, &best_d2);
        if (lane >= 0)
            best = list[1 + j + lane];
    }
    if (best < 0)
        return -1;
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((t->coord[best][i] - 1) / 2);
    return 0;
}

/* AVX2's trial search (see the top of this file). */
int gq_iq3_trials_avx512(const gq_iq3_search *t, const float *xval, const float *weight,
                         const float *waux, int ntrials, const float *ids,
                         const float *scales, gq_iq3_trial_out *out)
{
    return gq_iq_search_avx2.iq3_trials(t, xval, weight, waux, ntrials, ids, scales, out);
}
