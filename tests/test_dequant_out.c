/*
 * test_dequant_out.c — ggufq_dequantize_to's F16/BF16 outputs, bit for bit
 * ggufq_dequantize followed by ggufq_quantize(out_type), through each path
 * of src/api/parallel_api.c, under the ISA GGUFQ_ISA picks (run per ISA):
 *  - in-cache sizes: encoded straight into dst, or (dst not aligned to its
 *    element) through buffers; sizes that are not a multiple of the stage;
 *  - large outputs (>= 2^22 weights per thread on x86-64, where F32 ones
 *    stream) with 1, 2 and 3 threads, at a dst 2 or 4 bytes off 16-byte
 *    alignment (the stream's head and tail), nothing written past the end;
 *    F32 ones too: the streaming copy differs per ISA;
 *  - inputs whose decoded values hit every conversion edge: random q8_0 and
 *    q4_0 blocks (F16 scales that are NaN, Inf, subnormal: products that
 *    overflow F16 or fall in its subnormals) and random F32 bit patterns;
 *  - both x86 F32 -> BF16 kernels (vcvtneps2bf16 and the integer rounding)
 *    on every subnormal, Inf and NaN and on ties at every exponent.
 * Memory stays under 64 MiB; off x86-64 (qemu) the large sizes shrink, since
 * nothing streams there.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd/dispatch.h"
#if defined(__x86_64__)
#include "simd/avx512/float_avx512.h"
#endif

static char what[200];

/* Weights per piece above which parallel_api.c streams (STREAM_MIN_WEIGHTS). */
#define STREAM_MIN ((int64_t)1 << 22)
#define TASK       ((int64_t)1 << 16)   /* DEQ_TASK_WEIGHTS */

/* n bytes of xorshift output. */
static void fill_random(void *p, size_t n, uint64_t seed)
{
    tu_rng r = { seed };
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(tu_rand_u64(&r) >> 56);
}

/* n weights of `type`: 4 Ki weights quantized from gaussians (or random
 * bytes when raw), the tile repeated; F32/F16 inputs are random bit patterns. */
static void *make_input(ggufq_type type, int64_t n, bool raw, uint64_t seed)
{
    const size_t bytes = ggufq_row_size(type, n);
    uint8_t *q = malloc(bytes);
    assert_non_null(q);
    if (raw || !ggufq_type_is_quantized(type)) {
        fill_random(q, bytes, seed);
        return q;
    }
    const int64_t tile_w = 4096;   /* n is larger in every call */
    float *x = malloc((size_t)tile_w * sizeof *x);
    assert_non_null(x);
    tu_rng r = { seed };
    for (int64_t i = 0; i < tile_w; i++)
        x[i] = tu_rand_gauss(&r);
    const int64_t row = 256;   /* a multiple of every block size */
    float im[256];
    for (int i = 0; i < 256; i++)
        im[i] = 0.5f + (float)i / 256.0f;
    assert_int_equal(ggufq_quantize(type, x, q, tile_w / row, row, ggufq_type_needs_imatrix(type) ? im : NULL),
                     GGUFQ_OK);
    const size_t tile = ggufq_row_size(type, tile_w);
    for (size_t off = tile; off < bytes; off += tile)
        memcpy(q + off, q, bytes - off < tile ? bytes - off : tile);
    free(x);
    return q;
}

/* The reference: ggufq_dequantize, then ggufq_quantize(out), a task at a time. */
static uint16_t *reference(ggufq_type type, const void *q, ggufq_type out, int64_t n)
{
    uint16_t *want = malloc((size_t)n * 2);
    float *f = malloc((size_t)TASK * sizeof *f);
    assert_non_null(want);
    assert_non_null(f);
    const uint8_t *src = q;
    for (int64_t off = 0; off < n; off += TASK) {
        const int64_t m = n - off < TASK ? n - off : TASK;
        assert_int_equal(ggufq_dequantize(type, src + ggufq_row_size(type, off), f, m), GGUFQ_OK);
        assert_int_equal(ggufq_quantize(out, f, want + off, 1, m, NULL), GGUFQ_OK);
    }
    free(f);
    return want;
}

