/*
 * kquants_quant_lanes.h — the K-quant quantizers (Q2_K ... Q8_K, with and
 * without imatrix) with one SIMD lane per sub-block. SIMD twin of the
 * quantizers of src/quants/kquants.c and the searches of qhelpers.c.
 *
 * Not a normal header: it is included once, at the end, by each kernel
 * file (avx512/kquants_quant_avx512.c, avx2/kquants_quant_avx2.c,
 * neon/kquants_quant_neon.c), after that file has defined its ISA layer:
 * LANES (4, 8 or 16), the types vf/vi/vm, the vf_/vi_/vm_ helpers,
 * gather_lanes, bsums16, and GQ_KQ_FILL (the name of the fill function to
 * define). Sharing the text keeps the ISAs' arithmetic the same expression
 * for expression.
 *
 * Bit-exactness: each lane runs the scalar search of one sub-block with the
 * same float operations in the same order (sums from 0 weight by weight,
 * (w*x)*l where the scalar writes w*x*l, the same strict comparisons), and
 * masks instead of branches. A lane records the inverse scale and offset of
 * the trial that won instead of copying its levels; the levels are
 * recomputed from them later (element-wise, hence exact at any width).
 */
#ifndef GGUFQ_KQUANTS_QUANT_LANES_H
#define GGUFQ_KQUANTS_QUANT_LANES_H

#define QK_K    256
#define MAX_SUB 32        /* longest sub-block (Q4_K, Q5_K) */
#define MAX_SUBBLOCKS 32  /* per group: 16 used, room for a full vector store past them */

typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } blk_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } blk_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } blk_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } blk_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } blk_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } blk_q8_K;

_Static_assert(sizeof(blk_q2_K) == 84, "q2_K block");
_Static_assert(sizeof(blk_q3_K) == 110, "q3_K block");
_Static_assert(sizeof(blk_q4_K) == 144, "q4_K block");
_Static_assert(sizeof(blk_q5_K) == 176, "q5_K block");
_Static_assert(sizeof(blk_q6_K) == 210, "q6_K block");
_Static_assert(sizeof(blk_q8_K) == 292, "q8_K block");

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
static void load_lanes(const float *x, const float *wbuf, int n, int count, enum weight_mode mode,
                       lanes_in *in)
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
static vf lanes_sum_w(const lanes_in *in, int n)
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

static void qkx_search_lanes(const lanes_in *in, const qkx_params *p, qkx_result *r)
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
        amax = vf_sel(m, ax, amax);
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

static void qx_search_lanes(const lanes_in *in, int n, int nmax, qx_result *r)
{
    const vf *x = in->x, *w = in->w;
    const vf zero = vf_set(0.0f);
    vf amax;
    const vf max = lanes_signed_absmax(x, n, &amax);
    const vm is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));

    vf iscale = vf_div(vf_set((float)-nmax), max);
    vf sumlx = zero, suml2 = zero;
    for (int i = 0; i < n; i++) {
        const vf l = vf_cvt(qx_level(iscale, x[i], nmax));
        sumlx = vf_add(sumlx, vf_mul(vf_mul(w[i], x[i]), l));
        suml2 = vf_add(suml2, vf_mul(vf_mul(w[i], l), l));
    }
    vf scale = vf_sel(vf_ne(suml2, zero), vf_div(sumlx, suml2), zero);
    vf best = vf_mul(scale, sumlx);
    r->lv_iscale = iscale;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        const float num = -((float)nmax + 0.1f * (float)is);
        iscale = vf_div(vf_set(num), max);
        sumlx = suml2 = zero;
        for (int i = 0; i < n; i++) {
            const vf l = vf_cvt(qx_level(iscale, x[i], nmax));
            sumlx = vf_add(sumlx, vf_mul(vf_mul(w[i], x[i]), l));
            suml2 = vf_add(suml2, vf_mul(vf_mul(w[i], l), l));
        }
        const vm better = vm_andnot(vm_and(vf_gt(suml2, zero),
                                           vf_gt(vf_mul(sumlx, sumlx), vf_mul(best, suml2))),
                                    is_zero);
        if (!vm_any(better))
            continue;
        const vf new_scale = vf_div(sumlx, suml2);
        r->lv_iscale = vf_sel(better, iscale, r->lv_iscale);
        scale = vf_sel(better, new_scale, scale);
        best = vf_sel(better, vf_mul(new_scale, sumlx), best);
    }
    r->scale = vf_sel(is_zero, zero, scale);
    r->zero = is_zero;
}

