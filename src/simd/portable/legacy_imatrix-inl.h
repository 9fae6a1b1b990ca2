/*
 * legacy_imatrix-inl.h — the importance-matrix quantizers of Q4_0, Q4_1,
 * Q5_0 and Q5_1 with one SIMD lane per 32-weight block. SIMD twin of the
 * *_imatrix_row functions of src/quants/legacy.c (ggml's
 * quantize_row_q4_0_impl ... quantize_row_q5_1_impl).
 *
 * Not a normal header: included once by each <isa>/legacy_imatrix_<isa>.c
 * after its ISA layer (<isa>/vec_<isa>.h) and src/simd/portable/search-inl.h,
 * whose GQ_ISA_NAME names the entry points gq_<isa>_quantize_<t>_imatrix.
 *
 * How it vectorises: blocks are taken LANES at a time in memory order
 * (across row ends, so rows of one block fill the lanes too). Each block's
 * search weights qw * sqrtf(sigma2 + x*x) are element-wise (the row's
 * sigma2 broadcast); the blocks are then transposed into lanes and each lane
 * runs its block's make_qx_quants (Q4_0/Q5_0) or make_qkx3_quants
 * (Q4_1/Q5_1) with the scalar's operations in the scalar's order
 * (portable/search-inl.h). Each row's sigma2 is a float sum in column order, so
 * LANES rows are summed side by side, one lane per row.
 */
#ifndef GGUFQ_LEGACY_IMATRIX_INL_H
#define GGUFQ_LEGACY_IMATRIX_INL_H

/* Every function here takes its ISA's name (GQ_ISA_NAME, from the ISA layer), so
 * nm and profiles tell the instantiations apart. */
#define li_rows_sigma2 GQ_ISA_NAME(li_rows_sigma2)
#define li_pack GQ_ISA_NAME(li_pack)
#define li_group GQ_ISA_NAME(li_group)
#define li_quantize GQ_ISA_NAME(li_quantize)

#define LI_QK QK_LEGACY          /* weights per legacy block */
#define LI_ROW_CHUNK (2 * LANES) /* rows whose sigma2 is computed together */



enum li_type { LI_Q4_0, LI_Q4_1, LI_Q5_0, LI_Q5_1 };

static const struct {
    int    nmax;        /* make_qx_quants' nmax or make_qkx3_quants' */
    bool   affine;      /* Q4_1/Q5_1: make_qkx3_quants, a min */
    bool   five_bit;    /* Q5_0/Q5_1: bit 4 in qh */
    size_t bytes;
} li_traits[4] = {
    [LI_Q4_0] = { 8, false, false, sizeof(blk_q4_0) },
    [LI_Q4_1] = { 15, true, false, sizeof(blk_q4_1) },
    [LI_Q5_0] = { 16, false, true, sizeof(blk_q5_0) },
    [LI_Q5_1] = { 31, true, true, sizeof(blk_q5_1) },
};

/* sigma2 = (sum of x*x over the row, from 0 in column order) / n_per_row for
 * nr <= LI_ROW_CHUNK consecutive rows: lane k of a group sums row k, 32
 * columns at a time transposed into lanes (same adds, same order). */
static void li_rows_sigma2(const float *x, int64_t n_per_row, int nr, float *sigma2)
{
    for (int r0 = 0; r0 < nr; r0 += LANES) {
        const int count = nr - r0 < LANES ? nr - r0 : LANES;
        float tile[LANES * LI_QK];
        vf acc = vf_set(0.0f), col[LI_QK];
        for (int64_t j = 0; j < n_per_row; j += LI_QK) {
            for (int k = 0; k < count; k++)
                memcpy(tile + k * LI_QK, x + (r0 + k) * n_per_row + j, sizeof(float) * LI_QK);
            gather_lanes(tile, LI_QK, count, col);
            for (int i = 0; i < LI_QK; i++)
                acc = vf_add(acc, vf_mul(col[i], col[i]));
        }
        float s[LANES];
        vf_storeu(s, vf_div(acc, vf_set((float)n_per_row)));
        memcpy(sigma2 + r0, s, sizeof(float) * (size_t)count);
    }
}

/* Pack 32 levels: nibbles (first half low, second half high), bit 4 to qh. */
static inline void li_pack(const uint8_t *L, bool five_bit, uint8_t *qs, uint8_t *qh_bytes)
{
    uint32_t qh = 0;
    for (int j = 0; j < LI_QK / 2; j++) {
        const uint8_t a = L[j], b = L[j + LI_QK / 2];
        qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
        qh |= ((a & 0x10u) >> 4) << j;
        qh |= ((b & 0x10u) >> 4) << (j + LI_QK / 2);
    }
    if (five_bit)
        memcpy(qh_bytes, &qh, sizeof qh);
}

/* count <= LANES consecutive blocks x[k*32..] (block k of the group is
 * block ib0 + k of the chunk, ib = flat index % nb; row (ib0+k) / nb). */
