/*
 * search-inl.h — ggml's scale searches with one SIMD lane per sub-block
 * (or block): make_qkx2_quants / make_qkx3_quants and make_qx_quants
 * (rmse_type 1), the loading of sub-blocks into lanes with their search
 * weights, runs of searches over consecutive sub-blocks, and the level
 * passes that recompute a search's winning levels. SIMD twin of those
 * searches in src/quants/qhelpers.c; used by the K-quant quantizers
 * (portable/kquants_quant-inl.h) and the legacy imatrix quantizers
 * (<isa>/legacy_imatrix_<isa>.c).
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
#define qkx_search_lanes GQ_ISA_NAME(qkx_search_lanes)
#define lanes_signed_absmax GQ_ISA_NAME(lanes_signed_absmax)
#define sym_level GQ_ISA_NAME(sym_level)
#define qx_level GQ_ISA_NAME(qx_level)
#define qx_level_f GQ_ISA_NAME(qx_level_f)
#define qx_trial_sums GQ_ISA_NAME(qx_trial_sums)
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

GQ_LANES_FN void qkx_search_lanes(const lanes_in *in, const qkx_params *p, qkx_result *r)
{
    const int n = p->n, nmax = p->nmax;
    const vf *x = in->x, *w = in->w;
    const vf zero = vf_set(0.0f);
    vf min = x[0], max = x[0], sum_w = w[0], sum_x = vf_mul(w[0], x[0]);
    for (int i = 1; i < n; i++) {
        min = vf_sel(vf_lt(x[i], min), x[i], min);
        max = vf_sel(vf_gt(x[i], max), x[i], max);
        sum_w = vf_add(sum_w, w[i]);
        sum_x = vf_add(sum_x, vf_mul(w[i], x[i]));
    }
    min = vf_sel(vf_gt(min, zero), zero, min);
    const vm degenerate = p->qkx3 ? vf_le(max, min) : vf_eq(max, min);

    vf iscale = vf_div(vf_set((float)nmax), vf_sub(max, min));
    vf scale = vf_div(vf_set(1.0f), iscale);
    vf best = zero;
    for (int i = 0; i < n; i++)
        best = vf_add(best, qkx_term(w[i], scale, vf_cvt(qkx_level(iscale, x[i], min, nmax)), min,
                                     x[i], p->use_mad));
    r->lv_iscale = iscale;
    r->lv_min = min;

    vf lf[MAX_SUB];
    for (int is = 0; is <= p->nstep; is++) {
        const float num = p->rmin + p->rdelta * (float)is + (float)nmax;
        iscale = vf_div(vf_set(num), vf_sub(max, min));
        vf sum_l = zero, sum_l2 = zero, sum_xl = zero;
        for (int i = 0; i < n; i++) {
            lf[i] = vf_cvt(qkx_level(iscale, x[i], min, nmax));
            const vf wl = vf_mul(w[i], lf[i]);
            sum_l  = vf_add(sum_l, wl);
            sum_l2 = vf_add(sum_l2, vf_mul(wl, lf[i]));
            sum_xl = vf_add(sum_xl, vf_mul(wl, x[i]));
        }
        const vf D = vf_sub(vf_mul(sum_w, sum_l2), vf_mul(sum_l, sum_l));
        const vm ok = vm_andnot(vf_gt(D, zero), degenerate);
        if (!vm_any(ok))
            continue;
        vf this_scale = vf_div(vf_sub(vf_mul(sum_w, sum_xl), vf_mul(sum_x, sum_l)), D);
        vf this_min   = vf_div(vf_sub(vf_mul(sum_l2, sum_x), vf_mul(sum_l, sum_xl)), D);
        const vm pos = vf_gt(this_min, zero);
        this_min   = vf_sel(pos, zero, this_min);
        this_scale = vf_sel(pos, vf_div(sum_xl, sum_l2), this_scale);
        vf cur = zero;
        for (int i = 0; i < n; i++)
            cur = vf_add(cur, qkx_term(w[i], this_scale, lf[i], this_min, x[i], p->use_mad));
        const vm better = vm_and(ok, vf_lt(cur, best));
        r->lv_iscale = vf_sel(better, iscale, r->lv_iscale);
        r->lv_min = vf_sel(better, min, r->lv_min);
        best  = vf_sel(better, cur, best);
        scale = vf_sel(better, this_scale, scale);
        min   = vf_sel(better, this_min, min);
    }
    r->scale = vf_sel(degenerate, zero, scale);
    r->the_min = vf_neg(min);
    r->zero = degenerate;
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

/* sumlx = sum of (w*x)*l, suml2 = sum of (w*l)*l over the sub-block, from 0
 * in weight order, for the levels of nt (1 or 2) trial scales side by side
 * (two independent trials hide the add latency). fast: qx_level_f applies. */