/* ------------------------------------- make_q3_quants (do_rmse) */

/* Q3_K's search (n = 16) runs on Q3_SUBBLOCKS sub-blocks at once, in
 * Q3_GROUPS lane groups interleaved: its coordinate descent is one long
 * dependency chain per lane (each step needs the previous step's sums), so
 * independent groups keep the vector units busy. */
#define Q3_N         16
#define Q3_SUBBLOCKS 64
#define Q3_GROUPS    (Q3_SUBBLOCKS / LANES)

typedef struct {
    vf x[Q3_N];
    vi L[Q3_N];      /* levels: level + nmax on return, or 0 in an all-zero sub-block */
    vf sumlx, suml2;
    vm is_zero;
} q3_lanes;

static void q3_first_guess(q3_lanes *g, int nmax)
{
    const vf zero = vf_set(0.0f);
    vf amax;
    const vf max = lanes_signed_absmax(g->x, Q3_N, &amax);
    g->is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));
    const vf iscale = vf_div(vf_set((float)-nmax), max);
    vf sumlx = zero, suml2 = zero;
    for (int i = 0; i < Q3_N; i++) {
        g->L[i] = qx_level(iscale, g->x[i], nmax);
        const vf l = vf_cvt(g->L[i]), w = vf_mul(g->x[i], g->x[i]);
        sumlx = vf_add(sumlx, vf_mul(vf_mul(w, g->x[i]), l));
        suml2 = vf_add(suml2, vf_mul(vf_mul(w, l), l));
    }
    g->sumlx = sumlx;
    g->suml2 = suml2;
}

/* One step of the coordinate descent on level i; the lanes that moved. */
static inline vm q3_refine_step(q3_lanes *g, int i, int nmax)
{
    const vf zero = vf_set(0.0f);
    const vf x = g->x[i], w = vf_mul(x, x), wx = vf_mul(w, x);
    const vf l = vf_cvt(g->L[i]);
    vf slx = vf_sub(g->sumlx, vf_mul(wx, l));
    vm ok = vm_andnot(vf_gt(slx, zero), g->is_zero);
    vf sl2 = vf_sub(g->suml2, vf_mul(vf_mul(w, l), l));
    const vi new_l = sym_level(vf_div(vf_mul(x, sl2), slx), nmax);
    ok = vm_and(ok, vi_ne(new_l, g->L[i]));
    const vf nl = vf_cvt(new_l);
    slx = vf_add(slx, vf_mul(wx, nl));
    sl2 = vf_add(sl2, vf_mul(vf_mul(w, nl), nl));
    const vm acc = vm_and(vm_and(ok, vf_gt(sl2, zero)),
                          vf_gt(vf_mul(vf_mul(slx, slx), g->suml2),
                                vf_mul(vf_mul(g->sumlx, g->sumlx), sl2)));
    g->L[i] = vi_sel(acc, new_l, g->L[i]);
    g->sumlx = vf_sel(acc, slx, g->sumlx);
    g->suml2 = vf_sel(acc, sl2, g->suml2);
    return acc;
}

/* make_q3_quants(16, nmax, x, L, true) for each lane of groups g[0..ng); returns scales. */
static void q3_search_groups(q3_lanes *g, int ng, int nmax, vf *scale)
{
    for (int k = 0; k < ng; k++)
        q3_first_guess(&g[k], nmax);
    /* A lane that changed nothing in a pass would change nothing in any
     * later pass either (same state), so running the passes until no lane
     * changes gives each lane the scalar's result; so does stopping a group
     * none of whose lanes changed. */
    bool active[Q3_GROUPS];
    for (int k = 0; k < ng; k++)
        active[k] = true;
    for (int itry = 0; itry < 5; itry++) {
        vm changed[Q3_GROUPS];
        bool any = false;
        for (int k = 0; k < ng; k++)
            changed[k] = vm_none();
        for (int i = 0; i < Q3_N; i++)
            for (int k = 0; k < ng; k++)
                if (active[k])
                    changed[k] = vm_or(changed[k], q3_refine_step(&g[k], i, nmax));
        for (int k = 0; k < ng; k++) {
            active[k] = active[k] && vm_any(changed[k]);
            any = any || active[k];
        }
        if (!any)
            break;
    }
    const vf zero = vf_set(0.0f);
    for (int k = 0; k < ng; k++) {
        for (int i = 0; i < Q3_N; i++)
            g[k].L[i] = vi_sel(g[k].is_zero, vi_set(0), vi_add(g[k].L[i], vi_set(nmax)));
        scale[k] = vf_sel(vm_andnot(vf_gt(g[k].suml2, zero), g[k].is_zero),
                          vf_div(g[k].sumlx, g[k].suml2), zero);
    }
}