/* ggufq_dequantize_to(type -> out) of n weights on nt threads, at dst = a
 * buffer + offset, against want; guard bytes on both sides untouched. */
static void check_out(ggufq_type type, const void *q, ggufq_type out, int64_t n, const uint16_t *want,
                      size_t offset, int nt)
{
    const size_t bytes = (size_t)n * 2;
    uint8_t *buf = malloc(bytes + offset + 64);
    assert_non_null(buf);
    memset(buf, 0xA5, bytes + offset + 64);
    assert_int_equal(ggufq_dequantize_to(type, q, out, buf + offset, n, nt), GGUFQ_OK);
    snprintf(what, sizeof what, "%s -> %s n=%lld dst+%zu threads=%d (%s)", ggufq_type_name(type),
             ggufq_type_name(out), (long long)n, offset, nt, ggufq_isa_name(ggufq_active_isa()));
    tu_expect_same_bytes(buf + offset, want, bytes, what);
    for (size_t i = 0; i < offset; i++)
        assert_int_equal(buf[i], 0xA5);
    for (size_t i = 0; i < 64; i++)
        assert_int_equal(buf[offset + bytes + i], 0xA5);
    free(buf);
}

static const ggufq_type outs[2] = { GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16 };

/* Every quantized type, in-cache sizes: not a multiple of the 4096-weight
 * stage, one block, the smallest parallel job; aligned, 2 bytes off 16, odd. */
static void test_in_cache_every_type(void **state)
{
    (void)state;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++) {
        if (!ggufq_type_is_valid(t) || !ggufq_type_is_quantized((ggufq_type)t))
            continue;
        const ggufq_type type = (ggufq_type)t;
        const int64_t bs = ggufq_type_block_size(type);
        const int64_t sizes[] = { bs, 2 * 4096 + 3 * (bs < 256 ? 256 : bs), ((int64_t)1 << 18) + bs };
        void *q = make_input(type, sizes[2], false, 100 + (uint64_t)t);
        for (int o = 0; o < 2; o++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                uint16_t *want = reference(type, q, outs[o], sizes[s]);
                check_out(type, q, outs[o], sizes[s], want, 0, 1);
                check_out(type, q, outs[o], sizes[s], want, 2, s == 2 ? 3 : 1);
                check_out(type, q, outs[o], sizes[s], want, 1, s == 2 ? 2 : 1);
                free(want);
            }
        }
        free(q);
    }
}

/* Inputs whose values reach NaN, Inf, F16 overflow and subnormals. */
static void test_edge_values(void **state)
{
    (void)state;
    static const ggufq_type ins[] = { GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_F32, GGUFQ_TYPE_F16 };
    const int64_t n = 3 * 4096 + 96;
    for (size_t k = 0; k < sizeof ins / sizeof ins[0]; k++) {
        void *q = make_input(ins[k], n, true, 7 + (uint64_t)k);
        for (int o = 0; o < 2; o++) {
            if (ins[k] == outs[o])
                continue;
            uint16_t *want = reference(ins[k], q, outs[o], n);
            check_out(ins[k], q, outs[o], n, want, 0, 1);
            check_out(ins[k], q, outs[o], n, want, 1, 1);
            free(want);
        }
        free(q);
    }
}

/*
 * Large outputs: each of 1, 2 and 3 threads gets >= STREAM_MIN weights
 * (195 tasks and a short one: 66/65/65 tasks), the size at which F32
 * pieces stream on x86-64; the last piece ends 512 weights into a task (not
 * a multiple of the stage). Off x86-64 nothing streams: a size that still
 * splits 3 ways.
 */
#if defined(__x86_64__)
#define BIG_N (195 * TASK + 512)
#else
#define BIG_N (5 * TASK + 512)
#endif

