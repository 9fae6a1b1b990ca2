/*
 * kquants_quant-inl.h — the K-quant quantizers (Q2_K ... Q8_K, with and
 * without imatrix) with one SIMD lane per sub-block. SIMD twin of the
 * quantizers of src/quants/kquants.c; the searches they share with other
 * families (make_qkx2/qkx3/qx) are in src/simd/portable/search-inl.h, and
 * Q3_K's make_q3_quants in q3_search-inl.h (both included here, as part of
 * this text).
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
#define q3_first_pass_filter GQ_ISA_NAME(q3_first_pass_filter)
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

#include "simd/portable/search-inl.h"

#include "simd/portable/q3_search-inl.h"   /* Q3_K's make_q3_quants */

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

/* Sums of squares of nsb <= 16 consecutive super-blocks, each accumulated
 * in order (float), to out[]. One sum is a chain of 256 dependent adds (~770
 * cycles); 4 or 8 of them side by side share that latency (super-blocks past
 * nsb repeat the last one; their sums are dropped). */
#define SUMX2_CHAINS(c)                                                         \
    do {                                                                        \
        for (int k0 = 0; k0 < nsb; k0 += (c)) {                                 \
            float s[(c)];                                                       \
            const float *row[(c)];                                              \
            for (int k = 0; k < (c); k++) {                                     \
                s[k] = 0;                                                       \
                row[k] = x + (size_t)(k0 + k < nsb ? k0 + k : nsb - 1) * QK_K;  \
            }                                                                   \
            for (int j = 0; j < QK_K; j++)                                      \
                for (int k = 0; k < (c); k++)                                   \
                    s[k] += row[k][j] * row[k][j];                              \
            for (int k = 0; k < (c) && k0 + k < nsb; k++)                       \
                out[k0 + k] = s[k];                                             \
        }                                                                       \
    } while (0)

static void superblock_sumx2(const float *x, int nsb, float *out)
{
    if (nsb <= 4)
        SUMX2_CHAINS(4);
    else
        SUMX2_CHAINS(8);
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
        float wbuf[K4_GROUP * QK_K], sumx2[K4_GROUP];
        superblock_sumx2(x, nsb, sumx2);
        for (int k = 0; k < nsb; k++)
            imatrix_weights(x + k * QK_K, qw[k], 2 * sumx2[k] / QK_K,
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
        float wbuf[2 * QK_K], sumx2[2];
        superblock_sumx2(x, nsb, sumx2);
        for (int k = 0; k < nsb; k++)
            imatrix_weights(x + k * QK_K, qw[k], sumx2[k] / QK_K,
                            wbuf + k * QK_K);
        const qkx_params p = { 16, 3, 36, -0.9f, 0.05f, false, true };
        qkx_search_run(x, wbuf, 16 * nsb, W_GIVEN, &p, &res);
    } else {
        const qkx_params p = { 16, 3, 15, -0.5f, 0.1f, true, false };
        qkx_search_run(x, NULL, 16 * nsb, W_ABS, &p, &res);
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
    memset(sc, 0, sizeof sc);   /* rows past nsb are never read; this quiets -Wmaybe-uninitialized */
    memset(sw, 0, sizeof sw);
    float sumx2[LANES];
    superblock_sumx2(x, nsb, sumx2);
    for (int k = 0; k < nsb; k++) {
        float wbuf[QK_K];
        const float *xs = x + k * QK_K;
        imatrix_weights(xs, qw[k], 2 * sumx2[k] / QK_K, wbuf);
        qx_search_run(xs, wbuf, 16, 16, 4, W_GIVEN, &res[k]);
        memcpy(sc + 16 * k, res[k].scale, 16 * sizeof(float));
        memcpy(sw + 16 * k, res[k].sum_w, 16 * sizeof(float));
    }
    qx_search_run(sc, sw, nsb, 16, 32, W_GIVEN, &sr);
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
