/*
 * iq_quant_neon.c — NEON quantizers for the IQ grid types (IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), with and without an importance
 * matrix. SIMD twin of the searches of src/quants/iq1.c, iq2.c and iq3.c:
 * the quantizers are the scalar ones (gq_quantize_<t>_ops) given this
 * file's search table (iqsearch.h).
 *
 * How it vectorises (4 float lanes, no gathers), keeping every candidate's
 * arithmetic in the scalar's order (separate vmulq/vaddq, never fused):
 *  - Neighbour searches: one lane per candidate grid point. The weighted
 *    error w * d * d, d = scale * q - x, of every (coordinate, level) is
 *    computed once per search with the scalar's operations, into one
 *    16-byte table per coordinate (3 levels, 8-d grids) or a 32-byte table
 *    (8 levels, IQ3). A candidate's distance is 0 + term_0 + term_1 + ...
 *    in coordinate order, each term a vqtbl1q_u8 / vqtbl2q_u8 byte lookup
 *    whose indices (4 * level + byte) come from the candidates' coordinate
 *    bytes by one more vqtbl (8-d: four 8-byte coordinate rows; IQ3: the
 *    precomputed neighbour_words, loaded contiguously). Each lane keeps its
 *    own best (strict <, so its first minimum) and list position; at the
 *    end the least distance wins, the least position among equal ones: the
 *    scalar's first-minimum scan. NaN and values >= FLT_MAX never win.
 *  - Trial scales (IQ2, IQ3): rounding to the lattice runs one lane per
 *    trial (ids[] loads contiguously, the weight is broadcast), building
 *    the lattice keys and the coordinate bytes in registers; each trial's
 *    sums sum w*x*q, sum w*q*q run one lane per trial, weight by weight,
 *    the trials' level rows transposed with vzip.
 *  - IQ1_S/IQ1_M split searches: one lane per second threshold i2 (and one
 *    vector per delta sign); the first candidate in scalar order passing
 *    the running best is taken as the scalar would, and the ones after it
 *    are compared again (see the x86 twins).
 *  - IQ1 sort: rank = number of smaller values, one lane per value, when
 *    all are distinct and not NaN (else the C library's qsort, as the
 *    scalar): equal ranks reveal ties.
 *  - Rounding uses ggml's nearest_int bit trick lane-wise (exact).
 * On a real Cortex-A76/Neoverse core the 8-d search costs ~4 simple ASIMD
 * ops per (4 candidates x coordinate), with no cross-lane reduction or
 * branch inside the loop; TBL with 1-2 table registers is a single-cycle
 * op there, so the searches are bound by the independent fadd chains.
 */
#include <arm_neon.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quants/iqsearch.h"
#include "quants/tables.h"
#include "simd/simd.h"

/* byte b of lane l is b: added to 4 * level to address a float table */
static const uint8_t lane_bytes[16] = { 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3 };
static const uint32_t lane_bits[4] = { 1, 2, 4, 8 };
static const uint32_t lane_ids[4] = { 0, 1, 2, 3 };

/* Bit l set where lane l of m is all ones. */
static inline unsigned movemask4(uint32x4_t m)
{
    return vaddvq_u32(vandq_u32(m, vld1q_u32(lane_bits)));
}

/* ggml's nearest_int(x) in every lane: (bits(x + 1.5*2^23) & 0x7fffff) - 0x400000. */
static inline int32x4_t nearest_int4(float32x4_t x)
{
    const int32x4_t bits = vreinterpretq_s32_f32(vaddq_f32(x, vdupq_n_f32(12582912.0f)));
    return vsubq_s32(vandq_s32(bits, vdupq_n_s32(0x007FFFFF)), vdupq_n_s32(0x00400000));
}

/* Lattice level nearest_int(0.5 * (id * x - 1)) clamped to 0..maxl, lane-wise. */
static inline int32x4_t round_levels4(float32x4_t id, float32x4_t x, int maxl)
{
    const float32x4_t v = vmulq_f32(vdupq_n_f32(0.5f),
                                    vsubq_f32(vmulq_f32(id, x), vdupq_n_f32(1.0f)));
    return vmaxq_s32(vminq_s32(nearest_int4(v), vdupq_n_s32(maxl)), vdupq_n_s32(0));
}

/*
 * End of a neighbour search whose lanes kept their own best distance (strict
 * <, from FLT_MAX) and its list position: the least distance, the least
 * position among equals. Returns the position, or -1 if no lane got below
 * FLT_MAX.
 */