static void test_large(void **state)
{
    (void)state;
    static const ggufq_type ins[] = { GGUFQ_TYPE_Q4_0, GGUFQ_TYPE_Q8_0 };
    for (size_t k = 0; k < sizeof ins / sizeof ins[0]; k++) {
        /* q8_0 from random bytes: NaN/Inf/overflow/subnormal in a large output */
        void *q = make_input(ins[k], BIG_N, ins[k] == GGUFQ_TYPE_Q8_0, 31 + (uint64_t)k);
        for (int o = 0; o < 2; o++) {
            uint16_t *want = reference(ins[k], q, outs[o], BIG_N);
            for (int nt = 1; nt <= 3; nt++)
                check_out(ins[k], q, outs[o], BIG_N, want, nt == 2 ? 0 : 2, nt);
            free(want);
        }
        free(q);
    }
}

/* F32 output streamed through this ISA's copy (simd/stream.h) at a dst 4
 * bytes off and one 64 bytes off a line: exactly ggufq_dequantize. */
static void test_streamed_f32(void **state)
{
    (void)state;
#if defined(__x86_64__)
    const int64_t n = STREAM_MIN + 4096 + 512;
#else
    const int64_t n = 2 * TASK + 512;
#endif
    void *q = make_input(GGUFQ_TYPE_Q8_0, n, true, 91);
    float *want = malloc((size_t)n * sizeof *want);
    uint8_t *buf = malloc((size_t)n * sizeof *want + 256);
    assert_non_null(want);
    assert_non_null(buf);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q8_0, q, want, n), GGUFQ_OK);
    uint8_t *line = buf + ((64 - (uintptr_t)buf % 64) % 64);
    const size_t offsets[] = { 4, 64, 36 };
    for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
        uint8_t *dst = line + offsets[k];
        memset(buf, 0xA5, (size_t)n * sizeof *want + 256);
        assert_int_equal(ggufq_dequantize_to(GGUFQ_TYPE_Q8_0, q, GGUFQ_TYPE_F32, dst, n, 1), GGUFQ_OK);
        snprintf(what, sizeof what, "q8_0 -> f32 n=%lld dst+%zu (%s)", (long long)n, offsets[k],
                 ggufq_isa_name(ggufq_active_isa()));
        tu_expect_same_bytes(dst, want, (size_t)n * sizeof *want, what);
        for (uint8_t *p = buf; p < dst; p++)
            assert_int_equal(*p, 0xA5);
        for (size_t i = 0; i < 64; i++)
            assert_int_equal(dst[(size_t)n * sizeof *want + i], 0xA5);
    }
    free(q);
    free(want);
    free(buf);
}

/* F32 and F16 inputs, one thread, one large piece: the encoder reads the input in place. */
static void test_large_plain_inputs(void **state)
{
    (void)state;
#if defined(__x86_64__)
    const int64_t n = STREAM_MIN + 4096 + 512;
#else
    const int64_t n = 2 * TASK + 512;
#endif
    static const ggufq_type ins[] = { GGUFQ_TYPE_F32, GGUFQ_TYPE_F16 };
    for (size_t k = 0; k < 2; k++) {
        void *q = make_input(ins[k], n, true, 55 + (uint64_t)k);
        for (int o = 0; o < 2; o++) {
            if (ins[k] == outs[o])
                continue;
            uint16_t *want = reference(ins[k], q, outs[o], n);
            check_out(ins[k], q, outs[o], n, want, 2, 1);
            free(want);
        }
        free(q);
    }
}

/* ------------------------------------------------------------------------- */
/* The two x86 F32 -> BF16 kernels                                            */
/* ------------------------------------------------------------------------- */

#if defined(__x86_64__)
#define SWEEP_CHUNK ((size_t)1 << 20)

/* The floats of one sign and exponent the sweep takes: all 2^23 mantissas
 * for exponents 0 (zero, subnormals) and 255 (Inf, NaN), from `from` on, at
 * most SWEEP_CHUNK; elsewhere every top-7-bit pattern with the low 16 bits
 * at and around the rounding tie, and 2^12 spread mantissas. */
