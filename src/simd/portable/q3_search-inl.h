/*
 * q3_search-inl.h — Q3_K's make_q3_quants (do_rmse) with one SIMD lane per
 * sub-block: part of kquants_quant-inl.h's text, included by it alone (its
 * names are defined there with the ISA's name, GQ_ISA_NAME). Scalar twin:
 * make_q3_quants in src/quants/kquants.c.
 */
#ifndef GGUFQ_Q3_SEARCH_INL_H
#define GGUFQ_Q3_SEARCH_INL_H

/* ------------------------------------- make_q3_quants (do_rmse) */

/* Q3_K's search (n = 16) runs on up to Q3_SUBBLOCKS sub-blocks (32
 * super-blocks) at once, in lane groups: its coordinate descent is one long
 * dependency chain per lane (each step needs the previous step's sums), so
 * groups run in batches, op by op (q3_refine_pass); after each pass the
 * lanes still moving are pooled into full groups for the next
 * (q3_search_run). Many super-blocks per run keep those pools full. */
#define Q3_N         16
#define Q3_SUBBLOCKS 512
#define Q3_GROUPS    (Q3_SUBBLOCKS / LANES)

typedef struct {
    vf x[Q3_N];
    vf w[Q3_N], wx[Q3_N];  /* x*x and (x*x)*x: the same products in every step */
    vf L[Q3_N];      /* levels (small integers, exact as floats): level + nmax on
                      * return, or 0 in an all-zero sub-block */
    vf sumlx, suml2; /* sumlx is NaN in all-zero lanes, which makes every step
                      * skip them as the scalar skips the whole search */
    vm is_zero;
} q3_lanes;

static void q3_first_guess(q3_lanes *g, int nmax)
{
    const vf zero = vf_set(0.0f);
    vf amax, sum_x = zero;
    const vf max = lanes_signed_absmax(g->x, Q3_N, &amax);
    g->is_zero = vf_lt(amax, vf_set(GQ_GROUP_MAX_EPS));
    const vf iscale = vf_div(vf_set((float)-nmax), max);
    /* A finite sum of x means every x is finite: then qx_level_f is exact
     * (see qx_search_lanes); all-zero lanes' levels are discarded anyway. */
    for (int i = 0; i < Q3_N; i++)
        sum_x = vf_add(sum_x, g->x[i]);
    const bool fast = !vm_any(vf_ne(vf_sub(sum_x, sum_x), zero));
    vf sumlx = zero, suml2 = zero;
    for (int i = 0; i < Q3_N; i++) {
        const vf l = fast ? qx_level_f(iscale, g->x[i], nmax)
                          : vf_cvt(qx_level(iscale, g->x[i], nmax));
        g->L[i] = l;
        g->w[i] = vf_mul(g->x[i], g->x[i]);
        g->wx[i] = vf_mul(g->w[i], g->x[i]);
        sumlx = vf_add(sumlx, vf_mul(g->wx[i], l));
        suml2 = vf_add(suml2, vf_mul(vf_mul(g->w[i], l), l));
    }
    g->sumlx = vf_sel(g->is_zero, vf_set(NAN), sumlx);
    g->suml2 = suml2;
}

/* Groups whose coordinate descents run side by side, instruction by
 * instruction: each step is one long dependency chain (a division, a
 * rounding, products, a compare and selects, ~55 cycles), so the chains of
 * Q3_BATCH groups written op by op give the out-of-order core independent
 * work within its scheduler window; the batch's sums stay in registers
 * across the 16 steps. */
#define Q3_PASSES 5   /* make_q3_quants' cap on passes */
#define Q3_BATCH  4

/* One pass of the coordinate descent (steps i = 0..15, in order) on the nb
 * groups *gp[0..nb); or's the lanes that moved into changed[]. slx > 0 is
 * false in all-zero lanes (sumlx NaN), so nothing moves there. nb is a
 * constant in each inlined copy, so the loops over t unroll. */