static inline int resolve_best(float32x4_t best, uint32x4_t best_pos)
{
    const float mn = vminvq_f32(best); /* never NaN: only values < best are kept */
    if (!(mn < FLT_MAX))
        return -1;
    const uint32x4_t at = vbslq_u32(vceqq_f32(best, vdupq_n_f32(mn)), best_pos,
                                    vdupq_n_u32(UINT32_MAX));
    return (int)vminvq_u32(at);
}

/* ------------------------------------------------------------------------- */
/* 8-dimensional grids (IQ2, IQ1)                                            */
/* ------------------------------------------------------------------------- */

/* pick8[k]: lane l gets byte k of candidate l's coordinate row (rows of 8 bytes) */
#define PICK8(k) { k, k, k, k, 8 + k, 8 + k, 8 + k, 8 + k, \
                   16 + k, 16 + k, 16 + k, 16 + k, 24 + k, 24 + k, 24 + k, 24 + k }
static const uint8_t pick8[8][16] = { PICK8(0), PICK8(1), PICK8(2), PICK8(3),
                                      PICK8(4), PICK8(5), PICK8(6), PICK8(7) };
#undef PICK8

static int nearest8_neon(const gq_iqgrid *g, int32_t m, const float *xval, const float *weight,
                         float scale, const float q[3], int8_t *L)
{
    const uint16_t *nb = gq_iqgrid_neighbours(g, m);
    const int n = nb[0];
    /* tab[k] lane c = weight[k] * d * d, d = scale * q[c] - xval[k] */
    const float qv[4] = { q[0], q[1], q[2], 0.0f };
    const float32x4_t sq = vmulq_f32(vdupq_n_f32(scale), vld1q_f32(qv));
    uint8x16_t tab[8];
    for (int k = 0; k < 8; ++k) {
        const float32x4_t d = vsubq_f32(sq, vld1q_dup_f32(xval + k));
        tab[k] = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(vld1q_dup_f32(weight + k), d), d));
    }
    const uint8x16_t lanebyte = vld1q_u8(lane_bytes);
    const uint32x4_t count = vdupq_n_u32((uint32_t)n);
    float32x4_t best = vdupq_n_f32(FLT_MAX);
    uint32x4_t pos = vld1q_u32(lane_ids), best_pos = vdupq_n_u32(0);
    for (int j = 0; j < n; j += 4, pos = vaddq_u32(pos, vdupq_n_u32(4))) {
        uint16_t e[4];
        memcpy(e, nb + 1 + j, sizeof e); /* the lists are padded: in bounds */
        for (int l = n - j; l < 4; ++l)
            e[l] = e[0]; /* past the list: any real grid point, masked below */
        uint8x16x2_t c; /* 4 * coordinate, candidate l in bytes 8l..8l+7 */
        c.val[0] = vshlq_n_u8(vcombine_u8(vld1_u8(g->coords[e[0]]), vld1_u8(g->coords[e[1]])), 2);
        c.val[1] = vshlq_n_u8(vcombine_u8(vld1_u8(g->coords[e[2]]), vld1_u8(g->coords[e[3]])), 2);
        float32x4_t d2 = vdupq_n_f32(0.0f);
        for (int k = 0; k < 8; ++k) {
            const uint8x16_t idx = vorrq_u8(vqtbl2q_u8(c, vld1q_u8(pick8[k])), lanebyte);
            d2 = vaddq_f32(d2, vreinterpretq_f32_u8(vqtbl1q_u8(tab[k], idx)));
        }
        const uint32x4_t lt = vandq_u32(vcltq_f32(d2, best), vcltq_u32(pos, count));
        best = vbslq_f32(lt, d2, best);
        best_pos = vbslq_u32(lt, pos, best_pos);
    }
    const int at = resolve_best(best, best_pos);
    if (at < 0)
        return -1;
    const int index = nb[1 + at];
    memcpy(L, g->coords[index], 8);
    return index;
}

static const float iq2_q[3] = { 1, 3, 5 }; /* 2 * c + 1 */
static const int32_t pow3[8] = { 1, 3, 9, 27, 81, 243, 729, 2187 };

static int iq2_round8_neon(const gq_iqgrid *g, const float *xval, const float *waux, float id,
                           float scale, int8_t *L)
{
    const float32x4_t vid = vdupq_n_f32(id);
    const int32x4_t l0 = round_levels4(vid, vld1q_f32(xval), 2);
    const int32x4_t l1 = round_levels4(vid, vld1q_f32(xval + 4), 2);
    vst1_s8(L, vmovn_s16(vcombine_s16(vmovn_s32(l0), vmovn_s32(l1))));
    const int key = vaddvq_s32(vaddq_s32(vmulq_s32(l0, vld1q_s32(pow3)),
                                         vmulq_s32(l1, vld1q_s32(pow3 + 4))));
    const int32_t m = g->map[key];
    if (m >= 0)
        return 1;
    return nearest8_neon(g, m, xval, waux, scale, iq2_q, L) >= 0 ? 0 : -1;
}

