/*
 * iq_util_avx512.h — lane helpers shared by the AVX-512 IQ quantizer files
 * (iq_quant_avx512.c, iq1_quant_avx512.c, iq3_quant_avx512.c), and the searches
 * the IQ1 and IQ3 files give iq_quant_avx512.c for its table.
 */
#ifndef GGUFQ_SIMD_IQ_UTIL_AVX512_H
#define GGUFQ_SIMD_IQ_UTIL_AVX512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "quants/iqsearch.h"
#include "simd/x86_quant.h"


/*
 * Running best of a neighbour search, updated with 16 candidate distances
 * (lanes `valid`): the scalar's `if (d2 < best_d2)` over the lanes in order.
 * Returns the lane of the new best, or -1 if no lane beats *best_d2.
 */
static inline int take_best_lane(__m512 d2, __mmask16 valid, float *best_d2)
{
    const __mmask16 lt = _mm512_mask_cmp_ps_mask(valid, d2, _mm512_set1_ps(*best_d2), _CMP_LT_OQ);
    if (!lt)
        return -1;
    const float mn = _mm512_reduce_min_ps(_mm512_mask_blend_ps(lt, _mm512_set1_ps(INFINITY), d2));
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(lt, d2, _mm512_set1_ps(mn), _CMP_EQ_OQ);
    *best_d2 = mn;
    return __builtin_ctz(eq);
}

static inline __mmask16 first_lanes(int count)
{
    return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1);
}


/* iq3_quant_avx512.c */
int  gq_iq3_round4_avx512(const gq_iq3_search *t, const float *xval, const float *waux, float id,
                          float scale, int8_t *L);
int  gq_iq3_trials_avx512(const gq_iq3_search *t, const float *xval, const float *weight,
                          const float *waux, int ntrials, const float *ids, const float *scales,
                          gq_iq3_trial_out *out);
/* iq1_quant_avx512.c */
bool gq_iq1s_split_avx512(const float *sumx, const float *sumw, int *i1, int *i2, int *shift,
                          float *scale_io);
bool gq_iq1m_split_avx512(const gq_iq1m_sums *s, int *i1, int *i2, int *k, float *scale_io);
void gq_iq1_sort_avx512(int n, const float *xb, int32_t *order);

#endif
