/*
 * iq_util_avx2.h — lane helpers shared by the AVX2 IQ quantizer files
 * (iq_quant_avx2.c, iq1_quant_avx2.c, iq3_quant_avx2.c), and the searches
 * the IQ1 and IQ3 files give iq_quant_avx2.c for its table.
 */
#ifndef GGUFQ_SIMD_IQ_UTIL_AVX2_H
#define GGUFQ_SIMD_IQ_UTIL_AVX2_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "quants/iqsearch.h"
#include "simd/x86_quant.h"


/* Lane i set for i < count (count <= 8): an all-ones int per lane. */
static inline __m256i first_lanes(int count)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane);
}

static inline float hmin8(__m256 v)
{
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/*
 * Running best of a neighbour search, updated with 8 candidate distances
 * (lanes `valid`, a movemask): the scalar's `if (d2 < best_d2)` over the
 * lanes in order. Returns the lane of the new best, or -1.
 */
static inline int take_best_lane(__m256 d2, int valid, float *best_d2)
{
    const int lt = _mm256_movemask_ps(_mm256_cmp_ps(d2, _mm256_set1_ps(*best_d2), _CMP_LT_OQ)) & valid;
    if (!lt)
        return -1;
    const __m256 ltv = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(lt), _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
        _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)));
    const float mn = hmin8(_mm256_blendv_ps(_mm256_set1_ps(INFINITY), d2, ltv));
    const int eq = _mm256_movemask_ps(_mm256_cmp_ps(d2, _mm256_set1_ps(mn), _CMP_EQ_OQ)) & lt;
    *best_d2 = mn;
    return __builtin_ctz(eq);
}


/* iq3_quant_avx2.c */
int  gq_iq3_round4_avx2(const gq_iq3_search *t, const float *xval, const float *waux, float id,
                        float scale, int8_t *L);
int  gq_iq3_trials_avx2(const gq_iq3_search *t, const float *xval, const float *weight,
                        const float *waux, int ntrials, const float *ids, const float *scales,
                        gq_iq3_trial_out *out);
/* fp4_avx2.c: gq_ue4m3_to_fp32(x) for every byte x, filled by gq_avx2_prepare_fp4 */
extern const float *const gq_avx2_ue4m3_half;
/* iq1_quant_avx2.c */
bool gq_iq1s_split_avx2(const float *sumx, const float *sumw, int *i1, int *i2, int *shift,
                        float *scale_io);
bool gq_iq1m_split_avx2(const gq_iq1m_sums *s, int *i1, int *i2, int *k, float *scale_io);
void gq_iq1_sort_avx2(int n, const float *xb, int32_t *order);

#endif
