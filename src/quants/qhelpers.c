/*
 * qhelpers.c — the scale searches behind the K-, legacy-imatrix and IQ
 * quantizers (ggml's make_*_quants).
 *
 * Every expression keeps ggml's evaluation order and types: float sums
 * accumulated left to right, int levels converted to float at the point ggml
 * converts them (w*x*l is (w*x)*(float)l), divisions where ggml divides.
 * The level arrays keep ggml's element types too, since some paths store an
 * unclamped int into uint8_t/int8_t and read the wrapped value back.
 */
#include "quants/qhelpers.h"

#include <math.h>
#include <string.h>

#include "quants/common.h"

/* Value and position of the entry of largest magnitude (first one wins ties). */
static float signed_absmax(int n, const float *x, float *amax_out)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max  = x[i];
        }
    }
    *amax_out = amax;
    return max;
}

static inline int clamp_sym(int l, int nmax)
{
    return GQ_MAX(-nmax, GQ_MIN(nmax - 1, l));
}

/* The default weight of make_qx_quants for each rmse_type. */
static inline float qx_weight(const float *qw, int i, int rmse_type, float xi)
{
    if (qw)
        return qw[i];
    switch (rmse_type) {
    case 1: return xi * xi;
    case 2: return 1.0f;
    case 3: return fabsf(xi);
    default: return sqrtf(fabsf(xi));
    }
}

float gq_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type,
                        const float *qw)
{
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < GQ_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; i++)
            L[i] = (int8_t)(nmax + clamp_sym(gq_nearest_int(iscale * x[i]), nmax));
        return 1 / iscale;
    }
    const int return_early = rmse_type < 0;
    if (return_early)
        rmse_type = -rmse_type;

    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clamp_sym(gq_nearest_int(iscale * x[i]), nmax);
        L[i] = (int8_t)(l + nmax);
        const float w = qx_weight(qw, i, rmse_type, x[i]);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early)
        return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;

    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = clamp_sym(gq_nearest_int(iscale * x[i]), nmax);
            const float w = qx_weight(qw, i, rmse_type, x[i]);
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clamp_sym(gq_nearest_int(iscale * x[i]), nmax));
            scale = sumlx / suml2;
            best  = scale * sumlx;
        }
    }
    return scale;
}

/* make_q3_quants' coordinate descent: move single levels while the fit improves. */
static void q3_refine(int n, int nmax, const float *x, int8_t *L, float *sumlx_io, float *suml2_io)
{
    float sumlx = *sumlx_io, suml2 = *suml2_io;
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (!(slx > 0))
                continue;
            float sl2 = suml2 - w * L[i] * L[i];
            const int new_l = clamp_sym(gq_nearest_int(x[i] * sl2 / slx), nmax);
            if (new_l == L[i])
                continue;
            slx += w * x[i] * new_l;
            sl2 += w * new_l * new_l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i]  = (int8_t)new_l;
                sumlx = slx;
                suml2 = sl2;
                n_changed++;
            }
        }
        if (!n_changed)
            break;
    }
    *sumlx_io = sumlx;
    *suml2_io = suml2;
}

