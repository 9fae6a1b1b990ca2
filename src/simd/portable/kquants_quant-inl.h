/*
 * kquants_quant-inl.h — the K-quant quantizers (Q2_K ... Q8_K, with and
 * without imatrix) with one SIMD lane per sub-block. SIMD twin of the
 * quantizers of src/quants/kquants.c; the searches they share with other
 * families (make_qkx2/qkx3/qx) are in src/simd/portable/search-inl.h, Q3_K's
 * make_q3_quants in q3_search-inl.h (included here, as part of this text).
 *
 * Not a normal header: it is included once, at the end, by each kernel
 * file (avx512/kquants_quant_avx512.c, avx2/kquants_quant_avx2.c,
 * neon/kquants_quant_neon.c), after its ISA layer (<isa>/vec_<isa>.h:
 * LANES (4, 8 or 16), the types vf/vi/vm, the vf_/vi_/vm_ helpers,
 * gather_lanes, bsums16, and GQ_ISA_NAME, which puts the ISA in the names of
 * the entry points it defines: gq_<isa>_quantize_q2_K ... _q8_K). Sharing
 * the text keeps the ISAs' arithmetic the same expression for expression;
 * bit-exactness as in portable/search-inl.h.
 */
#ifndef GGUFQ_KQUANTS_QUANT_INL_H
#define GGUFQ_KQUANTS_QUANT_INL_H

/* Every function here takes its ISA's name (GQ_ISA_NAME, from the ISA layer), so
 * nm and profiles tell the instantiations apart. */
#define q3_refine_pass GQ_ISA_NAME(q3_refine_pass)
#define q3_search_run GQ_ISA_NAME(q3_search_run)
#define q3_first_guess GQ_ISA_NAME(q3_first_guess)
#define q3_run_passes GQ_ISA_NAME(q3_run_passes)
#define q3_scales GQ_ISA_NAME(q3_scales)
#define lane_get GQ_ISA_NAME(lane_get)
#define q3_flush_pool GQ_ISA_NAME(q3_flush_pool)
#define q3_push GQ_ISA_NAME(q3_push)
#define levels_affine GQ_ISA_NAME(levels_affine)
#define levels_symmetric GQ_ISA_NAME(levels_symmetric)
#define imatrix_weights GQ_ISA_NAME(imatrix_weights)
#define superblock_sumx2 GQ_ISA_NAME(superblock_sumx2)
#define affine_k4_ref_quantize_scales GQ_ISA_NAME(affine_k4_ref_quantize_scales)
#define affine_k4_imatrix_quantize_scales GQ_ISA_NAME(affine_k4_imatrix_quantize_scales)
#define affine_k4_levels GQ_ISA_NAME(affine_k4_levels)
#define q4_K_pack GQ_ISA_NAME(q4_K_pack)
#define q5_K_pack GQ_ISA_NAME(q5_K_pack)
#define affine_k4_group GQ_ISA_NAME(affine_k4_group)
#define q2_K_finish GQ_ISA_NAME(q2_K_finish)
#define q2_K_group GQ_ISA_NAME(q2_K_group)
#define q3_K_finish GQ_ISA_NAME(q3_K_finish)
#define q3_K_imatrix_group GQ_ISA_NAME(q3_K_imatrix_group)
#define q3_K_ref_quantize_scales GQ_ISA_NAME(q3_K_ref_quantize_scales)
#define q3_K_ref_group GQ_ISA_NAME(q3_K_ref_group)
#define q6_K_block GQ_ISA_NAME(q6_K_block)
#define q8_K_block GQ_ISA_NAME(q8_K_block)
#define imatrix_slice GQ_ISA_NAME(imatrix_slice)
#define quantize_affine_k4 GQ_ISA_NAME(quantize_affine_k4)
#define kq_qkx_search_groups GQ_ISA_NAME(kq_qkx_search_groups)
#define kq_qkx_search_run GQ_ISA_NAME(kq_qkx_search_run)
#define kq_level_f GQ_ISA_NAME(kq_level_f)
#define kq_qx_level GQ_ISA_NAME(kq_qx_level)
#define kq_qx_sums GQ_ISA_NAME(kq_qx_sums)
#define kq_qx_mode GQ_ISA_NAME(kq_qx_mode)
#define kq_qx_search_lanes GQ_ISA_NAME(kq_qx_search_lanes)
#define kq_qx_search_run GQ_ISA_NAME(kq_qx_search_run)
#define kq_qkx_trial_sums GQ_ISA_NAME(kq_qkx_trial_sums)

#include "simd/portable/search-inl.h"

#include "simd/portable/q3_search-inl.h"   /* Q3_K's make_q3_quants */

/* ------------------------------------- make_qkx2/qkx3_quants, groups side by side */

/* search-inl.h's qkx_search_lanes on up to KQ_NG lane groups at once, op by
 * op. A trial's sums and its error are chains of n dependent adds (the
 * scalar's order), and each trial starts from the previous one's winner
 * (its min), so one group's search is latency-bound: ~1/3 of the ALUs idle.
 * Interleaving independent groups fills them. Per group the operations are
 * qkx_search_lanes' own, in its order: a group whose lanes are all !ok in a
 * trial computes a candidate nobody takes (better is false), the same result
 * as the `continue` there. ng is a constant in each inlined copy. */
#define KQ_NG 4

/* clamp(nearest_int(q), 0, nmax) as a float, q = iscale*(x - min), for q
 * finite with |q| < KQ_Q_BOUND: adding 1.5*2^23 rounds q to an integer as
 * nearest_int's add does, subtracting it back is exact, and clamping to
 * integer bounds commutes with the conversion; 3 operations fewer than the
 * integer route (mask, subtract, convert). Outside that range nearest_int's
 * bit trick gives other values, so callers check the range first. */
#define KQ_Q_BOUND 1048576.0f   /* 2^20: q + 1.5*2^23 stays well inside [2^23, 2^24) */

