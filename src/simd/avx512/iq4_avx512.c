/*
 * iq4_avx512.c — AVX-512 dequantizers for IQ4_NL and IQ4_XS.
 * SIMD twin of src/quants/iq4.c (same arithmetic: y = dl * kvalues[nibble]).
 *
 * How it vectorises: per group of 32 the 16 products dl * (float)kvalue[i]
 * are made once (one multiply of the converted codebook, the very products
 * the scalar computes per weight); then each 16 weights are a single
 * 16-entry VPERMPS lookup of that table. The 16 qs bytes are zero-extended
 * to dword lanes once: VPERMPS reads only the low 4 bits, so the low-nibble
 * indices need no masking and the high ones are a shift by 4.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quants/fp16.h"
#include "quants/tables.h"
#include "simd/simd.h"

#define QK_K        256
#define QK4_NL      32
#define IQ4NL_BYTES 18
#define IQ4XS_BYTES 136

static inline uint16_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __m512 codebook_f32(void)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)gq_kvalues_iq4nl)));
}

/* 32 weights of one group: table = dl * codebook, looked up by nibble. */
static inline void decode_group(float *y, __m512 dl, const uint8_t *qs, __m512 codebook)
{
    const __m512 table = _mm512_mul_ps(dl, codebook);
    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)qs));
    _mm512_storeu_ps(y + 0, _mm512_permutexvar_ps(q, table));
    _mm512_storeu_ps(y + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
}

static void dequant_iq4_nl(const void *src, float *dst, int64_t n)
{
    const __m512 codebook = codebook_f32();
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK4_NL; ++i, blk += IQ4NL_BYTES, dst += QK4_NL) {
        /* F16C conversion is exact and, like gq_fp16_to_fp32, quiets NaNs */
        const __m512 dl = _mm512_cvtph_ps(_mm256_set1_epi16((short)load_u16(blk)));
        decode_group(dst, dl, blk + 2, codebook);
    }
}

static void dequant_iq4_xs(const void *src, float *dst, int64_t n)
{
    const __m512 codebook = codebook_f32();
    /* lane ib: shift that brings its low nibble / its 2 high bits down */
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const uint8_t *blk = src;
    for (int64_t i = 0; i < n / QK_K; ++i, blk += IQ4XS_BYTES) {
        const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)load_u16(blk)));
        /* ls = low nibble | high 2 bits << 4, all 8 groups at once */
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)load_u32(blk + 4)), lo_shift), _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(load_u16(blk + 2)), hi_shift), _mm256_set1_epi32(3));
        const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        /* scalar: d * (ls - 32), integer subtract then int -> float (exact) */
        float dl[8];
        _mm256_storeu_ps(dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)))));
        const uint8_t *qs = blk + 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 16, dst += 32)
            decode_group(dst, _mm512_set1_ps(dl[ib]), qs, codebook);
    }
}

void gq_avx512_fill_iq4(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    t[GGUFQ_TYPE_IQ4_NL].dequantize = dequant_iq4_nl;
    t[GGUFQ_TYPE_IQ4_XS].dequantize = dequant_iq4_xs;
}
