/*
 * vec_neon.h — the NEON layer of the lane-per-sub-block quantizers
 * (4 lanes of float32x4_t, masks are all-ones uint32 lanes): the vf/vi/vm helpers, LANES,
 * vi_nearest (ggml's nearest_int trick), gather_lanes / gather_rows
 * (sub-blocks to lanes) and bsums16 (Q8_K's sums).
 *
 * Included by the NEON kernel files that use src/simd/portable/search-inl.h
 * (neon/kquants_quant_neon.c, neon/legacy_imatrix_neon.c) before that
 * header; every helper is static inline or marked unused, so a file may
 * use any subset.
 */
#ifndef GGUFQ_VEC_NEON_H
#define GGUFQ_VEC_NEON_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define LANES 4

/* What a portable body (src/simd/portable/<name>-inl.h) defines for this ISA
 * is named gq_neon_<name>, so each instantiation's symbols say which ISA they are. */
#define GQ_ISA_NAME(name) gq_neon_##name

typedef float32x4_t vf;   /* one float per lane */
typedef int32x4_t   vi;   /* one int32 per lane */
typedef uint32x4_t  vm;   /* one bool per lane: all bits set or clear */

static inline vf vf_set(float a) { return vdupq_n_f32(a); }
static inline vf vf_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vf_sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vf_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf vf_div(vf a, vf b) { return vdivq_f32(a, b); }   /* IEEE, correctly rounded */
static inline vf vf_sqrt(vf a) { return vsqrtq_f32(a); }          /* IEEE, correctly rounded */
static inline vf vf_abs(vf a) { return vabsq_f32(a); }            /* clears the sign bit */
static inline vf vf_neg(vf a) { return vnegq_f32(a); }            /* flips the sign bit */
static inline vf vf_loadu(const float *p) { return vld1q_f32(p); }
static inline void vf_storeu(float *p, vf a) { vst1q_f32(p, a); }
static inline vf vf_cvt(vi a) { return vcvtq_f32_s32(a); }
/* C's comparisons: false when either side is NaN, except != */
static inline vm vf_lt(vf a, vf b) { return vcltq_f32(a, b); }
static inline vm vf_gt(vf a, vf b) { return vcgtq_f32(a, b); }
static inline vm vf_le(vf a, vf b) { return vcleq_f32(a, b); }
static inline vm vf_eq(vf a, vf b) { return vceqq_f32(a, b); }
static inline vm vf_ne(vf a, vf b) { return vmvnq_u32(vceqq_f32(a, b)); }
/* m ? a : b */
static inline vf vf_sel(vm m, vf a, vf b) { return vbslq_f32(m, a, b); }
static inline vm vm_and(vm a, vm b) { return vandq_u32(a, b); }
static inline vm vm_andnot(vm a, vm b) { return vbicq_u32(a, b); } /* a && !b */
static inline vm vm_or(vm a, vm b) { return vorrq_u32(a, b); }
static inline vm vm_none(void) { return vdupq_n_u32(0); }
static inline bool vm_any(vm a) { return vmaxvq_u32(a) != 0; }
static inline unsigned vm_bits(vm a) /* bit k: lane k */
{
    static const uint32_t bit[4] = { 1, 2, 4, 8 };
    return vaddvq_u32(vandq_u32(a, vld1q_u32(bit)));
}
/* a > b ? a : b, so b when a is NaN — x86 maxps's rule, which the shared
 * code relies on (vmaxq_f32 would return the NaN instead) */
