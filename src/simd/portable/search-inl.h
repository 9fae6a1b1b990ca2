/*
 * search-inl.h — ggml's scale searches with one SIMD lane per sub-block
 * (or block): make_qkx2_quants / make_qkx3_quants and make_qx_quants
 * (rmse_type 1), the loading of sub-blocks into lanes with their search
 * weights, runs of searches over consecutive sub-blocks, and the level
 * passes that recompute a search's winning levels. SIMD twin of those
 * searches in src/quants/qhelpers.c; used by the K-quant quantizers
 * (portable/kquants_quant-inl.h) and the legacy imatrix quantizers
 * (<isa>/legacy_imatrix_<isa>.c). Each search exists once, here: qkx runs
 * up to QKX_NG lane groups side by side, qx leaves out the clamps no level
 * reaches.
 *
 * Not a normal header: include it after an ISA layer (<isa>/vec_<isa>.h:
 * LANES, vf/vi/vm and their helpers, gather_lanes). Sharing the text keeps
 * the ISAs' arithmetic the same expression for expression.
 *
 * Bit-exactness: each lane runs the scalar search of one sub-block with the
 * same float operations in the same order (sums from 0 weight by weight,
 * (w*x)*l where the scalar writes w*x*l, the same strict comparisons), and
 * masks instead of branches. A lane records the inverse scale and offset of
 * the trial that won instead of copying its levels; the levels are
 * recomputed from them later (element-wise, hence exact at any width).
 */
#ifndef GGUFQ_SEARCH_INL_H
#define GGUFQ_SEARCH_INL_H

/* Every function here takes its ISA's name (GQ_ISA_NAME, from the ISA layer), so
 * nm and profiles tell the instantiations apart. */
#define load_lanes GQ_ISA_NAME(load_lanes)
#define lanes_sum_w GQ_ISA_NAME(lanes_sum_w)
#define qkx_level GQ_ISA_NAME(qkx_level)
#define qkx_term GQ_ISA_NAME(qkx_term)
#define qkx_level_mode GQ_ISA_NAME(qkx_level_mode)
#define qkx_trial_sums GQ_ISA_NAME(qkx_trial_sums)
#define qkx_search_groups GQ_ISA_NAME(qkx_search_groups)
#define lanes_signed_absmax GQ_ISA_NAME(lanes_signed_absmax)
#define sym_level GQ_ISA_NAME(sym_level)
#define qx_level GQ_ISA_NAME(qx_level)
#define qx_level_f GQ_ISA_NAME(qx_level_f)
#define qx_level_mode GQ_ISA_NAME(qx_level_mode)
#define qx_sums GQ_ISA_NAME(qx_sums)
#define qx_mode GQ_ISA_NAME(qx_mode)
#define qx_trial_is GQ_ISA_NAME(qx_trial_is)
#define qx_search_lanes GQ_ISA_NAME(qx_search_lanes)
#define store_zero_flags GQ_ISA_NAME(store_zero_flags)
#define qkx_search_run GQ_ISA_NAME(qkx_search_run)
#define qx_search_run GQ_ISA_NAME(qx_search_run)
#define levels_qkx GQ_ISA_NAME(levels_qkx)
#define levels_qx GQ_ISA_NAME(levels_qx)

#ifndef LANES
#error "include an ISA layer (simd/<isa>/vec_<isa>.h) first"
#endif

/* A file may use only some of the searches: no unused-function warnings. */
#define GQ_LANES_FN static __attribute__((unused))

#define MAX_SUB 32        /* longest sub-block (Q4_K, Q5_K, legacy blocks) */
#define MAX_SUBBLOCKS 32  /* per group: 16 used, room for a full vector store past them */

/* ------------------------------------------------------- lane inputs */

/* How a search's weights are made from x (all as in kquants.c / qhelpers.c). */
enum weight_mode {
    W_GIVEN,    /* read from a buffer laid out like x */
    W_SQUARE,   /* x*x: make_qx_quants' default (rmse_type 1) */
    W_ABS,      /* |x|: Q2_K without imatrix */
    W_RMS_ABS,  /* sqrtf(sum(x*x)/32) + |x|: Q4_K/Q5_K without imatrix */
};

typedef struct {
    vf x[MAX_SUB];   /* x[i]: weight i of each lane's sub-block */
    vf w[MAX_SUB];   /* its search weight */
} lanes_in;