static inline __attribute__((always_inline)) void
q3_refine_pass(q3_lanes *const *gp, int nb, int nmax, vm *changed)
{
    const vf zero = vf_set(0.0f);
    vf sumlx[Q3_BATCH], suml2[Q3_BATCH];
    vm moved[Q3_BATCH];
    for (int t = 0; t < nb; t++) {
        sumlx[t] = gp[t]->sumlx;
        suml2[t] = gp[t]->suml2;
        moved[t] = changed[t];
    }
    for (int i = 0; i < Q3_N; i++) {
        vf l[Q3_BATCH], slx[Q3_BATCH], sl2[Q3_BATCH], nl[Q3_BATCH];
        vm ok[Q3_BATCH];
        for (int t = 0; t < nb; t++) {
            l[t] = gp[t]->L[i];
            slx[t] = vf_sub(sumlx[t], vf_mul(gp[t]->wx[i], l[t]));
        }
        for (int t = 0; t < nb; t++)
            sl2[t] = vf_sub(suml2[t], vf_mul(vf_mul(gp[t]->w[i], l[t]), l[t]));
        for (int t = 0; t < nb; t++)
            nl[t] = vf_cvt(sym_level(vf_div(vf_mul(gp[t]->x[i], sl2[t]), slx[t]), nmax));
        for (int t = 0; t < nb; t++) {
            ok[t] = vm_and(vf_gt(slx[t], zero), vf_ne(nl[t], l[t]));
            slx[t] = vf_add(slx[t], vf_mul(gp[t]->wx[i], nl[t]));
        }
        for (int t = 0; t < nb; t++)
            sl2[t] = vf_add(sl2[t], vf_mul(vf_mul(gp[t]->w[i], nl[t]), nl[t]));
        for (int t = 0; t < nb; t++) {
            const vm acc = vm_and(vm_and(ok[t], vf_gt(sl2[t], zero)),
                                  vf_gt(vf_mul(vf_mul(slx[t], slx[t]), suml2[t]),
                                        vf_mul(vf_mul(sumlx[t], sumlx[t]), sl2[t])));
            gp[t]->L[i] = vf_sel(acc, nl[t], l[t]);
            sumlx[t] = vf_sel(acc, slx[t], sumlx[t]);
            suml2[t] = vf_sel(acc, sl2[t], suml2[t]);
            moved[t] = vm_or(moved[t], acc);
        }
    }
    for (int t = 0; t < nb; t++) {
        gp[t]->sumlx = sumlx[t];
        gp[t]->suml2 = suml2[t];
        changed[t] = moved[t];
    }
}

/* Passes first..last-1 on groups g[0..ng): a group stops after a pass that
 * moved none of its lanes. moved[k] (if given): the lanes of group k that
 * moved in the last pass it ran.
 *
 * A lane that changed nothing in a pass would change nothing in any later
 * pass either (same state), so running a lane for more passes than the
 * scalar would (up to the same cap) gives the scalar's result; so does
 * stopping a group none of whose lanes changed. Groups are independent:
 * their passes may run in any order. */
static void q3_run_passes(q3_lanes *g, int ng, int nmax, int first, int last, vm *moved)
{
    int active[Q3_GROUPS], na = ng;
    for (int k = 0; k < ng; k++)
        active[k] = k;
    for (int itry = first; itry < last && na > 0; itry++) {
        int still = 0;
        for (int b = 0; b < na; b += Q3_BATCH) {
            const int nb = na - b < Q3_BATCH ? na - b : Q3_BATCH;
            q3_lanes *gp[Q3_BATCH];
            vm changed[Q3_BATCH];
            for (int t = 0; t < nb; t++) {
                gp[t] = &g[active[b + t]];
                changed[t] = vm_none();
            }
            switch (nb) {   /* constant batch sizes: unrolled copies */
            case 1: q3_refine_pass(gp, 1, nmax, changed); break;
#if Q3_BATCH >= 2
            case 2: q3_refine_pass(gp, 2, nmax, changed); break;
#endif
#if Q3_BATCH >= 3
            case 3: q3_refine_pass(gp, 3, nmax, changed); break;
#endif
#if Q3_BATCH >= 4
            case 4: q3_refine_pass(gp, 4, nmax, changed); break;
#endif
#if Q3_BATCH > 4
            default: q3_refine_pass(gp, nb, nmax, changed); break;
#endif
            }
            for (int t = 0; t < nb; t++) {
                if (moved)
                    moved[active[b + t]] = changed[t];
                if (vm_any(changed[t]))
                    active[still++] = active[b + t];   /* still <= b + t: in place is safe */
            }
        }
        na = still;
    }
}

/* The lanes of groups g[0..nb) that could move in pass 1, to flag[]: a lane
 * none of whose 16 steps, taken from the first guess's state, would try a
 * new level (slx > 0 and a level that differs) keeps that state through the
 * pass (step by step nothing changes, so every step sees that state), which
 * the scalar then ends. The steps are independent here (no chain through
 * accepted moves), and only the flagged lanes (a fifth) run the real pass 1,
 * pooled. The expressions are q3_refine_pass's. */
