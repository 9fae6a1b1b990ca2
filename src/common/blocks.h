/*
 * blocks.h — every ggml block layout, once: weights per block, the block
 * structs (ggml-common.h's, byte for byte), the unaligned little-endian
 * loads kernels read fields with, and the scale packers several kernel
 * families share.
 *
 * Depends on nothing but the C library, so gguf/ (types.c static-asserts its
 * size table against these structs), quants/ and simd/ all include it.
 * Structs are byte-aligned (GQ_BLOCK): a kernel may be handed a pointer at
 * any address (the public API promises that) without misaligned member
 * accesses; the layouts have no padding, so sizes are ggml's. F16 fields are
 * uint16_t bits. Fields are as ggml names them.
 */
#ifndef GGUFQ_COMMON_BLOCKS_H
#define GGUFQ_COMMON_BLOCKS_H

#include <stdint.h>
#include <string.h>

#define GQ_BLOCK __attribute__((packed, aligned(1)))

/* Weights per block. */
#define QK_K        256  /* K-quants, IQ2/IQ3/IQ1, IQ4_XS, TQ1_0/TQ2_0 (super-block) */
#define QK_LEGACY   32   /* Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 */
#define QK4_NL      32
#define QK_MXFP4    32
#define QK_NVFP4    64
#define QK_NVFP4_SUB 16  /* weights per UE4M3 scale */
#define QK1_0       128
#define QK2_0       64

/* legacy.c */
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK_LEGACY / 2]; } blk_q4_0;
typedef struct GQ_BLOCK { uint16_t d, m; uint8_t qs[QK_LEGACY / 2]; } blk_q4_1;
typedef struct GQ_BLOCK { uint16_t d; uint8_t qh[4]; uint8_t qs[QK_LEGACY / 2]; } blk_q5_0;
typedef struct GQ_BLOCK { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK_LEGACY / 2]; } blk_q5_1;
typedef struct GQ_BLOCK { uint16_t d; int8_t qs[QK_LEGACY]; } blk_q8_0;
typedef struct GQ_BLOCK { uint16_t d, s; int8_t qs[QK_LEGACY]; } blk_q8_1;
/* lowbit.c */
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK1_0 / 8]; } blk_q1_0;
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK2_0 / 4]; } blk_q2_0;
/* kquants.c */
typedef struct GQ_BLOCK { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } blk_q2_K;
typedef struct GQ_BLOCK { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } blk_q3_K;
typedef struct GQ_BLOCK { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } blk_q4_K;
typedef struct GQ_BLOCK { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } blk_q5_K;
typedef struct GQ_BLOCK { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } blk_q6_K;
typedef struct GQ_BLOCK { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } blk_q8_K;
/* iq2.c */
typedef struct GQ_BLOCK { uint16_t d; uint16_t qs[QK_K / 8]; } blk_iq2_xxs;
typedef struct GQ_BLOCK { uint16_t d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } blk_iq2_xs;
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } blk_iq2_s;
/* iq3.c */
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[3 * QK_K / 8]; } blk_iq3_xxs;
typedef struct GQ_BLOCK {
    uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64];
} blk_iq3_s;
/* iq1.c (IQ1_M keeps its F16 scale in the top nibbles of scales) */
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } blk_iq1_s;
typedef struct GQ_BLOCK { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } blk_iq1_m;
/* iq4.c */
typedef struct GQ_BLOCK { uint16_t d; uint8_t qs[QK4_NL / 2]; } blk_iq4_nl;
typedef struct GQ_BLOCK { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } blk_iq4_xs;
/* ternary.c */
typedef struct GQ_BLOCK { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; uint16_t d; } blk_tq1_0;
typedef struct GQ_BLOCK { uint8_t qs[QK_K / 4]; uint16_t d; } blk_tq2_0;
/* fp4.c (E8M0 / UE4M3 scales, see quants/fp8.h) */
typedef struct GQ_BLOCK { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } blk_mxfp4;
typedef struct GQ_BLOCK { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } blk_nvfp4;

/* ggml's sizes (gguf/types.c checks its table against these structs too). */
_Static_assert(sizeof(blk_q4_0) == 18 && sizeof(blk_q4_1) == 20 && sizeof(blk_q5_0) == 22 &&
               sizeof(blk_q5_1) == 24 && sizeof(blk_q8_0) == 34 && sizeof(blk_q8_1) == 36,
               "legacy blocks");
_Static_assert(sizeof(blk_q1_0) == 18 && sizeof(blk_q2_0) == 18, "low-bit blocks");
_Static_assert(sizeof(blk_q2_K) == 84 && sizeof(blk_q3_K) == 110 && sizeof(blk_q4_K) == 144 &&
               sizeof(blk_q5_K) == 176 && sizeof(blk_q6_K) == 210 && sizeof(blk_q8_K) == 292,
               "K-quant blocks");
_Static_assert(sizeof(blk_iq2_xxs) == 66 && sizeof(blk_iq2_xs) == 74 && sizeof(blk_iq2_s) == 82 &&
               sizeof(blk_iq3_xxs) == 98 && sizeof(blk_iq3_s) == 110 && sizeof(blk_iq1_s) == 50 &&
               sizeof(blk_iq1_m) == 56 && sizeof(blk_iq4_nl) == 18 && sizeof(blk_iq4_xs) == 136,
               "IQ blocks");
_Static_assert(sizeof(blk_tq1_0) == 54 && sizeof(blk_tq2_0) == 66 && sizeof(blk_mxfp4) == 17 &&
               sizeof(blk_nvfp4) == 36, "ternary and FP4 blocks");

/* Unaligned little-endian field loads (every supported target is little-endian). */
static inline uint16_t gq_load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t gq_load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---------------------------------------------- packers shared by kernels */

/* Q2_K / Q3_K: 256 two-bit levels, four 32-weight rows per byte. */
static inline void gq_pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

/* Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins in 12 bytes. */
static inline void gq_pack_scale_min_k4(const uint8_t *ls, const uint8_t *lm, uint8_t *s)
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

static inline void gq_unpack_scale_min_k4(int j, const uint8_t *s, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m  = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *m  = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* The same for all 8 sub-blocks at once, on whole 32-bit words: byte j of
 * *sc / *mn is sub-block j's scale / min (the SIMD dequantizers' form). */
static inline void gq_unpack_scale_min_k4_x8(const uint8_t *s, uint64_t *sc, uint64_t *mn)
{
    const uint32_t w0 = gq_load_u32(s), w1 = gq_load_u32(s + 4), w2 = gq_load_u32(s + 8);
    const uint32_t sc_lo = w0 & 0x3F3F3F3Fu, mn_lo = w1 & 0x3F3F3F3Fu;
    const uint32_t sc_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u);
    const uint32_t mn_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u);
    *sc = sc_lo | ((uint64_t)sc_hi << 32);
    *mn = mn_lo | ((uint64_t)mn_hi << 32);
}

/* Q3_K: sub-block j's 6-bit scale l (0..63) into the 12 scale bytes (zeroed first). */
static inline void gq_q3_K_put_scale(uint8_t *s, int j, int l)
{
    if (j < 8)
        s[j] = (uint8_t)(l & 0xF);
    else
        s[j - 8] |= (uint8_t)((l & 0xF) << 4);
    l >>= 4;
    s[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
}

/* Q3_K: the signed scale of sub-block j (-32..31). */
static inline int gq_q3_K_get_scale(const uint8_t *s, int j)
{
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

#endif