/* Sub-blocks k < count of n weights each, from x (and wbuf) at k*n, one per lane. */
GQ_LANES_FN void load_lanes(const float *x, const float *wbuf, int n, int count,
                            enum weight_mode mode, lanes_in *in)
{
    gather_lanes(x, n, count, in->x);
    switch (mode) {
    case W_GIVEN:
        gather_lanes(wbuf, n, count, in->w);
        break;
    case W_SQUARE:
        for (int i = 0; i < n; i++)
            in->w[i] = vf_mul(in->x[i], in->x[i]);
        break;
    case W_ABS:
        for (int i = 0; i < n; i++)
            in->w[i] = vf_abs(in->x[i]);
        break;
    case W_RMS_ABS: {
        vf sum_x2 = vf_set(0.0f);
        for (int i = 0; i < n; i++)
            sum_x2 = vf_add(sum_x2, vf_mul(in->x[i], in->x[i]));
        const vf av_x = vf_sqrt(vf_div(sum_x2, vf_set(32.0f)));
        for (int i = 0; i < n; i++)
            in->w[i] = vf_add(av_x, vf_abs(in->x[i]));
        break;
    }
    }
}

/* Each lane's sum of weights, from 0 in weight order (the imatrix paths' sw[]). */
GQ_LANES_FN vf lanes_sum_w(const lanes_in *in, int n)
{
    vf s = vf_set(0.0f);
    for (int i = 0; i < n; i++)
        s = vf_add(s, in->w[i]);
    return s;
}

/* ------------------------------------- make_qkx2_quants / make_qkx3_quants */

typedef struct {
    int   n, nmax, nstep;
    float rmin, rdelta;
    bool  use_mad;
    bool  qkx3;       /* qkx3's degenerate test (max <= min) instead of qkx2's (max == min) */
} qkx_params;

typedef struct {
    vf scale, the_min;      /* the scalar search's return value and *the_min */
    vf lv_iscale, lv_min;   /* its levels: clamp(nearest(lv_iscale * (x - lv_min)), 0, nmax) */
    vm zero;                /* degenerate sub-block: levels all 0 */
} qkx_result;

static inline vi qkx_level(vf iscale, vf x, vf min, int nmax)
{
    return vi_clamp(vi_nearest(vf_mul(iscale, vf_sub(x, min))), 0, nmax);
}

/* w * err(scale*l + min - x): one term of the search's error sum */
static inline vf qkx_term(vf w, vf scale, vf l, vf min, vf x, bool use_mad)
{
    const vf diff = vf_sub(vf_add(vf_mul(scale, l), min), x);
    return vf_mul(w, use_mad ? vf_abs(diff) : vf_mul(diff, diff));
}

/* make_qkx2/qkx3_quants on up to QKX_NG lane groups side by side (one
 * sub-block per lane, the scalar's operations in its order per lane). A
 * trial's sums and its error are chains of n dependent adds (the
 * scalar's order), and each trial starts from the previous one's winner
 * (its min), so one group's search is latency-bound: ~1/3 of the ALUs idle.
 * Interleaving independent groups fills them. A group whose lanes are all
 * !ok in a trial computes a candidate nobody takes (better is false), the
 * same result as the scalar's `continue`. ng is a constant in each inlined
 * copy. */
#define QKX_NG 4

/* clamp(nearest_int(q), 0, nmax) as a float, q = iscale*(x - min), for q
 * finite with |q| < QKX_Q_BOUND: adding 1.5*2^23 rounds q to an integer as
 * nearest_int's add does, subtracting it back is exact, and clamping to
 * integer bounds commutes with the conversion; 3 operations fewer than the
 * integer route (mask, subtract, convert). Outside that range nearest_int's
 * bit trick gives other values, so callers check the range first. */
#define QKX_Q_BOUND 1048576.0f   /* 2^20: q + 1.5*2^23 stays well inside [2^23, 2^24) */

/* How a trial computes its levels: the integer route, or the float route
 * with the clamps that can change a level (a clamp whose bound no product
 * reaches, checked per trial, is left out). */
enum { LV_CLAMP_LO = 1, LV_CLAMP_HI = 2, LV_INT_ROUTE = 4 };

static inline vf qkx_level_mode(vf iscale, vf x, vf min, int nmax, int mode)
{
    if (mode & LV_INT_ROUTE)
        return vf_cvt(qkx_level(iscale, x, min, nmax));
    const vf magic = vf_set(12582912.0f);
    vf r = vf_sub(vf_add(vf_mul(iscale, vf_sub(x, min)), magic), magic);
    if (mode & LV_CLAMP_HI)
        r = vf_min_finite(r, vf_set((float)nmax));
    if (mode & LV_CLAMP_LO)
        r = vf_max_finite(r, vf_set(0.0f));
    return r;
}