/*
 * Each trial's sum weight*xval*q and sum weight*q*q over its n (16 or 32)
 * weights (q = 2L+1, trial tr's levels at L + stride * tr), one lane per
 * trial, accumulated weight by weight as the scalar. Four trials' rows are
 * transposed with vzip so that each weight's 4 levels sit in one word.
 */
static void trial_sums(const float *xval, const float *weight, int n, int ntrials,
                       const int8_t *L, int stride, float *sumqx, float *sumq2)
{
    static const uint8_t zero_row[32];
    for (int t0 = 0; t0 < ntrials; t0 += 4) {
        const int nt = ntrials - t0 < 4 ? ntrials - t0 : 4;
        const uint8_t *row[4];
        for (int t = 0; t < 4; ++t)
            row[t] = t < nt ? (const uint8_t *)L + (size_t)stride * (size_t)(t0 + t) : zero_row;
        float32x4_t sx = vdupq_n_f32(0.0f), s2 = sx;
        for (int c = 0; c < n; c += 16) {
            const uint8x16_t r0 = vld1q_u8(row[0] + c), r1 = vld1q_u8(row[1] + c);
            const uint8x16_t r2 = vld1q_u8(row[2] + c), r3 = vld1q_u8(row[3] + c);
            const uint16x8_t a = vreinterpretq_u16_u8(vzip1q_u8(r0, r1));
            const uint16x8_t a2 = vreinterpretq_u16_u8(vzip2q_u8(r0, r1));
            const uint16x8_t b = vreinterpretq_u16_u8(vzip1q_u8(r2, r3));
            const uint16x8_t b2 = vreinterpretq_u16_u8(vzip2q_u8(r2, r3));
            /* word e of quad[g4]: the 4 trials' levels of weight c + 4*g4 + e */
            const uint8x16_t quad[4] = {
                vreinterpretq_u8_u16(vzip1q_u16(a, b)), vreinterpretq_u8_u16(vzip2q_u16(a, b)),
                vreinterpretq_u8_u16(vzip1q_u16(a2, b2)), vreinterpretq_u8_u16(vzip2q_u16(a2, b2)),
            };
            for (int g4 = 0; g4 < 4; ++g4) {
                const uint16x8_t h0 = vmovl_u8(vget_low_u8(quad[g4]));
                const uint16x8_t h1 = vmovl_high_u8(quad[g4]);
                const uint32x4_t lv[4] = { vmovl_u16(vget_low_u16(h0)), vmovl_high_u16(h0),
                                           vmovl_u16(vget_low_u16(h1)), vmovl_high_u16(h1) };
                for (int e = 0; e < 4; ++e) {
                    const int i = c + 4 * g4 + e;
                    const float32x4_t q = vcvtq_f32_u32(vaddq_u32(vshlq_n_u32(lv[e], 1),
                                                                  vdupq_n_u32(1)));
                    const float w = weight[i];
                    const float wx = w * xval[i];
                    sx = vaddq_f32(sx, vmulq_n_f32(q, wx));
                    s2 = vaddq_f32(s2, vmulq_f32(vmulq_n_f32(q, w), q));
                }
            }
        }
        float fx[4], f2[4];
        vst1q_f32(fx, sx);
        vst1q_f32(f2, s2);
        memcpy(sumqx + t0, fx, sizeof(float) * (size_t)nt);
        memcpy(sumq2 + t0, f2, sizeof(float) * (size_t)nt);
    }
}

/*
 * Every trial of a group: the rounding runs one lane per trial (4 trials at
 * a time, one group of 8 after the other), the off-grid ones then take
 * their nearest neighbour one by one, and trial_sums sums each trial.
 */
