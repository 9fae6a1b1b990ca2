/*
 * validate.c — ggml_validate_row_data's checks: plain float types may hold
 * no NaN/Inf at all; quantized types may hold none in their fp16 scales
 * (d, and m/dmin where the block has one), MXFP4 no exponent 0xff, and
 * IQ1_M none in the fp16 scale spread over its scale nibbles.
 */
#include <string.h>

#include "requant/requant_internal.h"
#include "gguf/types.h"

static bool fp16_bad(const uint8_t *p)
{
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    return (h & 0x7c00) == 0x7c00;
}

/* Where a block keeps its fp16 scales: offsets of d and of a second scale (or -1). */
typedef struct scale_pos { int16_t d, m; } scale_pos;

static bool scale_positions(ggufq_type t, scale_pos *sp)
{
    sp->d = 0;
    sp->m = -1;
    switch (t) {
    case GGUFQ_TYPE_Q4_0: case GGUFQ_TYPE_Q5_0: case GGUFQ_TYPE_Q8_0:
    case GGUFQ_TYPE_Q1_0: case GGUFQ_TYPE_Q2_0:
    case GGUFQ_TYPE_IQ2_XXS: case GGUFQ_TYPE_IQ2_XS: case GGUFQ_TYPE_IQ2_S:
    case GGUFQ_TYPE_IQ3_XXS: case GGUFQ_TYPE_IQ3_S: case GGUFQ_TYPE_IQ1_S:
    case GGUFQ_TYPE_IQ4_NL: case GGUFQ_TYPE_IQ4_XS:
        return true;
    case GGUFQ_TYPE_Q4_1: case GGUFQ_TYPE_Q5_1: case GGUFQ_TYPE_Q8_1:
    case GGUFQ_TYPE_Q4_K: case GGUFQ_TYPE_Q5_K:
        sp->m = 2;
        return true;
    case GGUFQ_TYPE_Q2_K:  sp->d = 80;  sp->m = 82; return true;   /* scales[16], qs[64], d, dmin */
    case GGUFQ_TYPE_Q3_K:  sp->d = 108; return true;               /* hmask[32], qs[64], scales[12], d */
    case GGUFQ_TYPE_Q6_K:  sp->d = 208; return true;               /* ql[128], qh[64], scales[16], d */
    case GGUFQ_TYPE_TQ1_0: sp->d = 52;  return true;               /* qs[48], qh[4], d */
    case GGUFQ_TYPE_TQ2_0: sp->d = 64;  return true;               /* qs[64], d */
    default:
        return false;
    }
}

/*
 * Plain floats are checked a chunk at a time without an early exit, so the
 * compiler vectorizes the test (a byte-at-a-time loop with a branch per
 * value took 40 % of a Q8_0 requant); only a chunk that holds a bad value is
 * searched for its first one.
 */
#define PLAIN_CHUNK 512

static bool f32_bad_at(const uint8_t *p, size_t i)
{
    uint32_t u;
    memcpy(&u, p + 4 * i, 4);
    return (u & 0x7f800000u) == 0x7f800000u;
}

static bool f16_bad_at(const uint8_t *p, size_t i)
{
    uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    return (h & 0x7c00) == 0x7c00;
}

static bool bf16_bad_at(const uint8_t *p, size_t i)
{
    uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    return (h & 0x7fff) >= 0x7f80;
}

static bool f64_bad_at(const uint8_t *p, size_t i)
{
    uint64_t u;
    memcpy(&u, p + 8 * i, 8);
    return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
}

/* Any bad value in [i0, i1)? Branch-free over the chunk (the halves are read
 * as little-endian u16s: GGUF's byte order, as the per-value tests read them). */
static bool chunk_has_bad(ggufq_type type, const uint8_t *p, size_t i0, size_t i1)
{
    unsigned any = 0;
    switch (type) {
    case GGUFQ_TYPE_F32:
        for (size_t i = i0; i < i1; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            any |= (u & 0x7f800000u) == 0x7f800000u;
        }
        break;
    case GGUFQ_TYPE_F16:
        for (size_t i = i0; i < i1; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
            any |= (h & 0x7c00) == 0x7c00;
        }
        break;
    case GGUFQ_TYPE_BF16:
        for (size_t i = i0; i < i1; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
            any |= (h & 0x7fff) >= 0x7f80;
        }
        break;
    default:
        for (size_t i = i0; i < i1; i++)
            any |= f64_bad_at(p, i);
        break;
    }
    return any != 0;
}

static int64_t first_bad_plain(ggufq_type type, const uint8_t *p, size_t n)
{
    bool (*bad_at)(const uint8_t *, size_t);
    switch (type) {
    case GGUFQ_TYPE_F32:  bad_at = f32_bad_at;  break;
    case GGUFQ_TYPE_F16:  bad_at = f16_bad_at;  break;
    case GGUFQ_TYPE_BF16: bad_at = bf16_bad_at; break;
    case GGUFQ_TYPE_F64:  bad_at = f64_bad_at;  break;
    default:
        return -1;   /* integer types: nothing to validate */
    }
    for (size_t i0 = 0; i0 < n; i0 += PLAIN_CHUNK) {
        const size_t i1 = n - i0 < PLAIN_CHUNK ? n : i0 + PLAIN_CHUNK;
        if (!chunk_has_bad(type, p, i0, i1))
            continue;
        for (size_t i = i0; i < i1; i++)
            if (bad_at(p, i))
                return (int64_t)i;
    }
    return -1;
}

int64_t gq_first_invalid(ggufq_type type, const void *data, size_t nbytes)
{
    const gq_type_traits *tt = gq_type_traits_of(type);
    if (!tt || tt->block_bytes == 0)
        return 0;
    const uint8_t *p = data;
    size_t nb = nbytes / tt->block_bytes;
    if (!tt->quantized)
        return first_bad_plain(type, p, nb);
    scale_pos sp;
    if (scale_positions(type, &sp)) {
        for (size_t i = 0; i < nb; i++) {
            const uint8_t *b = p + i * tt->block_bytes;
            if (fp16_bad(b + sp.d) || (sp.m >= 0 && fp16_bad(b + sp.m)))
                return (int64_t)i;
        }
        return -1;
    }
    switch (type) {
    case GGUFQ_TYPE_Q8_K:   /* float d first */
        for (size_t i = 0; i < nb; i++) {
            uint32_t u;
            memcpy(&u, p + i * tt->block_bytes, 4);
            if ((u & 0x7f800000u) == 0x7f800000u)
                return (int64_t)i;
        }
        return -1;
    case GGUFQ_TYPE_MXFP4:  /* E8M0 exponent first; 0xff is NaN */
        for (size_t i = 0; i < nb; i++)
            if (p[i * tt->block_bytes] == 0xff)
                return (int64_t)i;
        return -1;
    case GGUFQ_TYPE_IQ1_M: { /* qs[32], qh[16], scales[8]: the fp16 scale is the top nibble of 4 u16s */
        for (size_t i = 0; i < nb; i++) {
            const uint8_t *s = p + i * tt->block_bytes + 48;
            uint16_t sc[4];
            for (int k = 0; k < 4; k++)
                sc[k] = (uint16_t)(s[2 * k] | (s[2 * k + 1] << 8));
            uint16_t h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                    (sc[3] & 0xf000));
            uint8_t hb[2] = { (uint8_t)h, (uint8_t)(h >> 8) };
            if (fp16_bad(hb))
                return (int64_t)i;
        }
        return -1;
    }
    default:                /* NVFP4: every byte value is a valid scale */
        return -1;
    }
}