static inline vf kq_level_f(vf iscale, vf x, vf min, int nmax)
{
    const vf magic = vf_set(12582912.0f);
    const vf r = vf_sub(vf_add(vf_mul(iscale, vf_sub(x, min)), magic), magic);
    return vf_max_finite(vf_min_finite(r, vf_set((float)nmax)), vf_set(0.0f));
}

/* One trial's levels and sums (from 0, in weight order) for groups 0..ng. */
static inline __attribute__((always_inline)) void
kq_qkx_trial_sums(const lanes_in *in, int ng, int n, int nmax, bool fast, const vf *iscale,
                  const vf *min, vf (*lf)[MAX_SUB], vf *sum_l, vf *sum_l2, vf *sum_xl)
{
    for (int i = 0; i < n; i++)
        for (int g = 0; g < ng; g++) {
            const vf l = fast ? kq_level_f(iscale[g], in[g].x[i], min[g], nmax)
                              : vf_cvt(qkx_level(iscale[g], in[g].x[i], min[g], nmax));
            const vf wl = vf_mul(in[g].w[i], l);
            lf[g][i] = l;
            sum_l[g]  = vf_add(sum_l[g], wl);
            sum_l2[g] = vf_add(sum_l2[g], vf_mul(wl, l));
            sum_xl[g] = vf_add(sum_xl[g], vf_mul(wl, in[g].x[i]));
        }
}

static inline __attribute__((always_inline)) void
kq_qkx_search_groups(const lanes_in *in, int ng, const qkx_params *p, qkx_result *r)
{
    const int n = p->n, nmax = p->nmax;
    const vf zero = vf_set(0.0f);
    vf min[KQ_NG], max[KQ_NG], sum_w[KQ_NG], sum_x[KQ_NG], scale[KQ_NG], best[KQ_NG];
    vf iscale[KQ_NG], lv_iscale[KQ_NG], lv_min[KQ_NG];
    vm degenerate[KQ_NG];
    for (int g = 0; g < ng; g++) {
        min[g] = max[g] = in[g].x[0];
        sum_w[g] = in[g].w[0];
        sum_x[g] = vf_mul(in[g].w[0], in[g].x[0]);
    }
    for (int i = 1; i < n; i++)
        for (int g = 0; g < ng; g++) {
            const vf xi = in[g].x[i], wi = in[g].w[i];
            min[g] = vf_sel(vf_lt(xi, min[g]), xi, min[g]);
            max[g] = vf_sel(vf_gt(xi, max[g]), xi, max[g]);
            sum_w[g] = vf_add(sum_w[g], wi);
            sum_x[g] = vf_add(sum_x[g], vf_mul(wi, xi));
        }
    vm nonfinite = vm_none();   /* x - x is NaN for an infinite or NaN x */
    for (int i = 0; i < n; i++)
        for (int g = 0; g < ng; g++)
            nonfinite = vm_or(nonfinite, vf_ne(vf_sub(in[g].x[i], in[g].x[i]), zero));
    const bool finite = !vm_any(nonfinite);
    vf xmin[KQ_NG];
    for (int g = 0; g < ng; g++) {
        xmin[g] = min[g];
        min[g] = vf_sel(vf_gt(min[g], zero), zero, min[g]);
        degenerate[g] = p->qkx3 ? vf_le(max[g], min[g]) : vf_eq(max[g], min[g]);
        iscale[g] = vf_div(vf_set((float)nmax), vf_sub(max[g], min[g]));
        scale[g] = vf_div(vf_set(1.0f), iscale[g]);
        best[g] = zero;
        lv_iscale[g] = iscale[g];
        lv_min[g] = min[g];
    }
    for (int i = 0; i < n; i++)
        for (int g = 0; g < ng; g++) {
            const vf l = vf_cvt(qkx_level(iscale[g], in[g].x[i], min[g], nmax));
            best[g] = vf_add(best[g], qkx_term(in[g].w[i], scale[g], l, min[g], in[g].x[i],
                                               p->use_mad));
        }
    vf lf[KQ_NG][MAX_SUB];
    for (int is = 0; is <= p->nstep; is++) {
        const float num = p->rmin + p->rdelta * (float)is + (float)nmax;
        vf sum_l[KQ_NG], sum_l2[KQ_NG], sum_xl[KQ_NG];
        vm ok[KQ_NG], any = vm_none();
        for (int g = 0; g < ng; g++) {
            iscale[g] = vf_div(vf_set(num), vf_sub(max[g], min[g]));
            sum_l[g] = sum_l2[g] = sum_xl[g] = zero;
        }
        /* The float route of the levels when every q = iscale*(x - min) of
         * the non-degenerate lanes is finite and small (see kq_level_f):
         * x finite, and q between iscale*(xmin - min) and iscale*(max - min),
         * the same rounded operations on the extreme x (rounding is monotone,
         * iscale > 0 there). */
        bool fast = finite;
        for (int g = 0; g < ng && fast; g++) {
            const vf hi = vf_mul(iscale[g], vf_sub(max[g], min[g]));
            const vf lo = vf_mul(iscale[g], vf_sub(xmin[g], min[g]));
            const vm good = vm_or(vm_and(vf_lt(hi, vf_set(KQ_Q_BOUND)), vf_gt(lo, vf_set(-KQ_Q_BOUND))),
                                  degenerate[g]);
            fast = vm_bits(good) == (1u << LANES) - 1;
        }
        if (fast)
            kq_qkx_trial_sums(in, ng, n, nmax, true, iscale, min, lf, sum_l, sum_l2, sum_xl);
        else
            kq_qkx_trial_sums(in, ng, n, nmax, false, iscale, min, lf, sum_l, sum_l2, sum_xl);
        vf D[KQ_NG];
        for (int g = 0; g < ng; g++) {
            D[g] = vf_sub(vf_mul(sum_w[g], sum_l2[g]), vf_mul(sum_l[g], sum_l[g]));
            ok[g] = vm_andnot(vf_gt(D[g], zero), degenerate[g]);
            any = vm_or(any, ok[g]);
        }
        if (!vm_any(any))
            continue;
        vf this_scale[KQ_NG], this_min[KQ_NG], cur[KQ_NG];
        for (int g = 0; g < ng; g++) {
            this_scale[g] = vf_div(vf_sub(vf_mul(sum_w[g], sum_xl[g]), vf_mul(sum_x[g], sum_l[g])), D[g]);
            this_min[g] = vf_div(vf_sub(vf_mul(sum_l2[g], sum_x[g]), vf_mul(sum_l[g], sum_xl[g])), D[g]);
            const vm pos = vf_gt(this_min[g], zero);
            this_min[g] = vf_sel(pos, zero, this_min[g]);
            this_scale[g] = vf_sel(pos, vf_div(sum_xl[g], sum_l2[g]), this_scale[g]);
            cur[g] = zero;
        }
        for (int i = 0; i < n; i++)
            for (int g = 0; g < ng; g++)
                cur[g] = vf_add(cur[g], qkx_term(in[g].w[i], this_scale[g], lf[g][i], this_min[g],
                                                 in[g].x[i], p->use_mad));
        for (int g = 0; g < ng; g++) {
            const vm better = vm_and(ok[g], vf_lt(cur[g], best[g]));
            lv_iscale[g] = vf_sel(better, iscale[g], lv_iscale[g]);
            lv_min[g] = vf_sel(better, min[g], lv_min[g]);
            best[g] = vf_sel(better, cur[g], best[g]);
            scale[g] = vf_sel(better, this_scale[g], scale[g]);
            min[g] = vf_sel(better, this_min[g], min[g]);
        }
    }
    for (int g = 0; g < ng; g++) {
        r[g].scale = vf_sel(degenerate[g], zero, scale[g]);
        r[g].the_min = vf_neg(min[g]);
        r[g].zero = degenerate[g];
        r[g].lv_iscale = lv_iscale[g];
        r[g].lv_min = lv_min[g];
    }
}

