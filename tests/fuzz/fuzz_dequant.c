/*
 * fuzz_dequant.c — dequantize arbitrary block bytes of every type on every ISA.
 *
 * Input: byte 0 picks the type (among the valid ones), byte 1 the layout:
 *   bits 0-5  misalignment of the source blocks (0..63 bytes)
 *   bit  6    destination misaligned by one float (4 bytes)
 *   bit  7    also quantize the decoded weights (when all are finite)
 * byte 2 picks the type to quantize to (bit 7: with an importance matrix); the rest are block bytes, truncated
 * to whole blocks. Source and destination
 * are heap buffers ending exactly where the data ends, so ASan catches any
 * over-read or over-write. Every ISA this CPU runs must decode bit for bit as
 * the scalar kernels do (any NaN equals any NaN); a mismatch traps.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufq.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "fuzz_dequant: check failed: %s (line %d)\n", #cond, __LINE__); __builtin_trap(); } } while (0)

#define MAX_QUANT_WEIGHTS 1024   /* quantizing is slow for some types: bound the work */

static const ggufq_isa simd_isas[] = { GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON };

static int valid_types[GGUFQ_TYPE_COUNT];
static int n_valid_types;

static void init_types(void)
{
    if (n_valid_types)
        return;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
        if (ggufq_type_is_valid(t))
            valid_types[n_valid_types++] = t;
}

static int same_floats(const float *a, const float *b, int64_t n, int64_t *where)
{
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i]))
            continue;
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            *where = i;
            return 0;
        }
    }
    return 1;
}

/* Decode with `isa` into an exactly-sized (maybe misaligned) buffer; NULL if the
 * ISA is not available here. *rc receives the status. */
static float *decode(ggufq_isa isa, ggufq_type type, const void *src, int64_t n, int dst_shift, int *rc)
{
    if (ggufq_use_isa(isa) != GGUFQ_OK)
        return NULL;
    uint8_t *mem = malloc((size_t)n * sizeof(float) + (size_t)dst_shift + (n == 0));
    CHECK(mem != NULL);
    float *dst = (float *)(void *)(mem + dst_shift);
    *rc = ggufq_dequantize(type, src, dst, n);
    return dst;
}

static void free_decoded(float *dst, int dst_shift)
{
    if (dst)
        free((uint8_t *)dst - dst_shift);
}

/* Quantize the scalar decoding (cut to whole blocks of `type`) on every ISA:
 * the same status and bytes everywhere. */
static void requantize(ggufq_type type, const float *x, int64_t n, bool with_imatrix)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return;
    n -= n % ggufq_type_block_size(type);
    if (n > MAX_QUANT_WEIGHTS)
        n = MAX_QUANT_WEIGHTS - MAX_QUANT_WEIGHTS % ggufq_type_block_size(type);
    if (n == 0)
        return;
    size_t bytes = ggufq_row_size(type, n);
    float *imatrix = malloc((size_t)n * sizeof(float));
    uint8_t *ref = malloc(bytes), *out = malloc(bytes);
    CHECK(imatrix && ref && out);
    for (int64_t i = 0; i < n; i++)   /* a deterministic, uneven importance */
        imatrix[i] = 1.0f + (float)(i % 7) + fabsf(x[i]);
    const float *imx = ggufq_type_needs_imatrix(type) || with_imatrix ? imatrix : NULL;
    CHECK(ggufq_use_isa(GGUFQ_ISA_SCALAR) == GGUFQ_OK);
    int rc = ggufq_quantize(type, x, ref, 1, n, imx);
    CHECK(rc == GGUFQ_OK || rc == GGUFQ_E_NOT_IMPLEMENTED || rc == GGUFQ_E_NONFINITE);
    if (rc == GGUFQ_OK) {
        for (size_t k = 0; k < sizeof simd_isas / sizeof simd_isas[0]; k++) {
            if (ggufq_use_isa(simd_isas[k]) != GGUFQ_OK)
                continue;
            int rc2 = ggufq_quantize(type, x, out, 1, n, imx);
            CHECK(rc2 == rc);
            if (memcmp(ref, out, bytes) != 0) {
                fprintf(stderr, "fuzz_dequant: quantize %s differs on %s\n",
                        ggufq_type_name(type), ggufq_isa_name(simd_isas[k]));
                __builtin_trap();
            }
        }
    }
    free(imatrix);
    free(ref);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_types();
    if (size < 3)
        return 0;
    ggufq_type type = (ggufq_type)valid_types[data[0] % n_valid_types];
    int src_shift = data[1] & 63, dst_shift = (data[1] & 64) ? 4 : 0, quant = data[1] & 128;
    ggufq_type quant_type = (ggufq_type)valid_types[data[2] % n_valid_types];
    bool quant_imatrix = (data[2] & 0x80) != 0;
    data += 3;
    size -= 3;
    int64_t bs = ggufq_type_block_size(type);
    size_t bb = ggufq_type_block_bytes(type);
    CHECK(bs > 0 && bb > 0);
    size_t n_blocks = size / bb;
    int64_t n = (int64_t)n_blocks * bs;
    size_t nbytes = n_blocks * bb;
    CHECK(ggufq_row_size(type, n) == nbytes);

    /* the allocation ends exactly after the blocks */
    uint8_t *exact = malloc((size_t)src_shift + nbytes + (nbytes == 0));
    CHECK(exact != NULL);
    uint8_t *src = exact + src_shift;
    memcpy(src, data, nbytes);

    int rc_ref = 0;
    float *ref = decode(GGUFQ_ISA_SCALAR, type, src, n, dst_shift, &rc_ref);
    CHECK(ref != NULL);
    CHECK(rc_ref == GGUFQ_OK || rc_ref == GGUFQ_E_NOT_IMPLEMENTED);
    if (bs > 1) {   /* a partial block is refused, whatever the ISA */
        float one[1];
        CHECK(ggufq_dequantize(type, src, one, bs - 1) == GGUFQ_E_BAD_SIZE);
    }
    for (size_t k = 0; k < sizeof simd_isas / sizeof simd_isas[0]; k++) {
        int rc = 0;
        float *out = decode(simd_isas[k], type, src, n, dst_shift, &rc);
        if (out == NULL)
            continue;
        CHECK(rc == rc_ref);
        int64_t at = -1;
        if (rc == GGUFQ_OK && !same_floats(ref, out, n, &at)) {
            fprintf(stderr, "fuzz_dequant: %s on %s: weight %lld is %a, scalar says %a\n",
                    ggufq_type_name(type), ggufq_isa_name(simd_isas[k]), (long long)at,
                    (double)out[at], (double)ref[at]);
            __builtin_trap();
        }
        free_decoded(out, dst_shift);
    }
    if (quant && rc_ref == GGUFQ_OK && n > 0)
        requantize(quant_type, ref, n, quant_imatrix);
    free_decoded(ref, dst_shift);
    free(exact);
    return 0;
}
