/*
 * test_kernels_small.c — kernels of the plain types (F32, F16, BF16, F64,
 * I8..I64) and of Q1_0, Q2_0, TQ1_0, TQ2_0, MXFP4, NVFP4, through the public
 * ggufq_quantize / ggufq_dequantize:
 *  - the golden files' layout and their raw NaN payloads (test_golden makes
 *    the other golden checks);
 *  - differential runs against the peer's ggml (random inputs of many shapes
 *    and distributions, with and without an imatrix; random and exhaustive
 *    raw blocks), skipped when the peer is absent;
 *  - every type decoded (to F32, F16, BF16) from a source at every byte
 *    offset, as tensors of an alignment-1 file are: the same values, and no
 *    misaligned access (make test-asan: UBSan stops at one).
 * Every comparison is exact: bytes, and float bit patterns (NaN included).
 */
#include "golden_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ggufq_type small_types[] = {
    GGUFQ_TYPE_F16,   GGUFQ_TYPE_BF16,  GGUFQ_TYPE_Q1_0,  GGUFQ_TYPE_Q2_0,
    GGUFQ_TYPE_TQ1_0, GGUFQ_TYPE_TQ2_0, GGUFQ_TYPE_MXFP4, GGUFQ_TYPE_NVFP4,
};
#define N_SMALL_TYPES (sizeof small_types / sizeof small_types[0])

/* ------------------------------------------------------------------------- */
/* Golden vectors: test_golden checks quantize/dequantize of every file; here */
/* the layout of ours, and the NaN payloads test_golden lets pass as "a NaN". */
/* ------------------------------------------------------------------------- */

static void test_golden(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        tu_golden_check_layout(type);
        tu_golden g;
        tu_golden_open(&g, type);
        ggufq_tensor_info raw, rdq;
        assert_non_null(tu_golden_tensor(&g, "raw", &raw));
        assert_non_null(tu_golden_tensor(&g, "raw_dequant", &rdq));
        float *out = malloc((size_t)raw.n_elements * sizeof(float));
        assert_non_null(out);
        char what[64];
        snprintf(what, sizeof what, "%s raw_dequant", ggufq_type_name(type));
        assert_int_equal(ggufq_dequantize(type, raw.data, out, raw.n_elements), GGUFQ_OK);
        tu_expect_same_floats(out, rdq.data, raw.n_elements, what); /* bit for bit, NaNs too */
        free(out);
        tu_golden_close(&g);
    }
}

/* ------------------------------------------------------------------------- */
/* Plain types without a peer: F32 copy, C casts for F64 and the integers     */
/* ------------------------------------------------------------------------- */

static void test_plain_types(void **state)
{
    (void)state;
    const float f[4] = { 1.5f, -0.0f, INFINITY, 3e38f };
    float out[4];
    uint8_t buf[64];
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_F32, f, buf, 2, 2, NULL), GGUFQ_OK);
    assert_memory_equal(buf, f, sizeof f);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_F32, buf, out, 4), GGUFQ_OK);
    assert_memory_equal(out, f, sizeof f);

    const double d[4] = { 0.1, -1e300, 1e-320, 16777217.0 };
    const float d_want[4] = { (float)0.1, -INFINITY, 0.0f, 16777216.0f };
    memcpy(buf + 1, d, sizeof d); /* unaligned source is fine */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_F64, buf + 1, out, 4), GGUFQ_OK);
    tu_expect_same_floats(out, d_want, 4, "f64");

    const int8_t i8[4] = { -128, 127, 0, -1 };
    const float i8_want[4] = { -128.0f, 127.0f, 0.0f, -1.0f };
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I8, i8, out, 4), GGUFQ_OK);
    tu_expect_same_floats(out, i8_want, 4, "i8");

    const int16_t i16[4] = { -32768, 32767, 12345, -2 };
    const float i16_want[4] = { -32768.0f, 32767.0f, 12345.0f, -2.0f };
    memcpy(buf + 3, i16, sizeof i16);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I16, buf + 3, out, 4), GGUFQ_OK);
    tu_expect_same_floats(out, i16_want, 4, "i16");

    const int32_t i32[4] = { INT32_MIN, INT32_MAX, 16777217, -7 };
    const float i32_want[4] = { -2147483648.0f, 2147483648.0f, 16777216.0f, -7.0f };
    memcpy(buf + 5, i32, sizeof i32);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I32, buf + 5, out, 4), GGUFQ_OK);
    tu_expect_same_floats(out, i32_want, 4, "i32");

    const int64_t i64[4] = { INT64_MIN, INT64_MAX, 9007199254740993LL, 42 };
    const float i64_want[4] = { -9223372036854775808.0f, 9223372036854775808.0f,
                                9007199254740992.0f, 42.0f };
    memcpy(buf + 7, i64, sizeof i64);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_I64, buf + 7, out, 4), GGUFQ_OK);
    tu_expect_same_floats(out, i64_want, 4, "i64");

    /* these types only decode */
    const ggufq_type decode_only[] = { GGUFQ_TYPE_F64, GGUFQ_TYPE_I8, GGUFQ_TYPE_I16,
                                       GGUFQ_TYPE_I32, GGUFQ_TYPE_I64 };
    for (size_t i = 0; i < sizeof decode_only / sizeof decode_only[0]; i++)
        assert_int_equal(ggufq_quantize(decode_only[i], f, buf, 1, 4, NULL),
                         GGUFQ_E_NOT_IMPLEMENTED);
}