/* search-inl.h's qkx_search_run (S <= MAX_SUBBLOCKS sub-blocks), KQ_NG groups at a time. */
static void kq_qkx_search_run(const float *x, const float *wbuf, int S, enum weight_mode mode,
                              const qkx_params *p, sub_results *res)
{
    const int n = p->n, ngroups = (S + LANES - 1) / LANES;
    for (int g0 = 0; g0 < ngroups; g0 += KQ_NG) {
        const int ng = ngroups - g0 < KQ_NG ? ngroups - g0 : KQ_NG;
        lanes_in in[KQ_NG];
        qkx_result r[KQ_NG];
        for (int t = 0; t < ng; t++) {
            const int s0 = (g0 + t) * LANES, count = S - s0 < LANES ? S - s0 : LANES;
            load_lanes(x + s0 * n, wbuf ? wbuf + s0 * n : NULL, n, count, mode, &in[t]);
        }
        switch (ng) {   /* constant group counts: unrolled copies */
        case 1: kq_qkx_search_groups(in, 1, p, r); break;
        case 2: kq_qkx_search_groups(in, 2, p, r); break;
        case 3: kq_qkx_search_groups(in, 3, p, r); break;
        default: kq_qkx_search_groups(in, 4, p, r); break;
        }
        for (int t = 0; t < ng; t++) {
            const int s0 = (g0 + t) * LANES, count = S - s0 < LANES ? S - s0 : LANES;
            vf_storeu(res->scale + s0, r[t].scale);
            vf_storeu(res->the_min + s0, r[t].the_min);
            vf_storeu(res->lv_iscale + s0, r[t].lv_iscale);
            vf_storeu(res->lv_min + s0, r[t].lv_min);
            vf_storeu(res->sum_w + s0, lanes_sum_w(&in[t], n));
            store_zero_flags(res->zero + s0, r[t].zero, count);
        }
    }
}

/* ------------------------------------- make_qx_quants, clamps only where needed */

/* search-inl.h's qx_search_lanes (rmse_type 1) with one saving: a trial's
 * products q = iscale*x all lie between iscale*xmin and iscale*xmax (one
 * rounded multiplication by a fixed iscale is monotone), so when every
 * lane's bounds round inside [-nmax, nmax-1] the clamp of that side changes
 * no level and is left out (the upper one nearly always; the lower one in
 * the trials that shrink the scale). All-zero lanes, whose results are
 * discarded, do not count. */
enum { KQ_CLAMP_LO = 1, KQ_CLAMP_HI = 2, KQ_INT_ROUTE = 4 };

static inline vf kq_qx_level(vf iscale, vf x, int nmax, int mode)
{
    if (mode & KQ_INT_ROUTE)
        return vf_cvt(qx_level(iscale, x, nmax));
    const vf magic = vf_set(12582912.0f);
    vf r = vf_sub(vf_add(vf_mul(iscale, x), magic), magic);
    if (mode & KQ_CLAMP_HI)
        r = vf_min_finite(r, vf_set((float)(nmax - 1)));
    if (mode & KQ_CLAMP_LO)
        r = vf_max_finite(r, vf_set((float)-nmax));
    return r;
}

static inline __attribute__((always_inline)) void
kq_qx_sums(const vf *x, const vf *w, const vf *wx, int n, int nmax, int mode, int nt,
           const vf *iscale, vf *sumlx, vf *suml2)
{
    vf lx[2], l2[2];
    for (int t = 0; t < nt; t++)
        lx[t] = l2[t] = vf_set(0.0f);
    for (int i = 0; i < n; i++)
        for (int t = 0; t < nt; t++) {
            const vf l = kq_qx_level(iscale[t], x[i], nmax, mode);
            lx[t] = vf_add(lx[t], vf_mul(wx[i], l));
            l2[t] = vf_add(l2[t], vf_mul(vf_mul(w[i], l), l));
        }
    for (int t = 0; t < nt; t++) {
        sumlx[t] = lx[t];
        suml2[t] = l2[t];
    }
}

