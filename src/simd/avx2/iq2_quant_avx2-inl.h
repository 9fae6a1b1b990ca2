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

#include "quants/common.h"
#include "quants/qhelpers.h"

/* Named per ISA (GQ_ISA_NAME), so nm and profiles tell the instantiations apart. */
#define iq2_run     GQ_ISA_NAME(iq2_run)
#define iq2_trials8 GQ_ISA_NAME(iq2_trials8)
#define iq2_scores  GQ_ISA_NAME(iq2_scores)
#define nan_a       GQ_ISA_NAME(nan_a)
#define iq2_prep8   GQ_ISA_NAME(iq2_prep8)
#define iq2_qp32    GQ_ISA_NAME(iq2_qp32)

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

/*
 * IQ2_XXS's first scale: qhelpers.c's gq_make_qp_quants(32, nmax, x, L, qw)
 * with the same operations per element. The 8 trial scales run one per
 * lane and the first guess beside them (all lanes alike), weight by weight,
 * so each error is the scalar's chain of adds; the final sums are chains in
 * weight order too. A refinement sweep tests all 32 weights against the
 * current sums at once and takes the first change ggml would take (the
 * scalar's sweeps work the same way), then sweeps again after it. NaN in x
 * makes ggml's running maximum depend on the order: the scalar then.
 */