static inline vf vf_max_skipnan(vf a, vf b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
/* min/max of lanes that are not NaN (with NaN the result is unspecified) */
static inline vf vf_min_finite(vf a, vf b) { return vminq_f32(a, b); }
static inline vf vf_max_finite(vf a, vf b) { return vmaxq_f32(a, b); }
/* largest lane; lanes must not be NaN */
static inline float vf_hmax(vf a) { return vmaxvq_f32(a); }

static inline vi vi_set(int a) { return vdupq_n_s32(a); }
static inline vi vi_clamp(vi l, int lo, int hi)
{
    return vmaxq_s32(vi_set(lo), vminq_s32(vi_set(hi), l));
}
static inline vi vi_min(vi l, int hi) { return vminq_s32(vi_set(hi), l); }
static inline vi vi_add(vi a, vi b) { return vaddq_s32(a, b); }
static inline vm vi_ne(vi a, vi b) { return vmvnq_u32(vceqq_s32(a, b)); }
static inline vi vi_sel(vm m, vi a, vi b) { return vbslq_s32(m, a, b); }
static inline void vi_storeu(int32_t *p, vi a) { vst1q_s32(p, a); }
/* the low byte of each lane as a signed value, as a C cast to int8_t */
static inline vi vi_sext8(vi a) { return vshrq_n_s32(vshlq_n_s32(a, 24), 24); }
/* low byte of each lane to p[0..LANES) (truncation, as a C cast to uint8_t) */
static inline void vi_store_u8(uint8_t *p, vi a)
{
    const uint16x4_t h = vmovn_u32(vreinterpretq_u32_s32(a));
    const uint8x8_t b = vmovn_u16(vcombine_u16(h, h));
    const uint32_t w = vget_lane_u32(vreinterpret_u32_u8(b), 0);
    memcpy(p, &w, sizeof w);
}

/* Q8_K's bsums: out[j] = (int16_t)(sum of the lanes of q[4j .. 4j+3]), j < 16
 * (integer sums: any order is exact). */
static inline void bsums16(const vi *q, int16_t *out)
{
    for (int j = 0; j < 16; j += 4) {
        vi g[4];
        for (int k = 0; k < 4; k++) {
            const vi *v = q + 4 * (j + k);
            g[k] = vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3]));
        }
        /* two pairwise rounds: lane k = all of g[k] */
        const vi s = vpaddq_s32(vpaddq_s32(g[0], g[1]), vpaddq_s32(g[2], g[3]));
        vst1_s16(out + j, vmovn_s32(s));
    }
}

/* ggml's nearest_int: add 1.5*2^23, keep the mantissa (same bits as scalar) */
static inline vi vi_nearest(vf x)
{
    const vf v = vaddq_f32(x, vf_set(12582912.0f));
    const vi m = vandq_s32(vreinterpretq_s32_f32(v), vi_set(0x007FFFFF));
    return vsubq_s32(m, vi_set(0x00400000));
}

/* Lane k reads row[k][i] for i < n (n a multiple of 4: 16 or 32). No
 * gather on NEON: four contiguous loads per four weights, then a 4x4
 * transpose. */
static inline void transpose_rows(const float *const *row, int n, vf *out)
{
    for (int i = 0; i < n; i += 4) {
        const vf r0 = vld1q_f32(row[0] + i), r1 = vld1q_f32(row[1] + i);
        const vf r2 = vld1q_f32(row[2] + i), r3 = vld1q_f32(row[3] + i);
        /* t01 = r0[0] r1[0] r0[2] r1[2], u01 = r0[1] r1[1] r0[3] r1[3], ... */
        const float64x2_t t01 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1));
        const float64x2_t u01 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1));
        const float64x2_t t23 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3));
        const float64x2_t u23 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3));
        out[i + 0] = vreinterpretq_f32_f64(vtrn1q_f64(t01, t23));
        out[i + 1] = vreinterpretq_f32_f64(vtrn1q_f64(u01, u23));
        out[i + 2] = vreinterpretq_f32_f64(vtrn2q_f64(t01, t23));
        out[i + 3] = vreinterpretq_f32_f64(vtrn2q_f64(u01, u23));
    }
}

/* Lane k reads base[off(k) + i] for i < n, off(k) = min(k, count-1) * n:
 * lanes past count repeat the last sub-block (their results are dropped). */
static __attribute__((unused)) void gather_lanes(const float *base, int n, int count, vf *out)
{
    const float *row[LANES];
    for (int k = 0; k < LANES; k++)
        row[k] = base + (k < count ? k : count - 1) * n;
    transpose_rows(row, n, out);
}

/* Lane k reads base[sub[k] * n + i] for i < n: sub-blocks in any order. */
static __attribute__((unused)) void gather_rows(const float *base, int n, const int *sub, vf *out)
{
    const float *row[LANES];
    for (int k = 0; k < LANES; k++)
        row[k] = base + sub[k] * n;
    transpose_rows(row, n, out);
}

#endif
