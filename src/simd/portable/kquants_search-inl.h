/*
 * kquants_search-inl.h — the K-quant quantizers' own variants of
 * search-inl.h's scale searches: make_qkx2/qkx3_quants on up to KQ_NG lane
 * groups side by side, and make_qx_quants with each trial's idle clamps left
 * out. Part of kquants_quant-inl.h's text, included by it alone (its names
 * are defined there with the ISA's name, GQ_ISA_NAME); same operations in
 * the same order per lane as search-inl.h's searches, hence as the scalar's.
 */
#ifndef GGUFQ_KQUANTS_SEARCH_INL_H
#define GGUFQ_KQUANTS_SEARCH_INL_H

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

/* How a trial computes its levels: the integer route, or the float route
 * with the clamps that can change a level (a clamp whose bound no product
 * reaches, checked per trial, is left out). */
enum { KQ_CLAMP_LO = 1, KQ_CLAMP_HI = 2, KQ_INT_ROUTE = 4 };

static inline vf kq_level_f(vf iscale, vf x, vf min, int nmax, int mode)
{
    if (mode & KQ_INT_ROUTE)
        return vf_cvt(qkx_level(iscale, x, min, nmax));
    const vf magic = vf_set(12582912.0f);
    vf r = vf_sub(vf_add(vf_mul(iscale, vf_sub(x, min)), magic), magic);
    if (mode & KQ_CLAMP_HI)
        r = vf_min_finite(r, vf_set((float)nmax));
    if (mode & KQ_CLAMP_LO)
        r = vf_max_finite(r, vf_set(0.0f));
    return r;
}

/* One trial's levels and sums (from 0, in weight order) for groups 0..ng. */
static inline __attribute__((always_inline)) void
kq_qkx_trial_sums(const lanes_in *in, int ng, int n, int nmax, int mode, const vf *iscale,
                  const vf *min, vf (*lf)[MAX_SUB], vf *sum_l, vf *sum_l2, vf *sum_xl)
{
    for (int i = 0; i < n; i++)
        for (int g = 0; g < ng; g++) {
            const vf l = kq_level_f(iscale[g], in[g].x[i], min[g], nmax, mode);
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
         * the same rounded operations on the extreme x (a rounded product
         * or difference is monotone in x, whatever iscale's sign). */
        int mode = finite ? 0 : KQ_INT_ROUTE;
        for (int g = 0; g < ng && !(mode & KQ_INT_ROUTE); g++) {
            const vf hi = vf_mul(iscale[g], vf_sub(max[g], min[g]));
            const vf lo = vf_mul(iscale[g], vf_sub(xmin[g], min[g]));
            const unsigned all = (1u << LANES) - 1;
            /* both bounds both ways: iscale < 0 once min passed max (all x < 0) */
            const vf top = vf_set(KQ_Q_BOUND), bot = vf_set(-KQ_Q_BOUND);
            const vm small = vm_and(vm_and(vf_lt(hi, top), vf_lt(lo, top)),
                                    vm_and(vf_gt(hi, bot), vf_gt(lo, bot)));   /* NaN: false */
            if (vm_bits(vm_or(small, degenerate[g])) != all)
                mode = KQ_INT_ROUTE;
            const vf up = vf_set((float)nmax + 0.5f), down = vf_set(-0.5f);
            if (vm_bits(vm_or(vm_and(vf_lt(hi, up), vf_lt(lo, up)), degenerate[g])) != all)
                mode |= KQ_CLAMP_HI;   /* a level may round past nmax */
            if (vm_bits(vm_or(vm_and(vf_gt(hi, down), vf_gt(lo, down)), degenerate[g])) != all)
                mode |= KQ_CLAMP_LO;   /* a level may round below 0 */
        }
        switch (mode) {   /* constant modes: unrolled copies */
        case 0: kq_qkx_trial_sums(in, ng, n, nmax, 0, iscale, min, lf, sum_l, sum_l2, sum_xl); break;
        case KQ_CLAMP_LO:
            kq_qkx_trial_sums(in, ng, n, nmax, KQ_CLAMP_LO, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        case KQ_CLAMP_HI:
            kq_qkx_trial_sums(in, ng, n, nmax, KQ_CLAMP_HI, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        case KQ_CLAMP_LO | KQ_CLAMP_HI:
            kq_qkx_trial_sums(in, ng, n, nmax, KQ_CLAMP_LO | KQ_CLAMP_HI, iscale, min, lf, sum_l,
                              sum_l2, sum_xl);
            break;
        default:
            kq_qkx_trial_sums(in, ng, n, nmax, KQ_INT_ROUTE, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        }
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

#ifndef KQ_QX_NT
#define KQ_QX_NT 6   /* trials whose sums run side by side (18 = 6 x 3) */
#endif

static inline __attribute__((always_inline)) void
kq_qx_sums(const vf *x, const vf *w, const vf *wx, int n, int nmax, int mode, int nt,
           const vf *iscale, vf *sumlx, vf *suml2)
{
    vf lx[KQ_QX_NT], l2[KQ_QX_NT];
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
    for (int t0 = 0; t0 < 18; t0 += KQ_QX_NT) {
        vf isc[KQ_QX_NT], slx[KQ_QX_NT], sl2[KQ_QX_NT];
        for (int t = 0; t < KQ_QX_NT; t++)
            isc[t] = vf_div(vf_set(-((float)nmax + 0.1f * (float)qx_trial_is[t0 + t])), max);
        const int mode = kq_qx_mode(isc, KQ_QX_NT, xmin, xmax, is_zero, nmax, fast);
        KQ_QX_SUMS(mode, KQ_QX_NT, isc, slx, sl2)
        for (int t = 0; t < KQ_QX_NT; t++) {   /* in trial order: each sees the ones before */
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

#endif