static int iq2_trials_neon(const gq_iqgrid *g, const float *xval, const float *weight,
                           const float *waux, int nsub, int ntrials, const float *ids,
                           const float *scales, gq_iq2_trial_out *out)
{
    float idp[GQ_IQ2_MAX_TRIALS + 3] = { 0 };
    memcpy(idp, ids, sizeof(float) * (size_t)ntrials);
    const int rowlen = 8 * nsub;
    for (int t0 = 0; t0 < ntrials; t0 += 4) {
        const int nt = ntrials - t0 < 4 ? ntrials - t0 : 4;
        const float32x4_t id = vld1q_f32(idp + t0);
        for (int k = 0; k < nsub; ++k) {
            int32x4_t key = vdupq_n_s32(0);
            uint32x4_t w[2] = { vdupq_n_u32(0), vdupq_n_u32(0) };
            for (int i = 0; i < 8; ++i) {
                const int32x4_t l = round_levels4(id, vld1q_dup_f32(xval + 8 * k + i), 2);
                key = vmlaq_n_s32(key, l, pow3[i]);
                w[i / 4] = vorrq_u32(w[i / 4], vshlq_u32(vreinterpretq_u32_s32(l),
                                                         vdupq_n_s32(8 * (i % 4))));
            }
            uint32_t words[8]; /* trial t's 8 coordinate bytes: words[2t], words[2t+1] */
            int32_t keys[4];
            vst1q_u32(words, vzip1q_u32(w[0], w[1]));
            vst1q_u32(words + 4, vzip2q_u32(w[0], w[1]));
            vst1q_s32(keys, key);
            for (int t = 0; t < nt; ++t) {
                const int tr = t0 + t;
                int8_t *Lt = out->L + rowlen * tr + 8 * k;
                memcpy(Lt, words + 2 * t, 8);
                const int32_t m = g->map[keys[t]];
                out->on_grid[nsub * tr + k] = m >= 0;
                if (m < 0 && nearest8_neon(g, m, xval + 8 * k, waux + 8 * k, scales[tr], iq2_q,
                                           Lt) < 0)
                    return -1;
            }
        }
    }
    trial_sums(xval, weight, rowlen, ntrials, out->L, rowlen, out->sumqx, out->sumq2);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* 4-dimensional grids (IQ3)                                                 */
/* ------------------------------------------------------------------------- */

/* pick4[i]: lane l gets byte i of its word (8i + level, times 4 = 32i + 4 level) */
#define PICK4(i) { i, i, i, i, 4 + i, 4 + i, 4 + i, 4 + i, \
                   8 + i, 8 + i, 8 + i, 8 + i, 12 + i, 12 + i, 12 + i, 12 + i }
static const uint8_t pick4[4][16] = { PICK4(0), PICK4(1), PICK4(2), PICK4(3) };
#undef PICK4
/* offs4[i]: byte b - 32i (mod 256), turning 32i + 4 level into 4 level + b */
#define OFFS4(i) { (uint8_t)(0 - 32 * i), (uint8_t)(1 - 32 * i), (uint8_t)(2 - 32 * i), \
                   (uint8_t)(3 - 32 * i), (uint8_t)(0 - 32 * i), (uint8_t)(1 - 32 * i), \
                   (uint8_t)(2 - 32 * i), (uint8_t)(3 - 32 * i), (uint8_t)(0 - 32 * i), \
                   (uint8_t)(1 - 32 * i), (uint8_t)(2 - 32 * i), (uint8_t)(3 - 32 * i), \
                   (uint8_t)(0 - 32 * i), (uint8_t)(1 - 32 * i), (uint8_t)(2 - 32 * i), \
                   (uint8_t)(3 - 32 * i) }
static const uint8_t offs4[4][16] = { OFFS4(0), OFFS4(1), OFFS4(2), OFFS4(3) };
#undef OFFS4

/*
 * iq3.c's best_neighbour: among the neighbours of the off-grid lattice
 * point `key`, the one nearest to xval at this scale in the weighted
 * metric (first on ties, only below FLT_MAX); its levels go to L. Returns
 * its grid index or -1.
 */