static float iq2_qp32(int nmax, const float *x, uint8_t *L, const float *qw)
{
    __m256 xv[4], wv[4];
    __m256 mx = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
    for (int g = 0; g < 4; ++g) {
        xv[g] = _mm256_loadu_ps(x + 8 * g);
        wv[g] = _mm256_loadu_ps(qw + 8 * g);
        mx = _mm256_max_ps(mx, xv[g]);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(xv[g], xv[g], _CMP_UNORD_Q));
    }
    if (_mm256_movemask_ps(nan))
        return gq_make_qp_quants(32, nmax, x, L, qw);
    /* no NaN: the maximum's value does not depend on the order (its sign
     * might, for zeros, which the next test sends back either way) */
    const float max = gq_x86_hmax(mx);
    if (max < GQ_GROUP_MAX_EPS) {
        memset(L, 0, 32);
        return 0.0f;
    }
    float iscale = nmax / max;
    const float scale0 = 1 / iscale;
    const __m256 fmax = _mm256_set1_ps((float)nmax);
    const __m256i imax = _mm256_set1_epi32(nmax);
    const __m256 is = _mm256_setr_ps(-4, -3, -2, -1, 1, 2, 3, 4);
    const __m256 isc = _mm256_div_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(0.1f), is), fmax),
                                     _mm256_set1_ps(max));
    const __m256 sc = _mm256_div_ps(_mm256_set1_ps(1.0f), isc);
    const __m256 isc0 = _mm256_set1_ps(iscale), sc0 = _mm256_set1_ps(scale0);
    __m256 mses = _mm256_setzero_ps(), mse0 = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) {
        const __m256 xi = _mm256_set1_ps(x[i]), wi = _mm256_set1_ps(qw[i]);
        /* trials: levels clamped to nmax; first guess: stored as uint8 */
        const __m256 l = _mm256_cvtepi32_ps(_mm256_min_epi32(imax,
                                            gq_x86_nearest_int8(_mm256_mul_ps(isc, xi))));
        const __m256 l0 = _mm256_cvtepi32_ps(_mm256_and_si256(
            gq_x86_nearest_int8(_mm256_mul_ps(isc0, xi)), _mm256_set1_epi32(0xFF)));
        const __m256 d = _mm256_sub_ps(xi, _mm256_mul_ps(sc, l));
        const __m256 d0 = _mm256_sub_ps(xi, _mm256_mul_ps(sc0, l0));
        mses = _mm256_add_ps(mses, _mm256_mul_ps(_mm256_mul_ps(wi, d), d));
        mse0 = _mm256_add_ps(mse0, _mm256_mul_ps(_mm256_mul_ps(wi, d0), d0));
    }
    float m8[8], is8[8];
    _mm256_storeu_ps(m8, mses);
    _mm256_storeu_ps(is8, isc);
    float best_mse = _mm256_cvtss_f32(mse0);
    for (int j = 0; j < 8; j++) {
        if (m8[j] < best_mse) {
            best_mse = m8[j];
            iscale = is8[j];
        }
    }

    /* levels at the chosen scale (clamped above only, stored as uint8) and
     * their sums in weight order */
    const __m256 iv = _mm256_set1_ps(iscale);
    float tx[32], t2[32];
    for (int g = 0; g < 4; ++g) {
        const __m256i li = _mm256_min_epi32(imax, gq_x86_nearest_int8(_mm256_mul_ps(iv, xv[g])));
        /* (uint8_t)l: the low byte (packs saturate, so mask first) */
        const __m256i lb = _mm256_and_si256(li, _mm256_set1_epi32(0xFF));
        const __m128i p16 = _mm_packus_epi32(_mm256_castsi256_si128(lb), _mm256_extracti128_si256(lb, 1));
        _mm_storel_epi64((__m128i *)(L + 8 * g), _mm_packus_epi16(p16, p16));
        const __m256 lf = _mm256_cvtepi32_ps(li);
        _mm256_storeu_ps(tx + 8 * g, _mm256_mul_ps(_mm256_mul_ps(wv[g], xv[g]), lf));
        _mm256_storeu_ps(t2 + 8 * g, _mm256_mul_ps(_mm256_mul_ps(wv[g], lf), lf));
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < 32; i++) {
        sumlx += tx[i];
        suml2 += t2[i];
    }

    /* ggml's refinement passes; a sweep's lane i: weight i's step against
     * the current sums (qhelpers.c's qp_refine_sweep) */
    __m256 wx[4];
    for (int g = 0; g < 4; ++g)
        wx[g] = _mm256_mul_ps(wv[g], xv[g]);
    const __m256 zero = _mm256_setzero_ps();
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i0 = 0; i0 < 32;) {
            const __m256 vlx = _mm256_set1_ps(sumlx), vl2 = _mm256_set1_ps(suml2);
            const __m256 rhs = _mm256_set1_ps(sumlx * sumlx);
            uint32_t take = 0;
            for (int g = 0; g < 4; ++g) {
                if (8 * g + 8 <= i0)
                    continue;
                const __m256i li = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(L + 8 * g)));
                const __m256 lf = _mm256_cvtepi32_ps(li);
                const __m256 slx = _mm256_sub_ps(vlx, _mm256_mul_ps(wx[g], lf));
                const __m256 sl2 = _mm256_sub_ps(vl2, _mm256_mul_ps(_mm256_mul_ps(wv[g], lf), lf));
                const __m256 live = _mm256_and_ps(_mm256_cmp_ps(slx, zero, _CMP_GT_OQ),
                                                  _mm256_cmp_ps(sl2, zero, _CMP_GT_OQ));
                const __m256i nl = _mm256_min_epi32(imax, gq_x86_nearest_int8(
                    _mm256_div_ps(_mm256_mul_ps(xv[g], sl2), slx)));
                const __m256 nf = _mm256_cvtepi32_ps(nl);
                const __m256 nslx = _mm256_add_ps(slx, _mm256_mul_ps(wx[g], nf));
                const __m256 nsl2 = _mm256_add_ps(sl2, _mm256_mul_ps(_mm256_mul_ps(wv[g], nf), nf));
                const __m256 better = _mm256_cmp_ps(_mm256_mul_ps(_mm256_mul_ps(nslx, nslx), vl2),
                                                    _mm256_mul_ps(rhs, nsl2), _CMP_GT_OQ);
                const __m256 changed = _mm256_castsi256_ps(_mm256_xor_si256(
                    _mm256_cmpeq_epi32(nl, li), _mm256_set1_epi32(-1)));
                take |= (uint32_t)_mm256_movemask_ps(_mm256_and_ps(_mm256_and_ps(live, changed), better))
                        << (8 * g);
            }
            take &= ~0u << i0;
            if (!take)
                break;
            /* the taken weight's step again, in scalar: the same operations */
            const int i = __builtin_ctz(take);
            const float w = qw[i];
            const float slx = sumlx - w * x[i] * L[i];
            const float sl2 = suml2 - w * L[i] * L[i];
            const int new_l = GQ_MIN(nmax, gq_nearest_int(x[i] * sl2 / slx));
            L[i]  = (uint8_t)new_l;
            sumlx = slx + w * x[i] * new_l;
            suml2 = sl2 + w * new_l * new_l;
            n_changed++;
            i0 = i + 1;
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
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