static size_t bf16_cases(uint32_t *in, uint32_t sign, uint32_t e, uint32_t from)
{
    static const uint32_t lows[] = { 0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x7FFE, 0xC000 };
    const uint32_t base = sign << 31 | e << 23;
    size_t n = 0;
    if (e == 0 || e == 255) {
        for (uint32_t m = from; m < (1u << 23) && n < SWEEP_CHUNK; m++)
            in[n++] = base | m;
        return n;
    }
    for (uint32_t hi = 0; hi < 128; hi++)
        for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++)
            in[n++] = base | hi << 16 | lows[l];
    for (uint32_t m = 0; m < (1u << 12); m++)
        in[n++] = base | (m * 2053u) % (1u << 23);
    return n;
}

/* Both BF16 kernels against the scalar one on n inputs. */
static void check_bf16_kernels(const uint32_t *in, size_t n, uint16_t *want, uint16_t *got)
{
    const float *x = (const float *)(const void *)in;
    assert_int_equal(gq_scalar_kernels(GGUFQ_TYPE_BF16)->quantize(x, want, 1, (int64_t)n, NULL), GGUFQ_OK);
    memset(got, 0, n * 2);
    assert_int_equal(gq_avx512_quantize_bf16_int(x, got, 1, (int64_t)n, NULL), GGUFQ_OK);
    snprintf(what, sizeof what, "gq_avx512_quantize_bf16_int from %08x", (unsigned)in[0]);
    tu_expect_same_bytes(got, want, n * 2, what);
#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
    if (gq_cpu()->avx512bf16) {
        memset(got, 0, n * 2);
        assert_int_equal(gq_avx512_quantize_bf16_ne(x, got, 1, (int64_t)n, NULL), GGUFQ_OK);
        snprintf(what, sizeof what, "gq_avx512_quantize_bf16_ne from %08x", (unsigned)in[0]);
        tu_expect_same_bytes(got, want, n * 2, what);
    }
#endif
}

static void test_bf16_kernels(void **state)
{
    (void)state;
    if (ggufq_active_isa() != GGUFQ_ISA_AVX512)   /* once, in the test@avx512 run */
        skip();
    uint32_t *in = malloc(SWEEP_CHUNK * sizeof *in);
    uint16_t *want = malloc(SWEEP_CHUNK * 2), *got = malloc(SWEEP_CHUNK * 2);
    assert_non_null(in);
    assert_non_null(want);
    assert_non_null(got);
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t e = 0; e < 256; e++)
            for (uint32_t from = 0; from < (1u << 23); from += SWEEP_CHUNK) {
                const size_t n = bf16_cases(in, sign, e, from);
                check_bf16_kernels(in, n, want, got);
                if (e != 0 && e != 255)
                    break;
            }
#ifdef GQ_HAVE_AVX512BF16_INTRINSICS
    /* odd lengths: the masked tail, nothing stored past it */
    if (gq_cpu()->avx512bf16) {
        const size_t n = bf16_cases(in, 0, 0, 0x7FFFC0);   /* subnormals, then the loop's end */
        assert_int_equal(gq_scalar_kernels(GGUFQ_TYPE_BF16)->quantize((const float *)(const void *)in, want, 1,
                                                                       (int64_t)n, NULL), GGUFQ_OK);
        for (int64_t m = 1; m < 40; m += 3) {
            uint16_t tail[40];
            memset(tail, 0xA5, sizeof tail);
            assert_int_equal(gq_avx512_quantize_bf16_ne((const float *)(const void *)in, tail, 1, m, NULL),
                             GGUFQ_OK);
            tu_expect_same_bytes(tail, want, (size_t)m * 2, "gq_avx512_quantize_bf16_ne tail");
            for (int64_t i = m; i < 40; i++)
                assert_int_equal(tail[i], 0xA5A5);
        }
    }
#endif
    free(in);
    free(want);
    free(got);
}
#else
static void test_bf16_kernels(void **state)
{
    (void)state;
    skip();
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_cache_every_type),
        cmocka_unit_test(test_edge_values),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_large_plain_inputs),
        cmocka_unit_test(test_streamed_f32),
        cmocka_unit_test(test_bf16_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