static int iq3_nearest_neon(const gq_iq3_search *s, int key, const float *xval,
                            const float *weight, float scale, int8_t *L)
{
    static const float q_lo[4] = { 1, 3, 5, 7 }, q_hi[4] = { 9, 11, 13, 15 };
    const uint32_t start = s->list_start[key];
    const uint16_t *list = s->neighbours + start;
    const uint32_t *words = s->neighbour_words + start + 1;
    const int n = list[0];
    /* tab[i] float l = weight[i] * d * d, d = scale * (2l + 1) - xval[i] */
    const float32x4_t sc = vdupq_n_f32(scale);
    const float32x4_t sq_lo = vmulq_f32(sc, vld1q_f32(q_lo)), sq_hi = vmulq_f32(sc, vld1q_f32(q_hi));
    uint8x16x2_t tab[4];
    for (int i = 0; i < 4; ++i) {
        const float32x4_t x = vld1q_dup_f32(xval + i), w = vld1q_dup_f32(weight + i);
        const float32x4_t d_lo = vsubq_f32(sq_lo, x), d_hi = vsubq_f32(sq_hi, x);
        tab[i].val[0] = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(w, d_lo), d_lo));
        tab[i].val[1] = vreinterpretq_u8_f32(vmulq_f32(vmulq_f32(w, d_hi), d_hi));
    }
    const uint32x4_t count = vdupq_n_u32((uint32_t)n);
    float32x4_t best = vdupq_n_f32(FLT_MAX);
    uint32x4_t pos = vld1q_u32(lane_ids), best_pos = vdupq_n_u32(0);
    for (int j = 0; j < n; j += 4, pos = vaddq_u32(pos, vdupq_n_u32(4))) {
        uint32x4_t wv;
        if (n - j >= 4) {
            wv = vld1q_u32(words + j);
        } else { /* the last list ends the array: no reading past it */
            uint32_t tail[4] = { 0, 0, 0, 0 };
            memcpy(tail, words + j, sizeof(uint32_t) * (size_t)(n - j));
            wv = vld1q_u32(tail);
        }
        const uint8x16_t w4 = vshlq_n_u8(vreinterpretq_u8_u32(wv), 2);
        float32x4_t d2 = vdupq_n_f32(0.0f);
        for (int i = 0; i < 4; ++i) {
            const uint8x16_t idx = vaddq_u8(vqtbl1q_u8(w4, vld1q_u8(pick4[i])), vld1q_u8(offs4[i]));
            d2 = vaddq_f32(d2, vreinterpretq_f32_u8(vqtbl2q_u8(tab[i], idx)));
        }
        const uint32x4_t lt = vandq_u32(vcltq_f32(d2, best), vcltq_u32(pos, count));
        best = vbslq_f32(lt, d2, best);
        best_pos = vbslq_u32(lt, pos, best_pos);
    }
    const int at = resolve_best(best, best_pos);
    if (at < 0)
        return -1;
    const int index = list[1 + at];
    for (int i = 0; i < 4; ++i)
        L[i] = (int8_t)((s->coord[index][i] - 1) / 2);
    return index;
}

static const int32_t key_shifts[4] = { 0, 3, 6, 9 };

static int iq3_round4_neon(const gq_iq3_search *s, const float *xval, const float *waux,
                           float id, float scale, int8_t *L)
{
    const int32x4_t l = round_levels4(vdupq_n_f32(id), vld1q_f32(xval), 7);
    const int8x8_t b = vmovn_s16(vcombine_s16(vmovn_s32(l), vdup_n_s16(0)));
    const uint32_t packed = vget_lane_u32(vreinterpret_u32_s8(b), 0);
    memcpy(L, &packed, 4);
    const int key = vaddvq_s32(vshlq_s32(l, vld1q_s32(key_shifts)));
    if (s->grid_index[key] >= 0)
        return 1;
    return iq3_nearest_neon(s, key, xval, waux, scale, L) >= 0 ? 0 : -1;
}