static inline __attribute__((always_inline)) void
qx_trial_sums(const vf *x, const vf *w, const vf *wx, int n, int nmax, bool fast, int nt,
              const vf *iscale, vf *sumlx, vf *suml2)
{
    vf lx[2], l2[2];
    for (int t = 0; t < nt; t++)
        lx[t] = l2[t] = vf_set(0.0f);
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < nt; t++) {
            const vf l = fast ? qx_level_f(iscale[t], x[i], nmax)
                              : vf_cvt(qx_level(iscale[t], x[i], nmax));
            lx[t] = vf_add(lx[t], vf_mul(wx[i], l));
            l2[t] = vf_add(l2[t], vf_mul(vf_mul(w[i], l), l));
        }
    }
    for (int t = 0; t < nt; t++) {
        sumlx[t] = lx[t];
        suml2[t] = l2[t];
    }
}

/* The 18 trials of make_qx_quants after the first, in the scalar's order. */
static const signed char qx_trial_is[18] = { -9, -8, -7, -6, -5, -4, -3, -2, -1,
                                             1, 2, 3, 4, 5, 6, 7, 8, 9 };

GQ_LANES_FN void qx_search_lanes(const lanes_in *in, int n, int nmax, qx_result *r)
{
    const vf *x = in->x, *w = in->w;
    const vf zero = vf_set(0.0f);
    vf amax;
    const vf max = lanes_signed_absmax(x, n, &amax);
    const vm is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));

    /* w*x is the same product in every trial; all x finite (x - x == 0)
     * bounds |iscale*x| by about nmax in the lanes that are not all-zero
     * (|x| <= amax >= eps), so the float route of qx_level_f is exact there;
     * all-zero lanes' results are discarded anyway. */
    vf wx[MAX_SUB];
    vm nonfinite = vm_none();
    for (int i = 0; i < n; i++) {
        wx[i] = vf_mul(w[i], x[i]);
        nonfinite = vm_or(nonfinite, vf_ne(vf_sub(x[i], x[i]), zero));
    }
    const bool fast = !vm_any(nonfinite);

    vf iscale = vf_div(vf_set((float)-nmax), max);
    vf sumlx, suml2;
    if (fast)
        qx_trial_sums(x, w, wx, n, nmax, true, 1, &iscale, &sumlx, &suml2);
    else
        qx_trial_sums(x, w, wx, n, nmax, false, 1, &iscale, &sumlx, &suml2);
    vf scale = vf_sel(vf_ne(suml2, zero), vf_div(sumlx, suml2), zero);
    vf best = vf_mul(scale, sumlx);
    r->lv_iscale = iscale;
    for (int t0 = 0; t0 < 18; t0 += 2) {
        vf isc[2], slx[2], sl2[2];
        for (int t = 0; t < 2; t++)
            isc[t] = vf_div(vf_set(-((float)nmax + 0.1f * (float)qx_trial_is[t0 + t])), max);
        if (fast)
            qx_trial_sums(x, w, wx, n, nmax, true, 2, isc, slx, sl2);
        else
            qx_trial_sums(x, w, wx, n, nmax, false, 2, isc, slx, sl2);
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

/* make_qkx*_quants on S consecutive sub-blocks of x (p->n weights each). */
GQ_LANES_FN void qkx_search_run(const float *x, const float *wbuf, int S, enum weight_mode mode,
                           const qkx_params *p, sub_results *res)
{
    lanes_in in;
    for (int s0 = 0; s0 < S; s0 += LANES) {
        const int count = S - s0 < LANES ? S - s0 : LANES;
        load_lanes(x + s0 * p->n, wbuf ? wbuf + s0 * p->n : NULL, p->n, count, mode, &in);
        qkx_result r;
        qkx_search_lanes(&in, p, &r);
        vf_storeu(res->scale + s0, r.scale);
        vf_storeu(res->the_min + s0, r.the_min);
        vf_storeu(res->lv_iscale + s0, r.lv_iscale);
        vf_storeu(res->lv_min + s0, r.lv_min);
        vf_storeu(res->sum_w + s0, lanes_sum_w(&in, p->n));
        store_zero_flags(res->zero + s0, r.zero, count);
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