float gq_make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse)
{
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < GQ_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = -nmax / max;
    if (!do_rmse) {
        for (int i = 0; i < n; i++)
            L[i] = (int8_t)(clamp_sym(gq_nearest_int(iscale * x[i]), nmax) + nmax);
        return 1 / iscale;
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clamp_sym(gq_nearest_int(iscale * x[i]), nmax);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    q3_refine(n, nmax, x, L, &sumlx, &suml2);
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/*
 * make_qkx2_quants and make_qkx3_quants are the same search (affine fit
 * scale*L + min with min <= 0, trying nstep+1 scale candidates); they differ
 * only in the default weights (qkx3: x^2 when weights is NULL) and in the
 * degenerate test (qkx2: max == min, qkx3: max <= min).
 */
static inline float qkx_weight(const float *weights, int i, float xi)
{
    return weights ? weights[i] : xi * xi;
}

static inline float qkx_err(float diff, bool use_mad)
{
    return use_mad ? fabsf(diff) : diff * diff;
}

static float make_qkx_search(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                             float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                             bool use_mad, bool qkx3)
{
    float min = x[0], max = x[0];
    float sum_w = qkx_weight(weights, 0, x[0]);
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        const float w = qkx_weight(weights, i, x[i]);
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (qkx3 ? max <= min : max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale  = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        const int l = gq_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)GQ_MAX(0, GQ_MIN(nmax, l));
        const float diff = scale * L[i] + min - x[i];
        best_error += qkx_weight(weights, i, x[i]) * qkx_err(diff, use_mad);
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = gq_nearest_int(iscale * (x[i] - min));
            l = GQ_MAX(0, GQ_MIN(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = qkx_weight(weights, i, x[i]);
            sum_l  += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0))
            continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min   = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min   = 0;
            this_scale = sum_xl / sum_l2;
        }
        float cur_error = 0;
        for (int i = 0; i < n; i++) {
            const float diff = this_scale * Laux[i] + this_min - x[i];
            cur_error += qkx_weight(weights, i, x[i]) * qkx_err(diff, use_mad);
        }
        if (cur_error < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = cur_error;
            scale = this_scale;
            min   = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

float gq_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          bool use_mad)
{
    /* ggml's qkx2 always has weights; passing them through keeps qkx_weight exact */
    return make_qkx_search(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad,
                           false);
}

float gq_make_qkx3_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          bool use_mad)
{
    return make_qkx_search(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad,
                           true);
}

/*
 * make_qp_quants's 8 trial scales (0.1 * is + nmax) / max, is = -4..-1, 1..4:
 * each one's weighted squared error, with levels clamped to nmax, summed in
 * ggml's order. The trials run side by side (trial innermost) so their
 * independent sums overlap and the compiler can vectorise across them.
 */
static void qp_trial_mses(int n, int nmax, const float *x, const float *qw, float max,
                          float iscales[8], float mses[8])
{
    float scales[8];
    for (int j = 0; j < 8; j++) {
        const int is = j < 4 ? j - 4 : j - 3;
        iscales[j] = (0.1f * is + nmax) / max;
        scales[j] = 1 / iscales[j];
        mses[j] = 0;
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < 8; j++) {
            const int l = GQ_MIN(nmax, gq_nearest_int(iscales[j] * x[i]));
            const float diff = x[i] - scales[j] * l;
            mses[j] += qw[i] * diff * diff;
        }
    }
}

/*
 * One element's step of make_qp_quants's refinement, evaluated for a run of
 * elements against the same sums (sumlx, suml2): the new level and sums it
 * would bring, and whether ggml would take it. Until one is taken the sums
 * do not change, so the first element taken is the one ggml takes; the
 * loop has no early exit and vectorises.
 */
typedef struct qp_step {
    float   slx[32], sl2[32];
    int     new_l[32];
    uint8_t take[32];
} qp_step;

static void qp_refine_sweep(int i0, int i1, int nmax, const float *x, const float *qw,
                            const uint8_t *L, float sumlx, float suml2, qp_step *st)
{
    for (int i = i0; i < i1; i++) {
        const float w = qw[i];
        const float slx = sumlx - w * x[i] * L[i];
        const float sl2 = suml2 - w * L[i] * L[i];
        const int live = (slx > 0) & (sl2 > 0);
        const int new_l = GQ_MIN(nmax, gq_nearest_int(x[i] * sl2 / slx));
        const float nslx = slx + w * x[i] * new_l;
        const float nsl2 = sl2 + w * new_l * new_l;
        st->take[i - i0] = (uint8_t)(live & (new_l != L[i]) &
                                     (nslx * nslx * suml2 > sumlx * sumlx * nsl2));
        st->new_l[i - i0] = new_l;
        st->slx[i - i0] = nslx;
        st->sl2[i - i0] = nsl2;
    }
}

float gq_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *quant_weights)
{
    const float *qw = quant_weights;
    float max = 0;
    for (int i = 0; i < n; i++)
        max = GQ_MAX(max, x[i]);
    if (max < GQ_GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = nmax / max;
    /* First guess: unclamped levels, stored (and wrapped) as uint8 as in ggml. */
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)gq_nearest_int(iscale * x[i]);
    const float scale0 = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale0 * L[i];
        best_mse += qw[i] * diff * diff;
    }
    float iscales[8], mses[8];
    qp_trial_mses(n, nmax, x, qw, max, iscales, mses);
    for (int j = 0; j < 8; j++) {
        if (mses[j] < best_mse) {
            best_mse = mses[j];
            iscale   = iscales[j];
        }
    }

    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = GQ_MIN(nmax, gq_nearest_int(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * l;
        suml2 += qw[i] * l * l;
    }
    /* ggml's passes over the elements, each taking in order the level
     * changes that improve sumlx^2 / suml2 (see qp_refine_sweep) */
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i0 = 0; i0 < n;) {
            const int i1 = n - i0 < 32 ? n : i0 + 32;
            qp_step st;
            qp_refine_sweep(i0, i1, nmax, x, qw, L, sumlx, suml2, &st);
            int i = i0;
            while (i < i1 && !st.take[i - i0])
                i++;
            if (i == i1) {
                i0 = i1;
                continue;
            }
            L[i]  = (uint8_t)st.new_l[i - i0];
            sumlx = st.slx[i - i0];
            suml2 = st.sl2[i - i0];
            n_changed++;
            i0 = i + 1;
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}