/* As iq2_trials_neon, for the 8 quads of a group of 32. */
static int iq3_trials_neon(const gq_iq3_search *s, const float *xval, const float *weight,
                           const float *waux, int ntrials, const float *ids, const float *scales,
                           gq_iq3_trial_out *out)
{
    float idp[GQ_IQ3_MAX_TRIALS + 3] = { 0 };
    memcpy(idp, ids, sizeof(float) * (size_t)ntrials);
    for (int t0 = 0; t0 < ntrials; t0 += 4) {
        const int nt = ntrials - t0 < 4 ? ntrials - t0 : 4;
        const float32x4_t id = vld1q_f32(idp + t0);
        for (int k = 0; k < 8; ++k) {
            int32x4_t key = vdupq_n_s32(0);
            uint32x4_t word = vdupq_n_u32(0);
            for (int i = 0; i < 4; ++i) {
                const int32x4_t l = round_levels4(id, vld1q_dup_f32(xval + 4 * k + i), 7);
                key = vorrq_s32(key, vshlq_s32(l, vdupq_n_s32(3 * i)));
                word = vorrq_u32(word, vshlq_u32(vreinterpretq_u32_s32(l), vdupq_n_s32(8 * i)));
            }
            uint32_t words[4];
            int32_t keys[4];
            vst1q_u32(words, word);
            vst1q_s32(keys, key);
            for (int t = 0; t < nt; ++t) {
                const int tr = t0 + t;
                int8_t *Lt = out->L[tr] + 4 * k;
                memcpy(Lt, words + t, 4);
                const bool on = s->grid_index[keys[t]] >= 0;
                out->on_grid[tr][k] = on;
                if (!on && iq3_nearest_neon(s, keys[t], xval + 4 * k, waux + 4 * k, scales[tr],
                                            Lt) < 0)
                    return -1;
            }
        }
    }
    trial_sums(xval, weight, 32, ntrials, out->L[0], 32, out->sumqx, out->sumq2);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* IQ1 split searches and sort                                               */
/* ------------------------------------------------------------------------- */

/* iq1.c's decoded values of the coordinates 0, 1, 2 for a delta of + / -. */
static const float x_plus[3]  = { -1 + GQ_IQ1S_DELTA,  GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
static const float x_minus[3] = { -1 - GQ_IQ1S_DELTA, -GQ_IQ1S_DELTA, 1 - GQ_IQ1S_DELTA };

/* Lanes (bits) passing the scalar's test sumq2 > 0 && sumqx * sumqx > best * sumq2. */
static inline unsigned passing(unsigned lanes, float32x4_t qx, float32x4_t q2, float best)
{
    const uint32x4_t pos = vcgtq_f32(q2, vdupq_n_f32(0.0f));
    const uint32x4_t gt = vcgtq_f32(vmulq_f32(qx, qx), vmulq_f32(vdupq_n_f32(best), q2));
    return movemask4(vandq_u32(pos, gt)) & lanes;
}

/* Lane bits of variant v moved to scalar order: lane l -> bit nv * l + v. */
static inline unsigned in_scalar_order(unsigned m, int nv, int v)
{
    unsigned r = 0;
    for (int l = 0; l < 4; ++l)
        r |= ((m >> l) & 1u) << (nv * l + v);
    return r;
}

typedef struct split_best {
    float score, scale;
    int   i1, i2, variant;
} split_best;

static inline void take(split_best *b, const float (*fscale)[4], const float (*fscore)[4],
                        int lane, int var, int i1, int i2_0)
{
    b->scale = fscale[var][lane];
    b->score = fscore[var][lane];
    b->i1 = i1;
    b->i2 = i2_0 + lane;
    b->variant = var;
}

/*
 * The scalar's sequential comparisons over one chunk of candidates: nv
 * variants per lane (scalar order: lane, then variant), lane l meaning
 * i2 = i2_0 + l; qx/q2 hold one vector per variant. As the x86 twins: the
 * candidates failing against the entry score S0 keep failing while the
 * best stays >= S0 (q2 > 0 and x -> x * q2 rounds monotonically), so only
 * those passing against S0 are tested in order; if a taken score falls
 * below S0 (or is NaN), the rest of the chunk is compared again after each
 * winner.
 */
static void scan_chunk(const float32x4_t *qx, const float32x4_t *q2, int nv, unsigned valid,
                       int i1, int i2_0, split_best *b)
{
    unsigned m[4], any = 0;
    for (int v = 0; v < nv; ++v) {
        m[v] = passing(valid, qx[v], q2[v], b->score);
        any |= m[v];
    }
    if (!any)
        return;
    /* what the scalar computes for a winner: scale = qx / q2, score = scale * qx */
    float fscale[4][4], fscore[4][4], fqxx[4][4], fq2[4][4];
    for (int v = 0; v < nv; ++v) {
        const float32x4_t scale = vdivq_f32(qx[v], q2[v]);
        vst1q_f32(fscale[v], scale);
        vst1q_f32(fscore[v], vmulq_f32(scale, qx[v]));
        vst1q_f32(fqxx[v], vmulq_f32(qx[v], qx[v]));
        vst1q_f32(fq2[v], q2[v]);
    }
    const float s0 = b->score;
    unsigned passed = 0;
    for (int v = 0; v < nv; ++v)
        passed |= in_scalar_order(m[v], nv, v);
    for (; passed; passed &= passed - 1) {
        const int pos = __builtin_ctz(passed), lane = pos / nv, var = pos % nv;
        if (!(fqxx[var][lane] > b->score * fq2[var][lane]))
            continue;
        take(b, (const float (*)[4])fscale, (const float (*)[4])fscore, lane, var, i1, i2_0);
        if (b->score >= s0)
            continue;
        for (int v = 0; v < nv; ++v) {
            const int first = v > var ? lane : lane + 1;
            m[v] = passing(valid & (0xFu << first), qx[v], q2[v], b->score);
        }
        break;
    }
    if (!passed)
        return;
    for (;;) {
        unsigned order = 0;
        for (int v = 0; v < nv; ++v)
            order |= in_scalar_order(m[v], nv, v);
        if (!order)
            return;
        const int pos = __builtin_ctz(order), lane = pos / nv, var = pos % nv;
        take(b, (const float (*)[4])fscale, (const float (*)[4])fscore, lane, var, i1, i2_0);
        for (int v = 0; v < nv; ++v) {
            const int first = v > var ? lane : lane + 1;
            m[v] = passing(valid & (0xFu << first), qx[v], q2[v], b->score);
        }
    }
}

static inline unsigned valid_lanes(int count)
{
    return count >= 4 ? 0xFu : (1u << count) - 1;
}

static bool iq1s_split_neon(const float *sumx, const float *sumw, int *i1_out, int *i2_out,
                            int *shift_out, float *scale_io)
{
    enum { N = 32 };
    /* padded copies: the last chunk reads 3 entries past sums[N] */
    float sx[N + 4] = { 0 }, sw[N + 4] = { 0 };
    memcpy(sx, sumx, sizeof(float) * (N + 1));
    memcpy(sw, sumw, sizeof(float) * (N + 1));
    const float *xv[2] = { x_plus, x_minus };
    split_best b = { -FLT_MAX, *scale_io, -1, -1, -1 };
    const float32x4_t xn = vdupq_n_f32(sx[N]), wn = vdupq_n_f32(sw[N]);
    for (int i1 = 0; i1 <= N; ++i1) {
        const float32x4_t x1 = vdupq_n_f32(sx[i1] - sx[0]), w1 = vdupq_n_f32(sw[i1] - sw[0]);
        const float32x4_t xi1 = vdupq_n_f32(sx[i1]), wi1 = vdupq_n_f32(sw[i1]);
        for (int i2 = i1; i2 <= N; i2 += 4) {
            const float32x4_t x2 = vld1q_f32(sx + i2), w2 = vld1q_f32(sw + i2);
            const float32x4_t dx12 = vsubq_f32(x2, xi1), dx2n = vsubq_f32(xn, x2);
            const float32x4_t dw12 = vsubq_f32(w2, wi1), dw2n = vsubq_f32(wn, w2);
            float32x4_t qx[2], q2[2];
            for (int s = 0; s < 2; ++s) {
                const float32x4_t v0 = vdupq_n_f32(xv[s][0]), v1 = vdupq_n_f32(xv[s][1]);
                const float32x4_t v2 = vdupq_n_f32(xv[s][2]);
                qx[s] = vaddq_f32(vaddq_f32(vmulq_f32(x1, v0), vmulq_f32(dx12, v1)),
                                  vmulq_f32(dx2n, v2));
                q2[s] = vaddq_f32(vaddq_f32(vmulq_f32(vmulq_f32(w1, v0), v0),
                                            vmulq_f32(vmulq_f32(dw12, v1), v1)),
                                  vmulq_f32(vmulq_f32(dw2n, v2), v2));
            }
            scan_chunk(qx, q2, 2, valid_lanes(N + 1 - i2), i1, i2, &b);
        }
    }
    *scale_io = b.scale;
    *i1_out = b.i1;
    *i2_out = b.i2;
    *shift_out = b.variant < 0 ? 0 : b.variant == 0 ? 1 : -1;
    return b.i1 >= 0 && b.i2 >= 0 && b.variant >= 0;
}

static bool iq1m_split_neon(const gq_iq1m_sums *sums, int *i1_out, int *i2_out, int *k_out,
                            float *scale_io)
{
    enum { N = 16 };
    float sx[2][N + 4] = { { 0 } }, sw[2][N + 4] = { { 0 } }; /* padded as in iq1s_split_neon */
    for (int h = 0; h < 2; ++h) {
        memcpy(sx[h], sums->sx[h], sizeof(float) * (N + 1));
        memcpy(sw[h], sums->sw[h], sizeof(float) * (N + 1));
    }
    const float *values[2] = { x_plus, x_minus };
    float d01[2], d12[2], cx[2][2], cw[2][2]; /* as gq_iq1m_split_scalar */
    for (int s = 0; s < 2; ++s) {
        const float *v = values[s];
        d01[s] = v[0] * v[0] - v[1] * v[1];
        d12[s] = v[1] * v[1] - v[2] * v[2];
        for (int h = 0; h < 2; ++h) {
            cx[h][s] = sx[h][N] * v[2];
            cw[h][s] = sw[h][N] * v[2] * v[2];
        }
    }
    split_best b = { -FLT_MAX, *scale_io, -1, -1, -1 };
    for (int i1 = 0; i1 <= N; ++i1) {
        float a[2][2];
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 2; ++s)
                a[h][s] = sw[h][i1] * d01[s] + cw[h][s];
        for (int i2 = i1; i2 <= N; i2 += 4) {
            float32x4_t qxh[2][2], q2h[2][2];
            for (int h = 0; h < 2; ++h) {
                const float32x4_t sx2 = vld1q_f32(sx[h] + i2), sw2 = vld1q_f32(sw[h] + i2);
                const float32x4_t sxx = vaddq_f32(sx2, vdupq_n_f32(sx[h][i1]));
                for (int s = 0; s < 2; ++s) {
                    qxh[h][s] = vsubq_f32(vdupq_n_f32(cx[h][s]), sxx);
                    q2h[h][s] = vaddq_f32(vmulq_f32(sw2, vdupq_n_f32(d12[s])),
                                          vdupq_n_f32(a[h][s]));
                }
            }
            float32x4_t qx[4], q2[4];
            for (int k = 0; k < 4; ++k) {
                qx[k] = vaddq_f32(qxh[0][k >> 1], qxh[1][k & 1]);
                q2[k] = vaddq_f32(q2h[0][k >> 1], q2h[1][k & 1]);
            }
            scan_chunk(qx, q2, 4, valid_lanes(N + 1 - i2), i1, i2, &b);
        }
    }
    *scale_io = b.scale;
    *i1_out = b.i1;
    *i2_out = b.i2;
    *k_out = b.variant;
    return b.i1 >= 0 && b.i2 >= 0 && b.variant >= 0;
}

/*
 * The positions of xb[0..n) in ascending order: position j goes to rank
 * #{i: x_i < x_j}, counted one lane per j. That is the one order any sort
 * gives when the values are distinct and not NaN; two equal ranks mean a
 * tie, and then (as with NaN) the C library's qsort decides, as the scalar.
 */
static void iq1_sort_neon(int n, const float *xb, int32_t *order)
{
    if (n > 32 || n % 4 != 0) {
        gq_iq1_sort_scalar(n, xb, order);
        return;
    }
    const int nv = n / 4;
    float32x4_t v[8];
    uint32x4_t rank[8], ordered = vdupq_n_u32(UINT32_MAX);
    for (int r = 0; r < nv; ++r) {
        v[r] = vld1q_f32(xb + 4 * r);
        ordered = vandq_u32(ordered, vceqq_f32(v[r], v[r]));
        rank[r] = vdupq_n_u32(0);
    }
    if (vminvq_u32(ordered) == 0) {
        gq_iq1_sort_scalar(n, xb, order);
        return;
    }
    for (int i = 0; i < n; ++i) {
        const float32x4_t xi = vld1q_dup_f32(xb + i);
        for (int r = 0; r < nv; ++r) /* all ones (-1) where x_i < x_j */
            rank[r] = vsubq_u32(rank[r], vcltq_f32(xi, v[r]));
    }
    uint32_t ranks[32];
    for (int r = 0; r < nv; ++r)
        vst1q_u32(ranks + 4 * r, rank[r]);
    uint32_t seen = 0;
    for (int j = 0; j < n; ++j) {
        const uint32_t bit = 1u << ranks[j];
        if (seen & bit) {
            gq_iq1_sort_scalar(n, xb, order);
            return;
        }
        seen |= bit;
        order[ranks[j]] = j;
    }
}

/* ------------------------------------------------------------------------- */
/* The quantizers                                                            */
/* ------------------------------------------------------------------------- */

static const gq_iq_search_ops ops = {
    .nearest8   = nearest8_neon,
    .iq2_round8 = iq2_round8_neon,
    .iq2_trials = iq2_trials_neon,
    .iq2_search = gq_iq2_search_scalar,
    .iq2_prep   = gq_iq2_prep_scalar,
    .iq3_round4 = iq3_round4_neon,
    .iq3_trials = iq3_trials_neon,
    .iq1s_split = iq1s_split_neon,
    .iq1m_split = iq1m_split_neon,
    .iq1_sort   = iq1_sort_neon,
};

#define IQ_QUANTIZER(t)                                                                 \
    int gq_neon_quantize_##t(const float *src, void *dst, int64_t nrows,                \
                                   int64_t n_per_row, const float *imatrix)             \
    {                                                                                   \
        return gq_quantize_##t##_ops(&ops, src, dst, nrows, n_per_row, imatrix);        \
    }
IQ_QUANTIZER(iq2_xxs)
IQ_QUANTIZER(iq2_xs)
IQ_QUANTIZER(iq2_s)
IQ_QUANTIZER(iq3_xxs)
IQ_QUANTIZER(iq3_s)
IQ_QUANTIZER(iq1_s)
IQ_QUANTIZER(iq1_m)
#undef IQ_QUANTIZER