/* Hand-checked values of the scale conversions and the odd corners ggml has. */
static void test_small_known_values(void **state)
{
    (void)state;
    float out[64];
    uint8_t blk[36] = { 0 };

    /* MXFP4: e = 255 is 2^127 (no NaN), e = 0 a subnormal 2^-128 scale */
    blk[0] = 255;
    blk[1] = 0x7F; /* weight 0: code 15 (-12), weight 16: code 7 (+12) */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_MXFP4, blk, out, 32), GGUFQ_OK);
    assert_true(isinf(out[0]) && out[0] < 0);
    assert_true(isinf(out[16]) && out[16] > 0);
    blk[0] = 0;
    blk[1] = 0x01;
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_MXFP4, blk, out, 32), GGUFQ_OK);
    assert_true(out[0] == ldexpf(1.0f, -128));

    /* NVFP4: scale 0x7F decodes to 0, 0x7E to 448 (times 0.5 for the doubled codes) */
    memset(blk, 0, sizeof blk);
    blk[0] = 0x7E;
    blk[1] = 0x7F;
    blk[4] = 0x07; /* weight 0: +12 */
    blk[8] = 0x07; /* weight 16 */
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_NVFP4, blk, out, 64), GGUFQ_OK);
    assert_true(out[0] == 448.0f * 6.0f);
    assert_true(out[16] == 0.0f);

    /* Q1_0: sign bits, d = mean |x| */
    float x[128];
    for (int i = 0; i < 128; i++)
        x[i] = i % 2 ? -2.0f : 2.0f;
    uint8_t q1[18];
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q1_0, x, q1, 1, 128, NULL), GGUFQ_OK);
    assert_int_equal(q1[0] | q1[1] << 8, 0x4000); /* 2.0 in F16 */
    for (int i = 2; i < 18; i++)
        assert_int_equal(q1[i], 0x55);
}

/* ------------------------------------------------------------------------- */
/* Differential tests against the peer                                        */
/* ------------------------------------------------------------------------- */

/* ggml's kernels of a small type: the chunk quantizer and its row reference too. */
static void peer_kernels_of(ggufq_type type, pk_kernels *k)
{
    assert_true(pk_kernels_of(tu_peer(), type, k));
    assert_non_null(k->row);
    assert_non_null(k->dequant);
}

enum distribution {
    DIST_GAUSS_1, DIST_GAUSS_SMALL, DIST_GAUSS_LARGE, DIST_UNIFORM, DIST_HEAVY_TAIL,
    DIST_OUTLIERS, DIST_ZERO_BLOCKS, DIST_CONSTANT_BLOCKS, DIST_F16_SUBNORMAL, DIST_F16_MAX,
    DIST_F32_TINY, DIST_TIES, DIST_NONFINITE, DIST_COUNT
};