static void q3_first_pass_filter(const q3_lanes *g, int nb, int nmax, vm *flag)
{
    const vf zero = vf_set(0.0f);
    for (int t = 0; t < nb; t++)
        flag[t] = vm_none();
    for (int i = 0; i < Q3_N; i++)
        for (int t = 0; t < nb; t++) {
            const vf l = g[t].L[i];
            const vf slx = vf_sub(g[t].sumlx, vf_mul(g[t].wx[i], l));
            const vf sl2 = vf_sub(g[t].suml2, vf_mul(vf_mul(g[t].w[i], l), l));
            const vf nl = vf_cvt(sym_level(vf_div(vf_mul(g[t].x[i], sl2), slx), nmax));
            flag[t] = vm_or(flag[t], vm_and(vf_gt(slx, zero), vf_ne(nl, l)));
        }
}

/* make_q3_quants' return value (sumlx / suml2; 0 in all-zero lanes) of groups g[0..ng). */
static void q3_scales(const q3_lanes *g, int ng, vf *scale)
{
    const vf zero = vf_set(0.0f);
    for (int k = 0; k < ng; k++)
        scale[k] = vf_sel(vm_andnot(vf_gt(g[k].suml2, zero), g[k].is_zero),
                          vf_div(g[k].sumlx, g[k].suml2), zero);
}

/* Sub-blocks still moving wait in a pool per pass (pool p: to run pass p)
 * until it fills Q3_BATCH groups: each later pass then runs in full batches
 * (independent chains that hide each step's latency) and only on the lanes
 * that moved in the pass before, not on whole groups for as long as any of
 * their lanes moves (19% of lanes move in pass 1, a quarter of those in
 * pass 2, ...). A pooled lane carries its levels and sums, appended a group
 * at a time by compress_store (the moved lanes of each vector, packed); its
 * x is gathered again from its row, w and wx recomputed (the same products,
 * same bits). Only the scales
 * leave the search: a zero-scale sub-block's levels are recomputed by the
 * scalar make_q3_quants (q3_K_finish), which spares moving levels around. */
#define Q3_POOL  (Q3_BATCH * LANES)
#define Q3_ROOM  (Q3_POOL + 2 * LANES)   /* a push may pass Q3_POOL by LANES-1, and stores LANES */

typedef struct {
    float L[Q3_N][Q3_ROOM], sumlx[Q3_ROOM], suml2[Q3_ROOM];
    int   sub[Q3_ROOM], n;
} q3_pool;

typedef struct {
    q3_pool pool[Q3_PASSES];   /* pool p: lanes to run pass p */
    float       *scales;
    const float *x;   /* the run's weights: a pooled lane's x is gathered again from its row */
} q3_state;

static inline float lane_get(const vf *v, int j)
{
    float f;
    memcpy(&f, (const char *)v + sizeof(float) * (size_t)j, sizeof f);
    return f;
}

/* compress_store(dst, v, mask): the lanes of v whose mask bit is set, in
 * order, to dst[0..popcount); dst[0..LANES) may all be written. An ISA file
 * may define it with its lane compress (x86: vcompressps, or vpermps with an
 * index from pext); this is the portable fallback. */
#ifndef compress_store
#define compress_store GQ_ISA_NAME(compress_store)
static inline void compress_store(float *dst, vf v, unsigned mask)
{
    for (int k = 0; mask; mask &= mask - 1)
        dst[k++] = lane_get(&v, __builtin_ctz(mask));
}
#endif

static void q3_flush_pool(q3_state *st, int p, int nmax);

/* The lanes of g in mask (lane j: sub-block sub[j]) go on to pass p (none after the cap). */
static void q3_push(q3_state *st, int p, int nmax, const q3_lanes *g, unsigned mask,
                    const int *sub)
{
    if (p >= Q3_PASSES || !mask)
        return;
    q3_pool *pl = &st->pool[p];
    const int n = pl->n;
    for (int i = 0; i < Q3_N; i++) {
        compress_store(pl->L[i] + n, g->L[i], mask);
    }
    compress_store(pl->sumlx + n, g->sumlx, mask);
    compress_store(pl->suml2 + n, g->suml2, mask);
    int m = n;
    for (unsigned bits = mask; bits; bits &= bits - 1)
        pl->sub[m++] = sub[__builtin_ctz(bits)];
    pl->n = m;
    if (m >= Q3_POOL)
        q3_flush_pool(st, p, nmax);
}

/* Pass p on pool p's sub-blocks: their scales written, the lanes that moved
 * pushed on to pool p + 1. The last group is padded with lanes of zero
 * levels and sums (slx is 0, not > 0: they never move; results dropped). */