/* Which clamps trials iscale[0..nt) need (fast: the float route applies). */
static inline int kq_qx_mode(const vf *iscale, int nt, vf xmin, vf xmax, vm is_zero, int nmax,
                             bool fast)
{
    if (!fast)
        return KQ_INT_ROUTE;
    int mode = 0;
    for (int t = 0; t < nt; t++) {
        const vf a = vf_mul(iscale[t], xmin), b = vf_mul(iscale[t], xmax);
        const vm lo_ok = vm_or(vm_and(vf_gt(a, vf_set(-(float)nmax - 0.5f)),
                                      vf_gt(b, vf_set(-(float)nmax - 0.5f))), is_zero);
        const vm hi_ok = vm_or(vm_and(vf_lt(a, vf_set((float)nmax - 0.5f)),
                                      vf_lt(b, vf_set((float)nmax - 0.5f))), is_zero);
        if (vm_bits(lo_ok) != (1u << LANES) - 1)
            mode |= KQ_CLAMP_LO;
        if (vm_bits(hi_ok) != (1u << LANES) - 1)
            mode |= KQ_CLAMP_HI;
    }
    return mode;
}

#define KQ_QX_SUMS(mode, nt, isc, slx, sl2)                                                   \
    switch (mode) {                                                                        \
    case 0: kq_qx_sums(x, w, wx, n, nmax, 0, nt, isc, slx, sl2); break;                     \
    case KQ_CLAMP_LO: kq_qx_sums(x, w, wx, n, nmax, KQ_CLAMP_LO, nt, isc, slx, sl2); break; \
    case KQ_CLAMP_HI: kq_qx_sums(x, w, wx, n, nmax, KQ_CLAMP_HI, nt, isc, slx, sl2); break; \
    case KQ_CLAMP_LO | KQ_CLAMP_HI:                                                        \
        kq_qx_sums(x, w, wx, n, nmax, KQ_CLAMP_LO | KQ_CLAMP_HI, nt, isc, slx, sl2); break; \
    default: kq_qx_sums(x, w, wx, n, nmax, KQ_INT_ROUTE, nt, isc, slx, sl2); break;        \
    }

static void kq_qx_search_lanes(const lanes_in *in, int n, int nmax, qx_result *r)
{
    const vf *x = in->x, *w = in->w;
    const vf zero = vf_set(0.0f);
    vf amax;
    const vf max = lanes_signed_absmax(x, n, &amax);
    const vm is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));
    /* as qx_search_lanes: all x finite makes the float route exact in the
     * lanes that count; xmin/xmax bound each trial's products */
    vf wx[MAX_SUB], xmin = x[0], xmax = x[0];
    vm nonfinite = vm_none();
    for (int i = 0; i < n; i++) {
        wx[i] = vf_mul(w[i], x[i]);
        nonfinite = vm_or(nonfinite, vf_ne(vf_sub(x[i], x[i]), zero));
        xmin = vf_min_finite(xmin, x[i]);
        xmax = vf_max_finite(xmax, x[i]);
    }
    const bool fast = !vm_any(nonfinite);

    vf iscale = vf_div(vf_set((float)-nmax), max);
    vf sumlx, suml2;
    const int mode0 = kq_qx_mode(&iscale, 1, xmin, xmax, is_zero, nmax, fast);
    KQ_QX_SUMS(mode0, 1, &iscale, &sumlx, &suml2)
    vf scale = vf_sel(vf_ne(suml2, zero), vf_div(sumlx, suml2), zero);
    vf best = vf_mul(scale, sumlx);
    r->lv_iscale = iscale;
    for (int t0 = 0; t0 < 18; t0 += 2) {
        vf isc[2], slx[2], sl2[2];
        for (int t = 0; t < 2; t++)
            isc[t] = vf_div(vf_set(-((float)nmax + 0.1f * (float)qx_trial_is[t0 + t])), max);
        const int mode = kq_qx_mode(isc, 2, xmin, xmax, is_zero, nmax, fast);
        KQ_QX_SUMS(mode, 2, isc, slx, sl2)
        for (int t = 0; t < 2; t++) {   /* in trial order: the second sees the first's best */
            const vm better = vm_andnot(vm_and(vf_gt(sl2[t], zero),
                                               vf_gt(vf_mul(slx[t], slx[t]), vf_mul(best, sl2[t]))),
                                        is_zero);
            if (!vm_any(better))
                continue;
            const vf new_scale = vf_div(slx[t], sl2[t]);
            r->lv_iscale = vf_sel(better, isc[t], r->lv_iscale);
            scale = vf_sel(better, new_scale, scale);
            best = vf_sel(better, vf_mul(new_scale, slx[t]), best);
        }
    }
    r->scale = vf_sel(is_zero, zero, scale);
    r->zero = is_zero;
}

/* search-inl.h's qx_search_run with kq_qx_search_lanes. */
static void kq_qx_search_run(const float *x, const float *wbuf, int S, int n, int nmax,
                             enum weight_mode mode, sub_results *res)
{
    lanes_in in;
    for (int s0 = 0; s0 < S; s0 += LANES) {
        const int count = S - s0 < LANES ? S - s0 : LANES;
        load_lanes(x + s0 * n, wbuf ? wbuf + s0 * n : NULL, n, count, mode, &in);
        qx_result r;
        kq_qx_search_lanes(&in, n, nmax, &r);
        vf_storeu(res->scale + s0, r.scale);
        vf_storeu(res->lv_iscale + s0, r.lv_iscale);
        vf_storeu(res->sum_w + s0, lanes_sum_w(&in, n));
        store_zero_flags(res->zero + s0, r.zero, count);
    }
}

/* ------------------------------------- final level passes, imatrix weights */