/* ------------------------------------- searches over a run of sub-blocks */

/* Per sub-block results of a group's searches (index = sub-block in group). */
typedef struct {
    float   scale[MAX_SUBBLOCKS], the_min[MAX_SUBBLOCKS], sum_w[MAX_SUBBLOCKS];
    float   lv_iscale[MAX_SUBBLOCKS], lv_min[MAX_SUBBLOCKS];
    uint8_t zero[MAX_SUBBLOCKS];
} sub_results;

static void store_zero_flags(uint8_t *zero, vm m, int count)
{
    const unsigned bits = vm_bits(m);
    for (int k = 0; k < count; k++)
        zero[k] = (uint8_t)((bits >> k) & 1);
}

/* make_qkx*_quants on S consecutive sub-blocks of x (p->n weights each). */
static void qkx_search_run(const float *x, const float *wbuf, int S, enum weight_mode mode,
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
static void qx_search_run(const float *x, const float *wbuf, int S, int n, int nmax,
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

/* Levels of a Q3_K search in lane form: sub-block s, weight i at
 * lv[s / LANES][i][s % LANES] (only zero-scale sub-blocks ever read them). */
typedef struct {
    int32_t lv[Q3_GROUPS][Q3_N][LANES];
} q3_levels;

/* make_q3_quants(16, nmax, x, L, true) on S <= Q3_SUBBLOCKS consecutive
 * sub-blocks; scales to scales[], levels to *L. */
static void q3_search_run(const float *x, int S, int nmax, float *scales, q3_levels *L)
{
    q3_lanes g[Q3_GROUPS];
    vf sc[Q3_GROUPS];
    const int ng = (S + LANES - 1) / LANES;
    for (int k = 0; k < ng; k++) {
        const int s0 = k * LANES, count = S - s0 < LANES ? S - s0 : LANES;
        gather_lanes(x + s0 * Q3_N, Q3_N, count, g[k].x);
    }
    q3_search_groups(g, ng, nmax, sc);
    for (int k = 0; k < ng; k++) {
        vf_storeu(scales + k * LANES, sc[k]);
        for (int i = 0; i < Q3_N; i++)
            vi_storeu(L->lv[k][i], g[k].L[i]);
    }
}

/* ------------------------------------- element-wise level passes */

/* The qkx search's levels of one sub-block: clamp(nearest(iscale*(x-min)), 0, nmax). */
static void levels_qkx(const float *x, int n, const sub_results *res, int j, int nmax,
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
static void levels_qx(const float *x, int n, const sub_results *res, int j, int nmax,
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

static void pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

static void pack_scale_min_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *s)
{
    memset(s, 0, 12);
    for (int j = 0; j < QK_K / 32; j++) {
        if (j < 4) {
            s[j]     = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j]     |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static inline void unpack_scale_min_k4(int j, const uint8_t *s, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m  = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m  = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

static inline void q3_K_put_scale(uint8_t *s, int j, int l)
{
    if (j < 8)
        s[j] = (uint8_t)(l & 0xF);
    else
        s[j - 8] |= (uint8_t)((l & 0xF) << 4);
    l >>= 4;
    s[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
}

static inline int q3_K_get_scale(const uint8_t *s, int j)
{
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
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
    pack_scale_min_k4(ls, lm, s12);
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
    pack_scale_min_k4(Ls, Lm, s12);
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
        unpack_scale_min_k4(j, s12, &sc, &m);
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

/* nsb (1 or 2) consecutive Q4_K or Q5_K super-blocks; qw[k]: imatrix slice of
 * super-block k, or qw NULL. */
static void affine_k4_group(const float *x, int nsb, const float *const *qw, bool q5,
                            uint8_t *dst)
{
    const int nmax = q5 ? 31 : 15;
    sub_results res;
    if (qw) {
        float wbuf[2 * QK_K];
        for (int k = 0; k < nsb; k++)
            imatrix_weights(x + k * QK_K, qw[k], 2 * superblock_sumx2(x + k * QK_K) / QK_K,
                            wbuf + k * QK_K);
        const qkx_params p = { 32, nmax, 36, -0.9f, 0.05f, false, true };
        qkx_search_run(x, wbuf, 8 * nsb, W_GIVEN, &p, &res);
    } else {
        const qkx_params p = { 32, nmax, q5 ? 15 : 20, q5 ? -0.5f : -1.f, 0.1f, false, false };
        qkx_search_run(x, NULL, 8 * nsb, W_RMS_ABS, &p, &res);
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

static void q2_K_block(const float *x, const float *qw, uint8_t *dst)
{
    sub_results res;
    blk_q2_K y;
    if (qw) {
        float wbuf[QK_K];
        imatrix_weights(x, qw, superblock_sumx2(x) / QK_K, wbuf);
        const qkx_params p = { 16, 3, 36, -0.9f, 0.05f, false, true };
        qkx_search_run(x, wbuf, 16, W_GIVEN, &p, &res);
        uint8_t Ls[QK_K / 16], Lm[QK_K / 16];
        const float dm = gq_make_qp_quants(QK_K / 16, 15, res.scale, Ls, res.sum_w);
        const float mm = gq_make_qp_quants(QK_K / 16, 15, res.the_min, Lm, res.sum_w);
        y.d    = gq_fp32_to_fp16(dm);
        y.dmin = gq_fp32_to_fp16(mm);
        for (int j = 0; j < QK_K / 16; j++)
            y.scales[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    } else {
        const qkx_params p = { 16, 3, 15, -0.5f, 0.1f, true, false };
        qkx_search_run(x, NULL, 16, W_ABS, &p, &res);
        const float *scales = res.scale, *mins = res.the_min;
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
            levels_qkx(x + 16 * j, 16, &res, j, 3, L + 16 * j);
        else
            levels_affine(x + 16 * j, 16, d, mall * (y.scales[j] >> 4), 3, L + 16 * j);
    }
    pack_2bit(L, y.qs);
    memcpy(dst, &y, sizeof y);
}

/* ------------------------------------------------------------ Q3_K */

/* Where a zero-scale Q3_K sub-block's levels come from: the lane-form
 * levels of a _ref search (sub-blocks j0 + j), or an imatrix qx search. */
typedef struct {
    const q3_levels   *ref;
    int                j0;
    const sub_results *qx;
} q3_search_levels;

/* Levels from the stored scales (zero-scale sub-blocks keep the search's), hmask, packing. */
static void q3_K_finish(const float *x, blk_q3_K *y, const q3_search_levels *sl)
{
    uint8_t L[QK_K];
    const float dall = gq_fp16_to_fp32(y->d);
    for (int j = 0; j < QK_K / 16; j++) {
        const float d = dall * (int8_t)q3_K_get_scale(y->scales, j);
        if (d) {
            levels_symmetric(x + 16 * j, 16, d, 4, L + 16 * j);
        } else if (sl->ref) {
            const int s = sl->j0 + j;
            for (int i = 0; i < Q3_N; i++)
                L[16 * j + i] = (uint8_t)sl->ref->lv[s / LANES][i][s % LANES];
        } else {
            levels_qx(x + 16 * j, 16, sl->qx, j, 4, L + 16 * j);
        }
    }
    /* Levels are 0..7 here, so the scalar's "if (l > 3) { set bit; l -= 4; }"
     * is bit 2 to hmask and bits 0-1 kept: branch-free, so it vectorises. */
    uint8_t low[QK_K];
    memset(y->hmask, 0, sizeof y->hmask);
    for (int b = 0; b < QK_K / 32; b++)
        for (int m = 0; m < 32; m++)
            y->hmask[m] |= (uint8_t)(((L[32 * b + m] >> 2) & 1) << b);
    for (int j = 0; j < QK_K; j++)
        low[j] = L[j] & 3;
    pack_2bit(low, y->qs);
}

static void q3_K_imatrix_block(const float *x, const float *qw, uint8_t *dst)
{
    blk_q3_K y;
    float wbuf[QK_K];
    sub_results res;
    imatrix_weights(x, qw, 2 * superblock_sumx2(x) / QK_K, wbuf);
    qx_search_run(x, wbuf, 16, 16, 4, W_GIVEN, &res);
    int8_t Ls[QK_K / 16];
    const float d_block = gq_make_qx_quants(QK_K / 16, 32, res.scale, Ls, 1, res.sum_w);
    memset(y.scales, 0, sizeof y.scales);
    for (int j = 0; j < QK_K / 16; j++)
        q3_K_put_scale(y.scales, j, Ls[j]);
    y.d = gq_fp32_to_fp16(d_block);
    const q3_search_levels sl = { NULL, 0, &res };
    q3_K_finish(x, &y, &sl);
    memcpy(dst, &y, sizeof y);
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
            q3_K_put_scale(y->scales, j, l);
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
    q3_levels L;
    q3_search_run(x, 16 * nsb, 4, scales, &L);
    for (int k = 0; k < nsb; k++) {
        blk_q3_K y;
        q3_K_ref_quantize_scales(scales + 16 * k, &y);
        const q3_search_levels sl = { &L, 16 * k, NULL };
        q3_K_finish(x + k * QK_K, &y, &sl);
        memcpy(dst + k * sizeof y, &y, sizeof y);
    }
}

static int quantize_q3_K_lanes(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    const int64_t nb = n_per_row / QK_K, total = nrows * nb;
    uint8_t *out = dst;
    if (imatrix) {
        for (int64_t b = 0; b < total; b++)
            q3_K_imatrix_block(src + b * QK_K, imatrix + (b % nb) * QK_K,
                               out + (size_t)b * sizeof(blk_q3_K));
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
    qx_search_run(x, qw, 16, 16, 32, qw ? W_GIVEN : W_SQUARE, &res);
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
    bsums16(q, y.bsums);
    y.d = 1 / iscale;
    memcpy(dst, &y, sizeof y);
}

/* ------------------------------------------------------------ entry points */

/* Row-major flat block b (of nb per row) uses imatrix slice b % nb. */
static inline const float *imatrix_slice(const float *imatrix, int64_t b, int64_t nb)
{
    return imatrix ? imatrix + (b % nb) * QK_K : NULL;
}

static int quantize_affine_k4(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                              const float *imatrix, bool q5)
{
    const int64_t nb = n_per_row / QK_K, total = nrows * nb;
    const size_t bytes = q5 ? sizeof(blk_q5_K) : sizeof(blk_q4_K);
    for (int64_t b = 0; b < total; b += 2) {
        const int nsb = total - b >= 2 ? 2 : 1;
        const float *qw[2] = { imatrix_slice(imatrix, b, nb), imatrix_slice(imatrix, b + 1, nb) };
        affine_k4_group(src + b * QK_K, nsb, imatrix ? qw : NULL, q5,
                        (uint8_t *)dst + (size_t)b * bytes);
    }
    return GGUFQ_OK;
}

static int quantize_q4_K_lanes(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    return quantize_affine_k4(src, dst, nrows, n_per_row, imatrix, false);
}

static int quantize_q5_K_lanes(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    return quantize_affine_k4(src, dst, nrows, n_per_row, imatrix, true);
}

/* One block at a time: Q2_K and Q6_K fill 16 lanes per super-block. */
#define DEFINE_BLOCKWISE_QUANTIZER(name, block_fn, block_type)                                 \
    static int name(const float *src, void *dst, int64_t nrows, int64_t n_per_row,             \
                    const float *imatrix)                                                      \
    {                                                                                          \
        const int64_t nb = n_per_row / QK_K, total = nrows * nb;                               \
        for (int64_t b = 0; b < total; b++)                                                    \
            block_fn(src + b * QK_K, imatrix_slice(imatrix, b, nb),                            \
                     (uint8_t *)dst + (size_t)b * sizeof(block_type));                         \
        return GGUFQ_OK;                                                                       \
    }

DEFINE_BLOCKWISE_QUANTIZER(quantize_q2_K_lanes, q2_K_block, blk_q2_K)
DEFINE_BLOCKWISE_QUANTIZER(quantize_q6_K_lanes, q6_K_block, blk_q6_K)

static int quantize_q8_K_lanes(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                               const float *imatrix)
{
    (void)imatrix; /* Q8_K has no imatrix variant */
    const int64_t total = nrows * (n_per_row / QK_K);
    for (int64_t b = 0; b < total; b++)
        q8_K_block(src + b * QK_K, (uint8_t *)dst + (size_t)b * sizeof(blk_q8_K));
    return GGUFQ_OK;
}

void GQ_KQ_FILL(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_Q2_K].quantize = quantize_q2_K_lanes;
    t[GGUFQ_TYPE_Q3_K].quantize = quantize_q3_K_lanes;
    t[GGUFQ_TYPE_Q4_K].quantize = quantize_q4_K_lanes;
    t[GGUFQ_TYPE_Q5_K].quantize = quantize_q5_K_lanes;
    t[GGUFQ_TYPE_Q6_K].quantize = quantize_q6_K_lanes;
    t[GGUFQ_TYPE_Q8_K].quantize = quantize_q8_K_lanes;
}

#endif