/* A NaN with a random payload (quiet or signalling) and sign. */
static float random_nan(tu_rng *r)
{
    uint32_t bits = 0x7F800000u | (uint32_t)(tu_rand_u64(r) & 0x807FFFFFu);
    if ((bits & 0x7FFFFFu) == 0)
        bits |= 1;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float random_special(tu_rng *r)
{
    static const float specials[] = { NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f,
                                      65504.0f, 65520.0f, -65519.99f, 3.4e38f, 1e-45f };
    const float s = specials[tu_rand_u64(r) % (sizeof specials / sizeof specials[0])];
    return isnan(s) ? random_nan(r) : s;
}

/* Fill n weights (a whole number of 16-weight groups) from one distribution. */
static void fill_weights(float *x, int64_t n, int dist, tu_rng *r)
{
    for (int64_t i = 0; i < n; i++) {
        const float g = tu_rand_gauss(r);
        switch (dist) {
        case DIST_GAUSS_1:      x[i] = g; break;
        case DIST_GAUSS_SMALL:  x[i] = g * 1e-3f; break;
        case DIST_GAUSS_LARGE:  x[i] = g * 1e3f; break;
        case DIST_UNIFORM:      x[i] = 2.0f * tu_rand_uniform(r) - 1.0f; break;
        case DIST_HEAVY_TAIL:   x[i] = g / (tu_rand_uniform(r) + 1e-3f); break;
        case DIST_OUTLIERS:     x[i] = tu_rand_u64(r) % 37 == 0 ? g * 50.0f : g; break;
        case DIST_ZERO_BLOCKS:  x[i] = (i / 32) % 3 == 1 ? 0.0f : g; break;
        case DIST_CONSTANT_BLOCKS: x[i] = (float)((i / 64) % 5) * 0.25f - 0.5f; break;
        case DIST_F16_SUBNORMAL: x[i] = g * 6e-8f * (float)(1 + (i / 16) % 1000); break;
        case DIST_F16_MAX:      x[i] = g * 3e4f; break;
        case DIST_F32_TINY:     x[i] = g * 1e-39f * (float)(1 + (i / 32) % 7); break;
        case DIST_TIES:         x[i] = (float)((int)(g * 8.0f)) * 0.125f; break;
        default:                x[i] = tu_rand_u64(r) % 5 == 0 ? random_special(r) : g; break;
        }
    }
}

static void compare_quantize(ggufq_type type, const pk_kernels *pk, const float *x,
                             int64_t nrows, int64_t n_per_row, const float *imatrix,
                             uint8_t *ours, uint8_t *theirs, float *fo, float *ft,
                             const char *what)
{
    const int64_t n = nrows * n_per_row;
    const size_t bytes = (size_t)nrows * ggufq_row_size(type, n_per_row);
    memset(ours, 0xAA, bytes);
    memset(theirs, 0x55, bytes);
    assert_int_equal(ggufq_quantize(type, x, ours, nrows, n_per_row, imatrix), GGUFQ_OK);
    if (pk->chunk)
        assert_int_equal(pk->chunk(x, theirs, nrows, n_per_row, imatrix), bytes);
    else
        pk->row(x, theirs, n);
    tu_expect_same_bytes(ours, theirs, bytes, what);
    if (!imatrix && pk->chunk) { /* the plain reference row quantizer agrees too */
        memset(theirs, 0x55, bytes);
        pk->row(x, theirs, n);
        tu_expect_same_bytes(ours, theirs, bytes, what);
    }
    assert_int_equal(ggufq_dequantize(type, ours, fo, n), GGUFQ_OK);
    pk->dequant(theirs, ft, n);
    tu_expect_same_floats(fo, ft, n, what);
}

static void test_peer_quantize(void **state)
{
    (void)state;
    if (!tu_peer()) {
        skip();
        return;
    }
    enum { MAX_N = 3 * 16384 };
    float *x = malloc(MAX_N * sizeof(float)), *imatrix = malloc(16384 * sizeof(float));
    float *fo = malloc(MAX_N * sizeof(float)), *ft = malloc(MAX_N * sizeof(float));
    uint8_t *ours = malloc(MAX_N * 4), *theirs = malloc(MAX_N * 4);
    assert_true(x && imatrix && fo && ft && ours && theirs);

    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        pk_kernels pk;
        peer_kernels_of(type, &pk);
        const int64_t bs = type == GGUFQ_TYPE_F16 || type == GGUFQ_TYPE_BF16
                               ? 32 : ggufq_type_block_size(type);
        for (uint64_t seed = 1; seed <= 5; seed++) {
            for (int dist = 0; dist < DIST_COUNT; dist++) {
                tu_rng r = { seed * 1000003u + (uint64_t)dist * 7919u + k };
                /* one block, a random length, and the longest row */
                const int64_t max_blocks = 16384 / bs;
                const int64_t lens[3] = { bs, bs * (1 + (int64_t)(tu_rand_u64(&r) % max_blocks)),
                                          16384 };
                for (int li = 0; li < 3; li++) {
                    const int64_t n_per_row = lens[li];
                    const int64_t nrows = n_per_row <= 2048 ? 3 : 1;
                    fill_weights(x, nrows * n_per_row, dist, &r);
                    for (int64_t j = 0; j < n_per_row; j++)
                        imatrix[j] = tu_rand_uniform(&r) * tu_rand_uniform(&r) * 10.0f;
                    char what[128];
                    snprintf(what, sizeof what, "%s seed %llu dist %d rows %lld x %lld",
                             ggufq_type_name(type), (unsigned long long)seed, dist,
                             (long long)nrows, (long long)n_per_row);
                    compare_quantize(type, &pk, x, nrows, n_per_row, NULL, ours, theirs, fo, ft,
                                     what);
                    if (pk.chunk)
                        compare_quantize(type, &pk, x, nrows, n_per_row, imatrix, ours, theirs,
                                         fo, ft, what);
                }
            }
        }
    }
    free(x); free(imatrix); free(fo); free(ft); free(ours); free(theirs);
}