/* Final pass of Q2_K/Q4_K/Q5_K: clamp(nearest((x + m) / d), 0, nmax). */
static void levels_affine(const float *x, int n, float d, float m, int nmax, uint8_t *L)
{
    const vf vd = vf_set(d), vmin = vf_set(m);
    for (int i = 0; i < n; i += LANES) {
        const vf q = vf_div(vf_add(vf_loadu(x + i), vmin), vd);
        vi_store_u8(L + i, vi_clamp(vi_nearest(q), 0, nmax));
    }
}

/* Final pass of Q3_K/Q6_K: nmax + clamp(nearest(x / d), -nmax, nmax-1). */
static void levels_symmetric(const float *x, int n, float d, int nmax, uint8_t *L)
{
    const vf vd = vf_set(d);
    for (int i = 0; i < n; i += LANES)
        vi_store_u8(L + i, vi_add(sym_level(vf_div(vf_loadu(x + i), vd), nmax), vi_set(nmax)));
}

/* The imatrix paths' search weights: qw * sqrtf(sigma2 + x*x), element-wise. */
static void imatrix_weights(const float *x, const float *qw, float sigma2, float *w)
{
    const vf s2 = vf_set(sigma2);
    for (int i = 0; i < QK_K; i += LANES) {
        const vf xi = vf_loadu(x + i);
        vf_storeu(w + i, vf_mul(vf_loadu(qw + i), vf_sqrt(vf_add(s2, vf_mul(xi, xi)))));
    }
}

/* ------------------------------------- scalar pieces (as in kquants.c) */

/* Sum of squares of a super-block, accumulated in order (float). */
static float superblock_sumx2(const float *x)
{
    float s = 0;
    for (int j = 0; j < QK_K; j++)
        s += x[j] * x[j];
    return s;
}

/* Row-major flat block b (of nb per row) uses imatrix slice b % nb. */
static inline const float *imatrix_slice(const float *imatrix, int64_t b, int64_t nb)
{
    return imatrix ? imatrix + (b % nb) * QK_K : NULL;
}

/* ------------------------------------------------------------ Q4_K / Q5_K */

/* _ref: 6-bit scales and mins against their maxima (affine_k4_ref_scales). */
static void affine_k4_ref_quantize_scales(const float *scales, const float *mins, uint8_t *s12,
                                          uint16_t *d16, uint16_t *dmin16)
{
    uint8_t ls[QK_K / 32], lm[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; j++) {
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min   = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; j++) {
        const uint8_t s = (uint8_t)gq_nearest_int(inv_scale * scales[j]);
        const uint8_t m = (uint8_t)gq_nearest_int(inv_min * mins[j]);
        ls[j] = GQ_MIN(63, s);
        lm[j] = GQ_MIN(63, m);
    }
    gq_pack_scale_min_k4(ls, lm, s12);
    *d16    = gq_fp32_to_fp16(max_scale / 63.f);
    *dmin16 = gq_fp32_to_fp16(max_min / 63.f);
}

/* _impl: make_qp_quants on the scales and on the mins (affine_k4_imatrix_scales). */
static void affine_k4_imatrix_quantize_scales(const float *scales, const float *mins,
                                              const float *sw, bool clamp63, uint8_t *s12,
                                              uint16_t *d16, uint16_t *dmin16)
{
    uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
    const float d_block = gq_make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = gq_make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    if (clamp63) {
        for (int j = 0; j < QK_K / 32; j++) {
            Ls[j] = GQ_MIN(63, Ls[j]);
            Lm[j] = GQ_MIN(63, Lm[j]);
        }
    }
    gq_pack_scale_min_k4(Ls, Lm, s12);
    *d16    = gq_fp32_to_fp16(d_block);
    *dmin16 = gq_fp32_to_fp16(m_block);
}

/* Levels of a Q4_K/Q5_K super-block from its stored scales (sub-blocks whose
 * scale is 0 keep the search's levels). */
static void affine_k4_levels(const float *x, const uint8_t *s12, uint16_t d16, uint16_t dmin16,
                             int nmax, const sub_results *res, int j0, uint8_t *L)
{
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, m;
        gq_unpack_scale_min_k4(j, s12, &sc, &m);
        const float d = gq_fp16_to_fp32(d16) * sc;
        if (!d)
            levels_qkx(x + 32 * j, 32, res, j0 + j, nmax, L + 32 * j);
        else
            levels_affine(x + 32 * j, 32, d, gq_fp16_to_fp32(dmin16) * m, nmax, L + 32 * j);
    }
}