static void li_group(const float *x, const float *imatrix, int64_t nb, int64_t ib0, int count,
                     const float *sigma2, enum li_type t, uint8_t *out)
{
    const int nmax = li_traits[t].nmax;
    float wbuf[LANES * LI_QK];
    if (count < 1 || count > LANES)   /* never; tells the compiler wbuf[0..count) is all read */
        return;
    for (int k = 0; k < count; k++) {
        const int64_t b = ib0 + k;
        const float *qw = imatrix + (b % nb) * LI_QK, *xb = x + k * LI_QK;
        const vf s2 = vf_set(sigma2[b / nb]);
        for (int i = 0; i < LI_QK; i += LANES) {
            const vf xi = vf_loadu(xb + i);
            vf_storeu(wbuf + k * LI_QK + i,
                      vf_mul(vf_loadu(qw + i), vf_sqrt(vf_add(s2, vf_mul(xi, xi)))));
        }
    }
    sub_results res;
    if (li_traits[t].affine) {
        const qkx_params p = { LI_QK, nmax, 36, -0.9f, 0.05f, false, true };
        qkx_search_run(x, wbuf, count, W_GIVEN, &p, &res);
    } else {
        qx_search_run(x, wbuf, count, LI_QK, nmax, W_GIVEN, &res);
    }
    for (int k = 0; k < count; k++) {
        const float *xb = x + k * LI_QK;
        uint8_t L[LI_QK];
        uint8_t *o = out + (size_t)k * li_traits[t].bytes;
        const uint16_t d16 = gq_fp32_to_fp16(res.scale[k]);
        switch (t) {
        case LI_Q4_0: {
            blk_q4_0 *y = (blk_q4_0 *)o;
            levels_qx(xb, LI_QK, &res, k, nmax, L);
            y->d = d16;
            li_pack(L, false, y->qs, NULL);
            break;
        }
        case LI_Q5_0: {
            blk_q5_0 *y = (blk_q5_0 *)o;
            levels_qx(xb, LI_QK, &res, k, nmax, L);
            y->d = d16;
            li_pack(L, true, y->qs, y->qh);
            break;
        }
        case LI_Q4_1: {
            blk_q4_1 *y = (blk_q4_1 *)o;
            levels_qkx(xb, LI_QK, &res, k, nmax, L);
            y->d = d16;
            y->m = gq_fp32_to_fp16(-res.the_min[k]);
            li_pack(L, false, y->qs, NULL);
            break;
        }
        case LI_Q5_1: {
            blk_q5_1 *y = (blk_q5_1 *)o;
            levels_qkx(xb, LI_QK, &res, k, nmax, L);
            y->d = d16;
            y->m = gq_fp32_to_fp16(-res.the_min[k]);
            li_pack(L, true, y->qs, y->qh);
            break;
        }
        }
    }
}

static int (*const li_scalar[4])(const float *, void *, int64_t, int64_t, const float *) = {
    [LI_Q4_0] = gq_quantize_q4_0, [LI_Q4_1] = gq_quantize_q4_1,
    [LI_Q5_0] = gq_quantize_q5_0, [LI_Q5_1] = gq_quantize_q5_1,
};

static int li_quantize(const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                       const float *imatrix, enum li_type t)
{
    const int64_t nb = n_per_row / LI_QK;
    uint8_t *out = dst;
    if (!imatrix)   /* never called so; the scalar kernel handles it */
        return li_scalar[t](src, dst, nrows, n_per_row, imatrix);
    if (nb <= 0)
        return GGUFQ_OK;
    for (int64_t r0 = 0; r0 < nrows; r0 += LI_ROW_CHUNK) {
        const int nr = nrows - r0 < LI_ROW_CHUNK ? (int)(nrows - r0) : LI_ROW_CHUNK;
        float sigma2[LI_ROW_CHUNK];
        li_rows_sigma2(src + r0 * n_per_row, n_per_row, nr, sigma2);
        const int64_t nblk = nr * nb, first = r0 * nb;
        for (int64_t g = 0; g < nblk; g += LANES) {
            const int count = nblk - g < LANES ? (int)(nblk - g) : LANES;
            li_group(src + (first + g) * LI_QK, imatrix, nb, g, count, sigma2, t,
                     out + (size_t)(first + g) * li_traits[t].bytes);
        }
    }
    return GGUFQ_OK;
}

#define LI_ENTRY(t, T)                                                                     \
    int GQ_ISA_NAME(quantize_##t##_imatrix)(const float *src, void *dst, int64_t nrows,    \
                                            int64_t n_per_row, const float *imatrix)       \
    {                                                                                      \
        return li_quantize(src, dst, nrows, n_per_row, imatrix, T);                        \
    }
LI_ENTRY(q4_0, LI_Q4_0)
LI_ENTRY(q4_1, LI_Q4_1)
LI_ENTRY(q5_0, LI_Q5_0)
LI_ENTRY(q5_1, LI_Q5_1)
#undef LI_ENTRY

#endif
