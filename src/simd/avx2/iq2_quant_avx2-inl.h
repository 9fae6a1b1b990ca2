/*
 * iq2_quant_avx2-inl.h — the 256-bit pieces of the IQ2 quantizer searches
 * shared by iq_quant_avx2.c and avx512/iq_quant_avx512.c (whose flags
 * include AVX2's): the trial runs (iq2_run, iq2_trials8), the trial scores
 * and the weights/sign preparation (iq2_prep8), written once here.
 *
 * Not a normal header: each file includes it once, after defining
 * GQ_ISA_NAME, its iq2_state (trials per vector: 24 or 32) and the passes
 * iq2_round_all, iq2_search_all and iq2_sum_all for its vector width.
 */
#ifndef GGUFQ_IQ2_QUANT_AVX2_INL_H
#define GGUFQ_IQ2_QUANT_AVX2_INL_H

/* Named per ISA (GQ_ISA_NAME), so nm and profiles tell the instantiations apart. */
#define iq2_run     GQ_ISA_NAME(iq2_run)
#define iq2_trials8 GQ_ISA_NAME(iq2_trials8)
#define iq2_scores  GQ_ISA_NAME(iq2_scores)
#define nan_a       GQ_ISA_NAME(nan_a)
#define iq2_prep8   GQ_ISA_NAME(iq2_prep8)

static int iq2_run(const gq_iqgrid *g, const float *xval, const float *weight, const float *waux,
                   iq2_state *st)
{
    iq2_round_all(g, xval, st);
    if (iq2_search_all(g, xval, waux, st) < 0)
        return -1;
    iq2_sum_all(xval, weight, st);
    return 0;
}

static int iq2_trials8(const gq_iqgrid *g, const float *xval, const float *weight,
                       const float *waux, int nsub, int ntrials, const float *ids,
                       const float *scales, gq_iq2_trial_out *out)
{
    iq2_state st;
    st.nsub = nsub;
    st.ntrials = ntrials;
    memset(st.ids, 0, sizeof st.ids);
    memcpy(st.ids, ids, sizeof(float) * (size_t)ntrials);
    memcpy(st.scales, scales, sizeof(float) * (size_t)ntrials);
    if (iq2_run(g, xval, weight, waux, &st) < 0)
        return -1;
    for (int t = 0; t < ntrials; ++t) {
        for (int k = 0; k < nsub; ++k) {
            int8_t *L = out->L + 8 * (nsub * t + k);
            memcpy(L, &st.wlo[k][t], 4);
            memcpy(L + 4, &st.whi[k][t], 4);
            out->on_grid[nsub * t + k] = !(st.off[k] >> t & 1);
        }
        out->sumqx[t] = st.sumqx[t];
        out->sumq2[t] = st.sumq2[t];
    }
    return 0;
}

/* Each trial's sumqx * sumqx, scale = sumqx / sumq2 and score = scale * sumqx. */
static void iq2_scores(iq2_state *st)
{
    for (int t0 = 0; t0 < st->ntrials; t0 += 8) {
        const __m256 qx = _mm256_loadu_ps(st->sumqx + t0), q2 = _mm256_loadu_ps(st->sumq2 + t0);
        const __m256 sc = _mm256_div_ps(qx, q2);
        _mm256_storeu_ps(st->sumqx2 + t0, _mm256_mul_ps(qx, qx));
        _mm256_storeu_ps(st->scale + t0, sc);
        _mm256_storeu_ps(st->score + t0, _mm256_mul_ps(sc, qx));
    }
}

/*
 * r = a * b or a + b, with a's NaN (made quiet) where a is NaN: which of two
 * NaN operands vmulps/vaddps return depends on how the compiler ordered them
 * (quants/common.h, gq_mul_nan_a); this pins it as the scalar kernel does.
 */
static inline __m256 nan_a(__m256 a, __m256 r)
{
    const __m256 quiet = _mm256_or_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x00400000)));
    return _mm256_blendv_ps(r, quiet, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}

/*
 * iq2_prep: a group's weights, square roots (vsqrtps rounds as sqrtf does),
 * magnitudes and signs, 8 weights per vector. The parity fix finds the
 * first least weight * xb * xb by a compare with the least value; NaN
 * there, or a NaN magnitude for the maximum (whose sequential result then
 * depends on the order), takes the scalar route.
 */
static float iq2_prep8(int nsub, const float *xb, const float *qw, float sigma2, int even_parity,
                       float *weight, float *waux, float *xval, uint8_t *signs)
{
    const __m256 zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
    __m256 mx = _mm256_set1_ps(-INFINITY);
    int unordered = 0;
    for (int k = 0; k < nsub; ++k) {
        const __m256 x = _mm256_loadu_ps(xb + 8 * k);
        const __m256 xx = _mm256_mul_ps(x, x);
        __m256 w;
        if (qw) {
            const __m256 q = _mm256_loadu_ps(qw + 8 * k);
            const __m256 v = nan_a(xx, _mm256_add_ps(xx, _mm256_set1_ps(sigma2)));
            w = nan_a(q, _mm256_mul_ps(q, _mm256_sqrt_ps(v)));
        } else {
            const __m256 s = _mm256_set1_ps(0.25f * sigma2);
            w = nan_a(s, _mm256_add_ps(s, xx));
        }
        _mm256_storeu_ps(weight + 8 * k, w);
        _mm256_storeu_ps(waux + 8 * k, _mm256_sqrt_ps(w));
        const __m256 neg = _mm256_cmp_ps(x, zero, _CMP_NGE_UQ); /* !(x >= 0), NaN included */
        __m256 xv = _mm256_xor_ps(x, _mm256_and_ps(neg, sign));
        unsigned s = (unsigned)_mm256_movemask_ps(neg);
        if (even_parity && (__builtin_popcount(s) & 1)) {
            const __m256 ax = _mm256_mul_ps(_mm256_mul_ps(w, x), x);
            int imin;
            if (_mm256_movemask_ps(_mm256_cmp_ps(ax, ax, _CMP_UNORD_Q))) {
                float a[8];
                _mm256_storeu_ps(a, ax);
                imin = 0;
                for (int i = 1; i < 8; ++i)
                    imin = a[i] < a[imin] ? i : imin;
            } else {
                __m256 m = _mm256_min_ps(ax, _mm256_permute2f128_ps(ax, ax, 1));
                m = _mm256_min_ps(m, _mm256_permute_ps(m, 0x4E));
                m = _mm256_min_ps(m, _mm256_permute_ps(m, 0xB1));
                imin = __builtin_ctz((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(ax, m, _CMP_EQ_OQ)));
            }
            s ^= 1u << imin;
            xv = _mm256_xor_ps(xv, _mm256_and_ps(sign, _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(imin)))));
        }
        _mm256_storeu_ps(xval + 8 * k, xv);
        signs[k] = (uint8_t)s;
        unordered |= _mm256_movemask_ps(_mm256_cmp_ps(xv, xv, _CMP_UNORD_Q));
        mx = _mm256_max_ps(mx, xv);
    }
    if (unordered) {
        float max = xval[0];
        for (int i = 1; i < 8 * nsub; ++i)
            max = max > xval[i] ? max : xval[i];
        return max;
    }
    mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
    mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, 0x4E));
    mx = _mm256_max_ps(mx, _mm256_permute_ps(mx, 0xB1));
    return _mm256_cvtss_f32(mx);
}

#endif