/* Decode random blocks with both; the scale byte(s) of the FP4 types run over all 256 values. */
static void test_peer_dequantize_raw(void **state)
{
    (void)state;
    if (!tu_peer()) {
        skip();
        return;
    }
    enum { N_WEIGHTS = 65536 };
    uint8_t *raw = malloc(N_WEIGHTS * 4);
    float *fo = malloc(N_WEIGHTS * sizeof(float)), *ft = malloc(N_WEIGHTS * sizeof(float));
    assert_true(raw && fo && ft);
    tu_rng r = { 424242 };

    for (size_t k = 0; k < N_SMALL_TYPES; k++) {
        const ggufq_type type = small_types[k];
        pk_kernels pk;
        peer_kernels_of(type, &pk);
        const int64_t n = N_WEIGHTS;
        const size_t bytes = ggufq_row_size(type, n);
        for (size_t i = 0; i < bytes; i++)
            raw[i] = (uint8_t)tu_rand_u64(&r);
        if (type == GGUFQ_TYPE_F16 || type == GGUFQ_TYPE_BF16) {
            for (uint32_t h = 0; h < 65536; h++) { /* every bit pattern */
                raw[2 * h] = (uint8_t)h;
                raw[2 * h + 1] = (uint8_t)(h >> 8);
            }
        } else if (type == GGUFQ_TYPE_MXFP4) {
            for (size_t b = 0; b < bytes / 17; b++)
                raw[b * 17] = (uint8_t)b;
        } else if (type == GGUFQ_TYPE_NVFP4) {
            for (size_t b = 0; b < bytes / 36; b++)
                for (int s = 0; s < 4; s++)
                    raw[b * 36 + (size_t)s] = (uint8_t)(b + (size_t)s * 64);
        }
        char what[64];
        snprintf(what, sizeof what, "%s raw blocks", ggufq_type_name(type));
        assert_int_equal(ggufq_dequantize(type, raw, fo, n), GGUFQ_OK);
        pk.dequant(raw, ft, n);
        tu_expect_same_floats(fo, ft, n, what);
    }
    free(raw); free(fo); free(ft);
}

/*
 * The scale conversions in isolation: every positive power-of-two amax for
 * MXFP4's exponent (including F32 subnormals, whose exponent byte wraps in
 * ggml), and many amax values around each UE4M3 rounding boundary for NVFP4.
 */