static void q3_flush_pool(q3_state *st, int p, int nmax)
{
    q3_pool *pl = &st->pool[p];
    const int n = pl->n, nw = (n + LANES - 1) / LANES;
    if (!n)
        return;
    const vf zero = vf_set(0.0f);
    for (int i = 0; i < Q3_N; i++)
        vf_storeu(pl->L[i] + n, zero);
    vf_storeu(pl->sumlx + n, zero);
    vf_storeu(pl->suml2 + n, zero);
    q3_lanes wg[Q3_BATCH + 1];
    int sub[Q3_ROOM];
    memcpy(sub, pl->sub, sizeof(int) * (size_t)n);
    for (int m = n; m < nw * LANES; m++)
        sub[m] = sub[n - 1];   /* padding rows: levels and sums 0, so slx = 0 and they never move */
    for (int k = 0; k < nw; k++) {
        gather_rows(st->x, Q3_N, sub + k * LANES, wg[k].x);
        for (int i = 0; i < Q3_N; i++) {   /* the first guess's products, same bits */
            wg[k].L[i] = vf_loadu(pl->L[i] + k * LANES);
            wg[k].w[i] = vf_mul(wg[k].x[i], wg[k].x[i]);
            wg[k].wx[i] = vf_mul(wg[k].w[i], wg[k].x[i]);
        }
        wg[k].sumlx = vf_loadu(pl->sumlx + k * LANES);
        wg[k].suml2 = vf_loadu(pl->suml2 + k * LANES);
        wg[k].is_zero = vm_none();   /* all-zero lanes never move */
    }
    pl->n = 0;
    vm moved[Q3_BATCH + 1];
    vf sc[Q3_BATCH + 1];
    q3_run_passes(wg, nw, nmax, p, p + 1, moved);
    q3_scales(wg, nw, sc);
    for (int m = 0; m < n; m++)
        st->scales[sub[m]] = lane_get(&sc[m / LANES], m % LANES);
    for (int k = 0; k < nw; k++) {
        const int valid = n - k * LANES >= LANES ? LANES : n - k * LANES;
        const unsigned live = (1u << valid) - 1;   /* valid <= LANES <= 16 */
        q3_push(st, p + 1, nmax, &wg[k], vm_bits(moved[k]) & live, sub + k * LANES);
    }
}

/* make_q3_quants(16, nmax, x, L, true)'s return values for S <= Q3_SUBBLOCKS
 * consecutive sub-blocks, to scales[]. First guess and pass 1 run batch by
 * batch (Q3_BATCH groups, still in L1): most lanes settle in pass 1
 * (nothing moves in it; q3_first_pass_filter finds them), the others go to
 * the pools, from pass 1 on. */
static void q3_search_run(const float *x, int S, int nmax, float *scales)
{
    q3_state st;
    for (int p = 0; p < Q3_PASSES; p++)
        st.pool[p].n = 0;
    st.scales = scales;
    st.x = x;
    const int ng = (S + LANES - 1) / LANES;
    for (int k0 = 0; k0 < ng; k0 += Q3_BATCH) {
        const int nb = ng - k0 < Q3_BATCH ? ng - k0 : Q3_BATCH;
        q3_lanes g[Q3_BATCH];
        vf sc[Q3_BATCH];
        vm moved[Q3_BATCH];
        for (int t = 0; t < nb; t++) {
            const int s0 = (k0 + t) * LANES, count = S - s0 < LANES ? S - s0 : LANES;
            gather_lanes(x + s0 * Q3_N, Q3_N, count, g[t].x);
            q3_first_guess(&g[t], nmax);
        }
        q3_first_pass_filter(g, nb, nmax, moved);
        q3_scales(g, nb, sc);
        for (int t = 0; t < nb; t++)
            vf_storeu(scales + (k0 + t) * LANES, sc[t]);
        for (int t = 0; t < nb; t++) {
            const int s0 = (k0 + t) * LANES, valid = S - s0 < LANES ? S - s0 : LANES;
            int sub[LANES];
            for (int j = 0; j < LANES; j++)
                sub[j] = s0 + j;
            /* lanes past S repeat sub-block S-1 */
            const unsigned live = (1u << valid) - 1;
            q3_push(&st, 0, nmax, &g[t], vm_bits(moved[t]) & live, sub);
        }
    }
    for (int p = 0; p < Q3_PASSES; p++)   /* what is left, pass by pass */
        q3_flush_pool(&st, p, nmax);
}

#endif