static void q4_K_pack(const uint8_t *L, blk_q4_K *y)
{
    for (int j = 0; j < QK_K; j += 64)
        for (int l = 0; l < 32; l++)
            y->qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

static void q5_K_pack(const uint8_t *L, blk_q5_K *y)
{
    /* Levels are 0..31: the scalar's "if (l > 15) { set bit; l -= 16; }" is
     * bit 4 to qh and the low nibble kept (branch-free, vectorises). */
    memset(y->qh, 0, sizeof y->qh);
    for (int k = 0; k < QK_K / 64; k++) {
        for (int j = 0; j < 32; j++) {
            const uint8_t l1 = L[64 * k + j], l2 = L[64 * k + j + 32];
            y->qh[j] |= (uint8_t)(((l1 >> 4) << (2 * k)) | ((l2 >> 4) << (2 * k + 1)));
            y->qs[32 * k + j] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
        }
    }
}

/* nsb (1 .. K4_GROUP) consecutive Q4_K or Q5_K super-blocks; qw[k]: imatrix
 * slice of super-block k, or qw NULL. */
#define K4_GROUP (MAX_SUBBLOCKS / 8)   /* 4: 32 sub-blocks, 4 (AVX2) or 2 (AVX-512) groups */
static void affine_k4_group(const float *x, int nsb, const float *const *qw, bool q5,
                            uint8_t *dst)
{
    const int nmax = q5 ? 31 : 15;
    sub_results res;
    if (qw) {
        float wbuf[K4_GROUP * QK_K];
        for (int k = 0; k < nsb; k++)
            imatrix_weights(x + k * QK_K, qw[k], 2 * superblock_sumx2(x + k * QK_K) / QK_K,
                            wbuf + k * QK_K);
        const qkx_params p = { 32, nmax, 36, -0.9f, 0.05f, false, true };
        kq_qkx_search_run(x, wbuf, 8 * nsb, W_GIVEN, &p, &res);
    } else {
        const qkx_params p = { 32, nmax, q5 ? 15 : 20, q5 ? -0.5f : -1.f, 0.1f, false, false };
        kq_qkx_search_run(x, NULL, 8 * nsb, W_RMS_ABS, &p, &res);
    }
    for (int k = 0; k < nsb; k++) {
        const float *xs = x + k * QK_K;
        const int j0 = 8 * k;
        uint8_t s12[12], L[QK_K];
        uint16_t d16, dmin16;
        if (qw)
            affine_k4_imatrix_quantize_scales(res.scale + j0, res.the_min + j0, res.sum_w + j0, q5,
                                              s12, &d16, &dmin16);
        else
            affine_k4_ref_quantize_scales(res.scale + j0, res.the_min + j0, s12, &d16, &dmin16);
        affine_k4_levels(xs, s12, d16, dmin16, nmax, &res, j0, L);
        if (q5) {
            blk_q5_K y;
            y.d = d16;
            y.dmin = dmin16;
            memcpy(y.scales, s12, 12);
            q5_K_pack(L, &y);
            memcpy(dst + k * sizeof y, &y, sizeof y);
        } else {
            blk_q4_K y;
            y.d = d16;
            y.dmin = dmin16;
            memcpy(y.scales, s12, 12);
            q4_K_pack(L, &y);
            memcpy(dst + k * sizeof y, &y, sizeof y);
        }
    }
}

/* ------------------------------------------------------------ Q2_K */

/* Scales, mins and levels of one Q2_K super-block from its searches' results
 * (sub-blocks j0 .. j0+15 of res); qw: imatrix slice or NULL. */
static void q2_K_finish(const float *x, bool imat, const sub_results *res, int j0, uint8_t *dst)
{
    blk_q2_K y;
    if (imat) {
        uint8_t Ls[QK_K / 16], Lm[QK_K / 16];
        const float dm = gq_make_qp_quants(QK_K / 16, 15, res->scale + j0, Ls, res->sum_w + j0);
        const float mm = gq_make_qp_quants(QK_K / 16, 15, res->the_min + j0, Lm, res->sum_w + j0);
        y.d    = gq_fp32_to_fp16(dm);
        y.dmin = gq_fp32_to_fp16(mm);
        for (int j = 0; j < QK_K / 16; j++)
            y.scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    } else {
        const float *scales = res->scale + j0, *mins = res->the_min + j0;
        const float q4scale = 15.f;
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; j++)
                y.scales[j] = (uint8_t)gq_nearest_int(iscale * scales[j]);
            y.d = gq_fp32_to_fp16(max_scale / q4scale);
        } else {
            memset(y.scales, 0, sizeof y.scales);
            y.d = gq_fp32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; j++)
                y.scales[j] |= (uint8_t)(gq_nearest_int(iscale * mins[j]) << 4);
            y.dmin = gq_fp32_to_fp16(max_min / q4scale);
        } else {
            y.dmin = gq_fp32_to_fp16(0.f);
        }
    }
    /* levels from the stored 4-bit scales and mins */
    uint8_t L[QK_K];
    const float dall = gq_fp16_to_fp32(y.d), mall = gq_fp16_to_fp32(y.dmin);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * (y.scales[j] & 0xF);
        if (!d)
            levels_qkx(x + 16 * j, 16, res, j0 + j, 3, L + 16 * j);
        else
            levels_affine(x + 16 * j, 16, d, mall * (y.scales[j] >> 4), 3, L + 16 * j);
    }
    gq_pack_2bit(L, y.qs);
    memcpy(dst, &y, sizeof y);
}

/* nsb (1 or 2) consecutive Q2_K super-blocks searched together (32
 * sub-blocks: 4 lane groups on AVX2, 2 on AVX-512, side by side). */
static void q2_K_group(const float *x, int nsb, const float *const *qw, uint8_t *dst)
{
    sub_results res;
    if (qw) {
        float wbuf[2 * QK_K];
        for (int k = 0; k < nsb; k++)
            imatrix_weights(x + k * QK_K, qw[k], superblock_sumx2(x + k * QK_K) / QK_K,
                            wbuf + k * QK_K);
        const qkx_params p = { 16, 3, 36, -0.9f, 0.05f, false, true };
        kq_qkx_search_run(x, wbuf, 16 * nsb, W_GIVEN, &p, &res);
    } else {
        const qkx_params p = { 16, 3, 15, -0.5f, 0.1f, true, false };
        kq_qkx_search_run(x, NULL, 16 * nsb, W_ABS, &p, &res);
    }
    for (int k = 0; k < nsb; k++)
        q2_K_finish(x + k * QK_K, qw != NULL, &res, 16 * k, dst + k * sizeof(blk_q2_K));
}