static void test_peer_scale_edges(void **state)
{
    (void)state;
    if (!tu_peer()) {
        skip();
        return;
    }
    pk_kernels mx, nv;
    peer_kernels_of(GGUFQ_TYPE_MXFP4, &mx);
    peer_kernels_of(GGUFQ_TYPE_NVFP4, &nv);
    enum { N_BLOCKS = 4096 };
    float *x = calloc(N_BLOCKS * 64, sizeof(float));
    uint8_t *ours = malloc(N_BLOCKS * 36), *theirs = malloc(N_BLOCKS * 36);
    assert_true(x && ours && theirs);
    tu_rng r = { 99 };

    /* MXFP4: block b has max |x| = 2^(b - 160) (b < 290), times a factor near 1 */
    for (int b = 0; b < N_BLOCKS / 4; b++) {
        const float p = ldexpf(1.0f, b % 290 - 160);
        const float f = b < 290 ? 1.0f : b < 580 ? 0.99999994f : 1.0f + tu_rand_uniform(&r);
        for (int j = 0; j < 32; j++)
            x[b * 32 + j] = (j == 5 ? p * f : p * f * (2.0f * tu_rand_uniform(&r) - 1.0f));
        if (b == 3)
            x[b * 32 + 7] = INFINITY;
    }
    const int64_t n_mx = N_BLOCKS / 4 * 32;
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_MXFP4, x, ours, 1, n_mx, NULL), GGUFQ_OK);
    assert_int_equal(mx.chunk(x, theirs, 1, n_mx, NULL), ggufq_row_size(GGUFQ_TYPE_MXFP4, n_mx));
    tu_expect_same_bytes(ours, theirs, ggufq_row_size(GGUFQ_TYPE_MXFP4, n_mx), "mxfp4 exponents");

    /* NVFP4: sub-block max = 6 * (a UE4M3 value or a midpoint, nudged by an ulp) */
    memset(x, 0, N_BLOCKS * 64 * sizeof(float));
    for (int sb = 0; sb < N_BLOCKS * 4; sb++) {
        const int code = sb % 128, nudge = (sb / 128) % 3 - 1;
        const int e = code >> 3, m = code & 7;
        float v = e == 0 ? ldexpf((float)m + 0.5f, -9)
                         : ldexpf(1.0f + ((float)m + ((sb / 384) % 2 ? 0.5f : 0.0f)) / 8.0f, e - 7);
        uint32_t bits;
        memcpy(&bits, &v, 4);
        bits += (uint32_t)nudge;
        memcpy(&v, &bits, 4);
        v *= 6.0f;
        for (int j = 0; j < 16; j++)
            x[sb * 16 + j] = j == 3 ? -v : v * (2.0f * tu_rand_uniform(&r) - 1.0f);
    }
    const int64_t n_nv = N_BLOCKS * 64;
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_NVFP4, x, ours, 1, n_nv, NULL), GGUFQ_OK);
    assert_int_equal(nv.chunk(x, theirs, 1, n_nv, NULL), ggufq_row_size(GGUFQ_TYPE_NVFP4, n_nv));
    tu_expect_same_bytes(ours, theirs, ggufq_row_size(GGUFQ_TYPE_NVFP4, n_nv), "nvfp4 scales");

    free(x); free(ours); free(theirs);
}

/* ------------------------------------------------------------------------- */
/* Sources at any address (general.alignment 1): every type, every output     */
/* ------------------------------------------------------------------------- */

static void test_misaligned_sources(void **state)
{
    (void)state;
    static const ggufq_type outs[] = { GGUFQ_TYPE_F32, GGUFQ_TYPE_F16, GGUFQ_TYPE_BF16 };
    tu_rng rng = { 0xA119E1ull };
    int checked = 0;
    for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
        if (!ggufq_type_is_valid(type))
            continue;
        const ggufq_type t = (ggufq_type)type;
        const int64_t bs = ggufq_type_block_size(t);
        const int64_t n = bs == 1 ? 259 : 3 * bs;   /* odd counts: the kernels' tails */
        const size_t bytes = ggufq_row_size(t, n);
        uint8_t *raw = malloc(bytes + 8);
        uint8_t *want = malloc(4 * (size_t)n + 8), *got = malloc(4 * (size_t)n + 8);
        assert_true(raw && want && got);
        for (size_t i = 0; i < bytes; i++)
            raw[i] = (uint8_t)tu_rand_u64(&rng);
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
            const size_t out_bytes = ggufq_row_size(outs[o], n);
            const int rc = ggufq_dequantize_to(t, raw, outs[o], want, n, 1);
            if (rc == GGUFQ_E_NOT_IMPLEMENTED)
                break;   /* no decoder (Q8_1's is ggml's too) */
            assert_int_equal(rc, GGUFQ_OK);
            for (size_t off = 1; off < 8; off++) {
                uint8_t *src = malloc(bytes + off);
                assert_non_null(src);
                memcpy(src + off, raw, bytes);
                /* F32 output stays float aligned (the API's float *), the others move too */
                const size_t doff = outs[o] == GGUFQ_TYPE_F32 ? 0 : off % 2;
                assert_int_equal(ggufq_dequantize_to(t, src + off, outs[o], got + doff, n, 1),
                                 GGUFQ_OK);
                char what[64];
                snprintf(what, sizeof what, "%s -> %s from +%zu", ggufq_type_name(t),
                         ggufq_type_name(outs[o]), off);
                tu_expect_same_bytes(got + doff, want, out_bytes, what);
                free(src);
                checked++;
            }
        }
        free(raw);
        free(want);
        free(got);
    }
    printf("%d misaligned decodes compared with aligned ones\n", checked);
    assert_true(checked > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_plain_types),
        cmocka_unit_test(test_small_known_values),
        cmocka_unit_test(test_peer_quantize),
        cmocka_unit_test(test_peer_dequantize_raw),
        cmocka_unit_test(test_peer_scale_edges),
        cmocka_unit_test(test_misaligned_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