/* One trial's levels and sums (from 0, in weight order) for groups 0..ng. */
static inline __attribute__((always_inline)) void
qkx_trial_sums(const lanes_in *in, int ng, int n, int nmax, int mode, const vf *iscale,
               const vf *min, vf (*lf)[MAX_SUB], vf *sum_l, vf *sum_l2, vf *sum_xl)
{
    for (int i = 0; i < n; i++)
        for (int g = 0; g < ng; g++) {
            const vf l = qkx_level_mode(iscale[g], in[g].x[i], min[g], nmax, mode);
            const vf wl = vf_mul(in[g].w[i], l);
            lf[g][i] = l;
            sum_l[g]  = vf_add(sum_l[g], wl);
            sum_l2[g] = vf_add(sum_l2[g], vf_mul(wl, l));
            sum_xl[g] = vf_add(sum_xl[g], vf_mul(wl, in[g].x[i]));
        }
}

static inline __attribute__((always_inline)) void
qkx_search_groups(const lanes_in *in, int ng, const qkx_params *p, qkx_result *r)
{
    const int n = p->n, nmax = p->nmax;
    const vf zero = vf_set(0.0f);
    vf min[QKX_NG], max[QKX_NG], sum_w[QKX_NG], sum_x[QKX_NG], scale[QKX_NG], best[QKX_NG];
    vf iscale[QKX_NG], lv_iscale[QKX_NG], lv_min[QKX_NG];
    vm degenerate[QKX_NG];
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
    vf xmin[QKX_NG];
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
    vf lf[QKX_NG][MAX_SUB];
    for (int is = 0; is <= p->nstep; is++) {
        const float num = p->rmin + p->rdelta * (float)is + (float)nmax;
        vf sum_l[QKX_NG], sum_l2[QKX_NG], sum_xl[QKX_NG];
        vm ok[QKX_NG], any = vm_none();
        for (int g = 0; g < ng; g++) {
            iscale[g] = vf_div(vf_set(num), vf_sub(max[g], min[g]));
            sum_l[g] = sum_l2[g] = sum_xl[g] = zero;
        }
        /* The float route of the levels when every q = iscale*(x - min) of
         * the non-degenerate lanes is finite and small (see qkx_level_mode):
         * x finite, and q between iscale*(xmin - min) and iscale*(max - min),
         * the same rounded operations on the extreme x (a rounded product
         * or difference is monotone in x, whatever iscale's sign). */
        int mode = finite ? 0 : LV_INT_ROUTE;
        for (int g = 0; g < ng && !(mode & LV_INT_ROUTE); g++) {
            const vf hi = vf_mul(iscale[g], vf_sub(max[g], min[g]));
            const vf lo = vf_mul(iscale[g], vf_sub(xmin[g], min[g]));
            const unsigned all = (1u << LANES) - 1;
            /* both bounds both ways: iscale < 0 once min passed max (all x < 0) */
            const vf top = vf_set(QKX_Q_BOUND), bot = vf_set(-QKX_Q_BOUND);
            const vm small = vm_and(vm_and(vf_lt(hi, top), vf_lt(lo, top)),
                                    vm_and(vf_gt(hi, bot), vf_gt(lo, bot)));   /* NaN: false */
            if (vm_bits(vm_or(small, degenerate[g])) != all)
                mode = LV_INT_ROUTE;
            const vf up = vf_set((float)nmax + 0.5f), down = vf_set(-0.5f);
            if (vm_bits(vm_or(vm_and(vf_lt(hi, up), vf_lt(lo, up)), degenerate[g])) != all)
                mode |= LV_CLAMP_HI;   /* a level may round past nmax */
            if (vm_bits(vm_or(vm_and(vf_gt(hi, down), vf_gt(lo, down)), degenerate[g])) != all)
                mode |= LV_CLAMP_LO;   /* a level may round below 0 */
        }
        switch (mode) {   /* constant modes: unrolled copies */
        case 0: qkx_trial_sums(in, ng, n, nmax, 0, iscale, min, lf, sum_l, sum_l2, sum_xl); break;
        case LV_CLAMP_LO:
            qkx_trial_sums(in, ng, n, nmax, LV_CLAMP_LO, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        case LV_CLAMP_HI:
            qkx_trial_sums(in, ng, n, nmax, LV_CLAMP_HI, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        case LV_CLAMP_LO | LV_CLAMP_HI:
            qkx_trial_sums(in, ng, n, nmax, LV_CLAMP_LO | LV_CLAMP_HI, iscale, min, lf, sum_l,
                              sum_l2, sum_xl);
            break;
        default:
            qkx_trial_sums(in, ng, n, nmax, LV_INT_ROUTE, iscale, min, lf, sum_l, sum_l2, sum_xl);
            break;
        }
        vf D[QKX_NG];
        for (int g = 0; g < ng; g++) {
            D[g] = vf_sub(vf_mul(sum_w[g], sum_l2[g]), vf_mul(sum_l[g], sum_l[g]));
            ok[g] = vm_andnot(vf_gt(D[g], zero), degenerate[g]);
            any = vm_or(any, ok[g]);
        }
        if (!vm_any(any))
            continue;
        vf this_scale[QKX_NG], this_min[QKX_NG], cur[QKX_NG];
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

/* ------------------------------------- make_qx_quants (rmse_type 1) */

typedef struct {
    vf scale;       /* the scalar search's return value */
    vf lv_iscale;   /* its levels: nmax + clamp(nearest(lv_iscale * x), -nmax, nmax-1) */
    vm zero;        /* all-zero sub-block: levels all 0 */
} qx_result;

/* Largest |x| of each lane and the signed value it came from (first wins ties). */
static inline vf lanes_signed_absmax(const vf *x, int n, vf *amax_out)
{
    vf amax = vf_set(0.0f), max = vf_set(0.0f);
    for (int i = 0; i < n; i++) {
        const vf ax = vf_abs(x[i]);
        const vm m = vf_gt(ax, amax);
        amax = vf_max_skipnan(ax, amax);   /* m ? ax : amax, one operation */
        max = vf_sel(m, x[i], max);
    }
    *amax_out = amax;
    return max;
}

/* clamp_sym(nearest_int(v), nmax) */
static inline vi sym_level(vf v, int nmax)
{
    return vi_clamp(vi_nearest(v), -nmax, nmax - 1);
}

static inline vi qx_level(vf iscale, vf x, int nmax)
{
    return sym_level(vf_mul(iscale, x), nmax);
}

/* clamp_sym(nearest_int(iscale * x), nmax) as a float, for lanes whose
 * iscale * x is finite and below 2^22 in magnitude: adding 1.5*2^23 rounds
 * it to an integer exactly as nearest_int's add does, subtracting it back is
 * exact, and clamping to integer bounds commutes with the conversion. Two
 * operations fewer than the integer route (no mask, no int->float). */
static inline vf qx_level_f(vf iscale, vf x, int nmax)
{
    const vf magic = vf_set(12582912.0f);
    const vf r = vf_sub(vf_add(vf_mul(iscale, x), magic), magic);
    return vf_max_finite(vf_min_finite(r, vf_set((float)(nmax - 1))), vf_set((float)-nmax));
}

/* The 18 trials of make_qx_quants after the first, in the scalar's order. */
static const signed char qx_trial_is[18] = { -9, -8, -7, -6, -5, -4, -3, -2, -1,
                                             1, 2, 3, 4, 5, 6, 7, 8, 9 };

/* make_qx_quants (rmse_type 1), one sub-block per lane, with one saving: a trial's
 * products q = iscale*x all lie between iscale*xmin and iscale*xmax (one
 * rounded multiplication by a fixed iscale is monotone), so when every
 * lane's bounds round inside [-nmax, nmax-1] the clamp of that side changes
 * no level and is left out (the upper one nearly always; the lower one in
 * the trials that shrink the scale). All-zero lanes, whose results are
 * discarded, do not count. */
static inline vf qx_level_mode(vf iscale, vf x, int nmax, int mode)
{
    if (mode & LV_INT_ROUTE)
        return vf_cvt(qx_level(iscale, x, nmax));
    const vf magic = vf_set(12582912.0f);
    vf r = vf_sub(vf_add(vf_mul(iscale, x), magic), magic);
    if (mode & LV_CLAMP_HI)
        r = vf_min_finite(r, vf_set((float)(nmax - 1)));
    if (mode & LV_CLAMP_LO)
        r = vf_max_finite(r, vf_set((float)-nmax));
    return r;
}

#ifndef QX_NT
#define QX_NT 6   /* trials whose sums run side by side (18 = 6 x 3) */
#endif

static inline __attribute__((always_inline)) void
qx_sums(const vf *x, const vf *w, const vf *wx, int n, int nmax, int mode, int nt,
           const vf *iscale, vf *sumlx, vf *suml2)
{
    vf lx[QX_NT], l2[QX_NT];
    for (int t = 0; t < nt; t++)
        lx[t] = l2[t] = vf_set(0.0f);
    for (int i = 0; i < n; i++)
        for (int t = 0; t < nt; t++) {
            const vf l = qx_level_mode(iscale[t], x[i], nmax, mode);
            lx[t] = vf_add(lx[t], vf_mul(wx[i], l));
            l2[t] = vf_add(l2[t], vf_mul(vf_mul(w[i], l), l));
        }
    for (int t = 0; t < nt; t++) {
        sumlx[t] = lx[t];
        suml2[t] = l2[t];
    }
}

/* Which clamps trials iscale[0..nt) need (fast: the float route applies). */
static inline int qx_mode(const vf *iscale, int nt, vf xmin, vf xmax, vm is_zero, int nmax,
                             bool fast)
{
    if (!fast)
        return LV_INT_ROUTE;
    int mode = 0;
    for (int t = 0; t < nt; t++) {
        const vf a = vf_mul(iscale[t], xmin), b = vf_mul(iscale[t], xmax);
        const vm lo_ok = vm_or(vm_and(vf_gt(a, vf_set(-(float)nmax - 0.5f)),
                                      vf_gt(b, vf_set(-(float)nmax - 0.5f))), is_zero);
        const vm hi_ok = vm_or(vm_and(vf_lt(a, vf_set((float)nmax - 0.5f)),
                                      vf_lt(b, vf_set((float)nmax - 0.5f))), is_zero);
        if (vm_bits(lo_ok) != (1u << LANES) - 1)
            mode |= LV_CLAMP_LO;
        if (vm_bits(hi_ok) != (1u << LANES) - 1)
            mode |= LV_CLAMP_HI;
    }
    return mode;
}

#define QX_SUMS(mode, nt, isc, slx, sl2)                                                   \
    switch (mode) {                                                                        \
    case 0: qx_sums(x, w, wx, n, nmax, 0, nt, isc, slx, sl2); break;                     \
    case LV_CLAMP_LO: qx_sums(x, w, wx, n, nmax, LV_CLAMP_LO, nt, isc, slx, sl2); break; \
    case LV_CLAMP_HI: qx_sums(x, w, wx, n, nmax, LV_CLAMP_HI, nt, isc, slx, sl2); break; \
    case LV_CLAMP_LO | LV_CLAMP_HI:                                                        \
        qx_sums(x, w, wx, n, nmax, LV_CLAMP_LO | LV_CLAMP_HI, nt, isc, slx, sl2); break; \
    default: qx_sums(x, w, wx, n, nmax, LV_INT_ROUTE, nt, isc, slx, sl2); break;        \
    }

GQ_LANES_FN void qx_search_lanes(const lanes_in *in, int n, int nmax, qx_result *r)
{
    const vf *x = in->x, *w = in->w;
    const vf zero = vf_set(0.0f);
    vf amax;
    const vf max = lanes_signed_absmax(x, n, &amax);
    const vm is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));
    /* w*x is the same product in every trial; all x finite (x - x == 0)
     * bounds |iscale*x| by about nmax in the lanes that are not all-zero
     * (|x| <= amax >= eps), so the float route is exact there (all-zero
     * lanes' results are discarded anyway); xmin/xmax bound each trial's
     * products */
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
    const int mode0 = qx_mode(&iscale, 1, xmin, xmax, is_zero, nmax, fast);
    QX_SUMS(mode0, 1, &iscale, &sumlx, &suml2)
    vf scale = vf_sel(vf_ne(suml2, zero), vf_div(sumlx, suml2), zero);
    vf best = vf_mul(scale, sumlx);
    r->lv_iscale = iscale;
    for (int t0 = 0; t0 < 18; t0 += QX_NT) {
        vf isc[QX_NT], slx[QX_NT], sl2[QX_NT];
        for (int t = 0; t < QX_NT; t++)
            isc[t] = vf_div(vf_set(-((float)nmax + 0.1f * (float)qx_trial_is[t0 + t])), max);
        const int mode = qx_mode(isc, QX_NT, xmin, xmax, is_zero, nmax, fast);
        QX_SUMS(mode, QX_NT, isc, slx, sl2)
        for (int t = 0; t < QX_NT; t++) {   /* in trial order: each sees the ones before */
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

/* ------------------------------------- searches over a run of sub-blocks */

/* Per sub-block results of a group's searches (index = sub-block in group). */
typedef struct {
    float   scale[MAX_SUBBLOCKS], the_min[MAX_SUBBLOCKS], sum_w[MAX_SUBBLOCKS];
    float   lv_iscale[MAX_SUBBLOCKS], lv_min[MAX_SUBBLOCKS];
    uint8_t zero[MAX_SUBBLOCKS];
} sub_results;

GQ_LANES_FN void store_zero_flags(uint8_t *zero, vm m, int count)
{
    const unsigned bits = vm_bits(m);
    for (int k = 0; k < count; k++)
        zero[k] = (uint8_t)((bits >> k) & 1);
}

/* make_qkx*_quants on S <= MAX_SUBBLOCKS consecutive sub-blocks of x (p->n
 * weights each), QKX_NG lane groups at a time. */
GQ_LANES_FN void qkx_search_run(const float *x, const float *wbuf, int S, enum weight_mode mode,
                              const qkx_params *p, sub_results *res)
{
    const int n = p->n, ngroups = (S + LANES - 1) / LANES;
    for (int g0 = 0; g0 < ngroups; g0 += QKX_NG) {
        const int ng = ngroups - g0 < QKX_NG ? ngroups - g0 : QKX_NG;
        lanes_in in[QKX_NG];
        qkx_result r[QKX_NG];
        for (int t = 0; t < ng; t++) {
            const int s0 = (g0 + t) * LANES, count = S - s0 < LANES ? S - s0 : LANES;
            load_lanes(x + s0 * n, wbuf ? wbuf + s0 * n : NULL, n, count, mode, &in[t]);
        }
        switch (ng) {   /* constant group counts: unrolled copies */
        case 1: qkx_search_groups(in, 1, p, r); break;
        case 2: qkx_search_groups(in, 2, p, r); break;
        case 3: qkx_search_groups(in, 3, p, r); break;
        default: qkx_search_groups(in, 4, p, r); break;
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

/* make_qx_quants(n, nmax, x, L, 1, weights) on S consecutive sub-blocks. */
GQ_LANES_FN void qx_search_run(const float *x, const float *wbuf, int S, int n, int nmax,
                             enum weight_mode mode, sub_results *res)
{
    lanes_in in;
    for (int s0 = 0; s0 < S; s0 += LANES) {
        const int count = S - s0 < LANES ? S - s0 : LANES;
        load_lanes(x + s0 * n, wbuf ? wbuf + s0 * n : NULL, n, count, mode, &in);
        qx_result r;
        qx_search_lanes(&in, n, nmax, &r);
        vf_storeu(res->scale + s0, r.scale);
        vf_storeu(res->lv_iscale + s0, r.lv_iscale);
        vf_storeu(res->sum_w + s0, lanes_sum_w(&in, n));
        store_zero_flags(res->zero + s0, r.zero, count);
    }
}

/* ------------------------------------- element-wise level passes */

/* The qkx search's levels of one sub-block: clamp(nearest(iscale*(x-min)), 0, nmax). */
GQ_LANES_FN void levels_qkx(const float *x, int n, const sub_results *res, int j, int nmax,
                       uint8_t *L)
{
    if (res->zero[j]) {
        memset(L, 0, (size_t)n);
        return;
    }
    const vf iscale = vf_set(res->lv_iscale[j]), min = vf_set(res->lv_min[j]);
    for (int i = 0; i < n; i += LANES)
        vi_store_u8(L + i, qkx_level(iscale, vf_loadu(x + i), min, nmax));
}

/* The qx search's levels of one sub-block: nmax + clamp_sym(nearest(iscale*x)). */
GQ_LANES_FN void levels_qx(const float *x, int n, const sub_results *res, int j, int nmax,
                      uint8_t *L)
{
    if (res->zero[j]) {
        memset(L, 0, (size_t)n);
        return;
    }
    const vf iscale = vf_set(res->lv_iscale[j]);
    for (int i = 0; i < n; i += LANES)
        vi_store_u8(L + i, vi_add(qx_level(iscale, vf_loadu(x + i), nmax), vi_set(nmax)));
}

#endif