int GQ_ISA_NAME(quantize_q2_K)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    const int64_t nb = n_per_row / QK_K, total = nrows * nb;
    for (int64_t b = 0; b < total; b += 2) {
        const int nsb = total - b >= 2 ? 2 : 1;
        const float *qw[2] = { imatrix_slice(imatrix, b, nb), NULL };
        if (nsb == 2)
            qw[1] = imatrix_slice(imatrix, b + 1, nb);
        q2_K_group(src + b * QK_K, nsb, imatrix ? qw : NULL, (uint8_t *)dst + (size_t)b * sizeof(blk_q2_K));
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------ Q3_K */

/* Levels from the stored scales, hmask, packing. A zero-scale sub-block
 * keeps its search's levels: those of the imatrix qx search *qx, or (qx
 * NULL) make_q3_quants', searched again by the scalar (rare: the lane
 * search keeps only scales). */
static void q3_K_finish(const float *x, blk_q3_K *y, const sub_results *qx)
{
    uint8_t L[QK_K];
    const float dall = gq_fp16_to_fp32(y->d);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * (int8_t)gq_q3_K_get_scale(y->scales, j);
        if (d) {
            levels_symmetric(x + 16 * j, 16, d, 4, L + 16 * j);
        } else if (!qx) {
            int8_t l[16];
            gq_make_q3_quants(16, 4, x + 16 * j, l, true);
            memcpy(L + 16 * j, l, sizeof l);   /* 0..7: the same bytes */
        } else {
            levels_qx(x + 16 * j, 16, qx, j, 4, L + 16 * j);
        }
    }
    /* Levels are 0..7 here, so the scalar's "if (l > 3) { set bit; l -= 4; }"
     * is bit 2 to hmask and bits 0-1 kept: branch-free, so it vectorises. */
    /* Written as byte loops over m and l with constant shifts, which the
     * compiler turns into vector code. */
    uint8_t hmask[QK_K / 8], qs[QK_K / 4];
    for (int m = 0; m < 32; m++) {
        uint8_t h = 0;
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++)
            h |= (uint8_t)(((L[32 * b + m] >> 2) & 1) << b);
        hmask[m] = h;
    }
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)((L[j + l] & 3) | ((L[j + l + 32] & 3) << 2) |
                                      ((L[j + l + 64] & 3) << 4) | ((L[j + l + 96] & 3) << 6));
    memcpy(y->hmask, hmask, sizeof hmask);
    memcpy(y->qs, qs, sizeof qs);
}

/* nsb <= LANES consecutive Q3_K super-blocks with imatrix (qw[k]: super-block
 * k's slice). Each super-block's 16 sub-block searches fill a group of lanes;
 * then make_qx_quants on the scales (16 per super-block, weighted by sum_w)
 * runs with one lane per super-block, the same search. */
static void q3_K_imatrix_group(const float *x, const float *const *qw, int nsb, uint8_t *dst)
{
    sub_results res[LANES], sr;
    float sc[LANES * 16], sw[LANES * 16];
    for (int k = 0; k < nsb; k++) {
        float wbuf[QK_K];
        const float *xs = x + k * QK_K;
        imatrix_weights(xs, qw[k], 2 * superblock_sumx2(xs) / QK_K, wbuf);
        kq_qx_search_run(xs, wbuf, 16, 16, 4, W_GIVEN, &res[k]);
        memcpy(sc + 16 * k, res[k].scale, 16 * sizeof(float));
        memcpy(sw + 16 * k, res[k].sum_w, 16 * sizeof(float));
    }
    kq_qx_search_run(sc, sw, nsb, 16, 32, W_GIVEN, &sr);
    for (int k = 0; k < nsb; k++) {
        blk_q3_K y;
        uint8_t Ls[QK_K / 16];
        levels_qx(sc + 16 * k, 16, &sr, k, 32, Ls);
        memset(y.scales, 0, sizeof y.scales);
        for (int j = 0; j < QK_K / 16; j++)
            gq_q3_K_put_scale(y.scales, j, (int8_t)Ls[j]);
        y.d = gq_fp32_to_fp16(sr.scale[k]);
        q3_K_finish(x + k * QK_K, &y, &res[k]);
        memcpy(dst + k * sizeof y, &y, sizeof y);
    }
}

/* Scales of a _ref super-block: 6-bit signed, against the largest |scale|. */
static void q3_K_ref_quantize_scales(const float *scales, blk_q3_K *y)
{
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; j++) {
        const float a = fabsf(scales[j]);
        if (a > amax) {
            amax = a;
            max_scale = scales[j];
        }
    }
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < QK_K / 16; j++) {
            /* ggml narrows nearest_int to int8_t before clamping */
            int8_t l = (int8_t)gq_nearest_int(iscale * scales[j]);
            l = (int8_t)(GQ_MAX(-32, GQ_MIN(31, l)) + 32);
            gq_q3_K_put_scale(y->scales, j, l);
        }
        y->d = gq_fp32_to_fp16(1 / iscale);
    } else {
        y->d = gq_fp32_to_fp16(0.f);
    }
}

#define Q3_REF_GROUP (Q3_SUBBLOCKS / 16)   /* super-blocks searched together */

/* nsb <= Q3_REF_GROUP consecutive Q3_K super-blocks without imatrix. */
static void q3_K_ref_group(const float *x, int nsb, uint8_t *dst)
{
    float scales[Q3_SUBBLOCKS + LANES];
    q3_search_run(x, 16 * nsb, 4, scales);
    for (int k = 0; k < nsb; k++) {
        blk_q3_K y;
        q3_K_ref_quantize_scales(scales + 16 * k, &y);
        q3_K_finish(x + k * QK_K, &y, NULL);
        memcpy(dst + k * sizeof y, &y, sizeof y);
    }
}

