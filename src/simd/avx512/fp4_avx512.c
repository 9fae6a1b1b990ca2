/*
 * fp4_avx512.c — AVX-512 dequantizers for MXFP4 and NVFP4; SIMD twin of
 * src/quants/fp4.c (same arithmetic: y = (float)kvalue * d).
 *
 * MXFP4 (32 weights per E8M0 scale): the 16 nibble bytes are widened to
 * dwords straight from memory (VPMOVZXBD); the low nibble is bits 0-3 of
 * each dword and, after a shift by 4, so is the high one: the index VPERMPS
 * reads to pick kvalue * d out of a 16-float table made by one multiply per
 * block (the scalar's products, one for one).
 * NVFP4 (16 weights per UE4M3 scale, so a table per 16 weights would cost as
 * much as the multiply it saves): PSHUFB looks a whole block's 64 codes up
 * in the int8 codebook, the bytes are regrouped per 16 weights through a
 * small stack buffer (VPMOVSXBD from memory is cheaper than from a
 * register), converted (exact) and multiplied by the scale. The UE4M3 scales
 * come from fp4_avx2.c's table, filled by gq_avx2_prepare_fp4 with the
 * scalar conversion itself.
 */
#include <immintrin.h>
#include <stdint.h>

#include "common/blocks.h"
#include "quants/fp8.h"
#include "quants/tables.h"
#include "simd/avx2/iq_util_avx2.h"
#include "simd/simd.h"

#define MXFP4_BLOCK 32
#define MXFP4_BYTES ((int)sizeof(blk_mxfp4))
#define NVFP4_BLOCK 64
#define NVFP4_BYTES ((int)sizeof(blk_nvfp4))

void gq_avx512_dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const __m512 codebook = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)gq_kvalues_fp4)));
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, blk += MXFP4_BYTES, dst += MXFP4_BLOCK) {
        const __m512 table = _mm512_mul_ps(codebook, _mm512_set1_ps(gq_e8m0_to_fp32_half(blk[0])));
        const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 1)));
        _mm512_storeu_ps(dst, _mm512_permutexvar_ps(q, table));
        _mm512_storeu_ps(dst + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), table));
    }
}

void gq_avx512_dequantize_nvfp4(const void *src, float *dst, int64_t n)
{
    const __m256i kv = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)gq_kvalues_fp4));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const uint8_t *blk = src;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, blk += NVFP4_BYTES, dst += NVFP4_BLOCK) {
        /* sub-block s: bytes 4 + 8s .. 4 + 8s + 7; low nibbles = weights 0-7, high = 8-15 */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 4));
        const __m256i lo = _mm256_shuffle_epi8(kv, _mm256_and_si256(q, low4));
        const __m256i hi = _mm256_shuffle_epi8(kv, _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
        /* 128-bit lane h of unpacklo: sub-block 2h, of unpackhi: 2h + 1 */
        int8_t vals[64] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)vals, _mm256_unpacklo_epi64(lo, hi));
        _mm256_store_si256((__m256i *)(vals + 32), _mm256_unpackhi_epi64(lo, hi));
        static const int at[4] = { 0, 32, 16, 48 };
        for (int s = 0; s < 4; s++) {
            const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(vals + at[s]))));
            _mm512_storeu_ps(dst + 16 * s, _mm512_mul_ps(v, _mm512_set1_ps(gq_avx2_ue4m3_half[blk[s]])));
        }
    }
}