int GQ_ISA_NAME(quantize_q3_K)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    const int64_t nb = n_per_row / QK_K, total = nrows * nb;
    uint8_t *out = dst;
    if (imatrix) {
        for (int64_t b = 0; b < total; b += LANES) {
            const int nsb = total - b < LANES ? (int)(total - b) : LANES;
            const float *qw[LANES];
            for (int k = 0; k < nsb; k++)
                qw[k] = imatrix_slice(imatrix, b + k, nb);
            q3_K_imatrix_group(src + b * QK_K, qw, nsb, out + (size_t)b * sizeof(blk_q3_K));
        }
        return GGUFQ_OK;
    }
    for (int64_t b = 0; b < total; b += Q3_REF_GROUP) {
        const int nsb = total - b < Q3_REF_GROUP ? (int)(total - b) : Q3_REF_GROUP;
        q3_K_ref_group(src + b * QK_K, nsb, out + (size_t)b * sizeof(blk_q3_K));
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------ Q6_K */

static void q6_K_block(const float *x, const float *qw, uint8_t *dst)
{
    blk_q6_K y;
    sub_results res;
    kq_qx_search_run(x, qw, 16, 16, 32, qw ? W_GIVEN : W_SQUARE, &res);
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ib++) {
        const float scale = res.scale[ib];
        if (fabsf(scale) > max_abs_scale) {
            max_abs_scale = fabsf(scale);
            max_scale = scale;
        }
    }
    if (max_abs_scale < GQ_GROUP_MAX_EPS) {
        memset(&y, 0, sizeof y);
        memcpy(dst, &y, sizeof y);
        return;
    }
    const float iscale = -128.f / max_scale;
    y.d = gq_fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ib++)
        y.scales[ib] = (int8_t)GQ_MIN(127, gq_nearest_int(iscale * res.scale[ib]));
    uint8_t L[QK_K];
    const float dall = gq_fp16_to_fp32(y.d);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * y.scales[j];
        if (!d)
            levels_qx(x + 16 * j, 16, &res, j, 32, L + 16 * j);
        else
            levels_symmetric(x + 16 * j, 16, d, 32, L + 16 * j);
    }
    for (int h = 0; h < 2; h++) {
        const uint8_t *Lh = L + 128 * h;
        uint8_t *ql = y.ql + 64 * h, *qh = y.qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            ql[l]      = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                              ((Lh[l + 96] >> 4) << 6));
        }
    }
    memcpy(dst, &y, sizeof y);
}

/* ------------------------------------------------------------ Q8_K */

#define Q8_VECS (QK_K / LANES)

static void q8_K_block(const float *x, uint8_t *dst)
{
    blk_q8_K y;
    vf xv[Q8_VECS];
    /* ggml keeps the first |x| that beats all before it: the first maximum
     * (NaN never beats anything, and vf_max_skipnan drops it). */
    vf run = vf_set(0.0f);
#pragma GCC unroll 32
    for (int k = 0; k < Q8_VECS; k++) {
        xv[k] = vf_loadu(x + k * LANES);
        run = vf_max_skipnan(vf_abs(xv[k]), run);
    }
    const float amax = vf_hmax(run);
    if (!amax) {
        memset(&y, 0, sizeof y);
        memcpy(dst, &y, sizeof y);
        return;
    }
    float max = 0;
    for (int k = 0; k < Q8_VECS; k++) {
        const unsigned hit = vm_bits(vf_eq(vf_abs(xv[k]), vf_set(amax)));
        if (hit) {
            max = x[k * LANES + __builtin_ctz(hit)];
            break;
        }
    }
    const float iscale = -127.f / max;
    const vf vis = vf_set(iscale);
    vi q[Q8_VECS];
#pragma GCC unroll 32
    for (int k = 0; k < Q8_VECS; k++) {
        q[k] = vi_min(vi_nearest(vf_mul(vis, xv[k])), 127);
        vi_store_u8((uint8_t *)y.qs + k * LANES, q[k]);
        q[k] = vi_sext8(q[k]);   /* the stored int8, as the scalar sums it */
    }
    int16_t bsums[QK_K / 16];   /* aligned for bsums16; y is byte-aligned */
    bsums16(q, bsums);
    memcpy(y.bsums, bsums, sizeof bsums);
    y.d = 1 / iscale;
    memcpy(dst, &y, sizeof y);
}

/* ------------------------------------------------------------ entry points */

static int quantize_affine_k4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix, bool q5)
{
    const int64_t nb = n_per_row / QK_K, total = nrows * nb;
    const size_t bytes = q5 ? sizeof(blk_q5_K) : sizeof(blk_q4_K);
    for (int64_t b = 0; b < total; b += K4_GROUP) {
        const int nsb = total - b >= K4_GROUP ? K4_GROUP : (int)(total - b);
        const float *qw[K4_GROUP];
        for (int k = 0; k < nsb; k++)
            qw[k] = imatrix_slice(imatrix, b + k, nb);
        affine_k4_group(src + b * QK_K, nsb, imatrix ? qw : NULL, q5,
                        (uint8_t *)dst + (size_t)b * bytes);
    }
    return GGUFQ_OK;
}

int GQ_ISA_NAME(quantize_q4_K)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    return quantize_affine_k4(src, dst, nrows, n_per_row, imatrix, false);
}

int GQ_ISA_NAME(quantize_q5_K)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    return quantize_affine_k4(src, dst, nrows, n_per_row, imatrix, true);
}

/* One block at a time: Q6_K fills 16 lanes per super-block. */
#define DEFINE_BLOCKWISE_QUANTIZER(name, block_fn, block_type)                                 \
    int GQ_ISA_NAME(name)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,       \
                    const float *imatrix)                                                      \
    {                                                                                          \
        const int64_t nb = n_per_row / QK_K, total = nrows * nb;                               \
        for (int64_t b = 0; b < total; b++)                                                    \
            block_fn(src + b * QK_K, imatrix_slice(imatrix, b, nb),                            \
                     (uint8_t *)dst + (size_t)b * sizeof(block_type));                         \
        return GGUFQ_OK;                                                                       \
    }

DEFINE_BLOCKWISE_QUANTIZER(quantize_q6_K, q6_K_block, blk_q6_K)

int GQ_ISA_NAME(quantize_q8_K)(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix; /* Q8_K has no imatrix variant */
    const int64_t total = nrows * (n_per_row / QK_K);
    for (int64_t b = 0; b < total; b++)
        q8_K_block(src + b * QK_K, (uint8_t *)dst + (size_t)b * sizeof(blk_q8_K));
    return GGUFQ_OK;
}

#endif
