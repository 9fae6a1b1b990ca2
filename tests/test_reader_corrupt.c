/*
 * test_reader_corrupt.c — the reader refuses every malformed GGUF file with
 * the specific status, the file name and the byte offset; truncations and
 * random corruptions never crash it.
 */
#include "testutil.h"
#include "gguf_build.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "bad.gguf"

/* Open b, expect `status`; check the handle, err.status, the file name in the
 * message and that the reported offset (if any) is inside the file and quoted. */
static ggufq_error refused_with(const gb_buf *b, const ggufq_open_options *opts, int status,
                                const char *what)
{
    ggufq_file *f = (ggufq_file *)b;   /* must be reset to NULL */
    ggufq_error err;
    int rc = ggufq_open_memory(b->p, b->len, NAME, opts, &f, &err);
    if (rc != status)
        fail_msg("%s: expected status %d, got %d (%s)", what, status, rc,
                 rc == GGUFQ_OK ? "opened" : err.message);
    assert_null(f);
    assert_int_equal(err.status, status);
    if (strncmp(err.message, NAME ": ", strlen(NAME) + 2) != 0)
        fail_msg("%s: message does not start with the file name: %s", what, err.message);
    if (err.offset != GGUFQ_NO_OFFSET) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, NAME ": offset %" PRIu64 ": ", err.offset);
        assert_true(err.offset <= b->len);
        if (strncmp(err.message, quoted, strlen(quoted)) != 0)
            fail_msg("%s: offset %" PRIu64 " not quoted: %s", what, err.offset, err.message);
    }
    return err;
}

static ggufq_error refused(const gb_buf *b, int status, const char *what)
{
    return refused_with(b, NULL, status, what);
}

static void opens(const gb_buf *b, const char *what)
{
    ggufq_file *f = NULL;
    ggufq_error err;
    int rc = ggufq_open_memory(b->p, b->len, NAME, NULL, &f, &err);
    if (rc != GGUFQ_OK)
        fail_msg("%s: expected success, got %d: %s", what, rc, err.message);
    assert_int_equal(gb_walk(f), 0);
    ggufq_close(f);
}

static void assert_mentions(const ggufq_error *err, const char *text)
{
    if (strstr(err->message, text) == NULL)
        fail_msg("message lacks \"%s\": %s", text, err->message);
}

/* A file holding one tensor with the given fields and `data_bytes` bytes of data. */
static void one_tensor_file(gb_buf *b, const char *name, uint32_t n_dims, const int64_t *dims,
                            uint32_t type, uint64_t offset, size_t data_bytes)
{
    gb_free(b);
    gb_header(b, 3, 1, 0);
    gb_tensor(b, name, n_dims, dims, type, offset);
    gb_pad(b, 32);
    gb_zeros(b, data_bytes);
}

/* ------------------------------------------------------------------------- */
/* Header                                                                    */
/* ------------------------------------------------------------------------- */

static void test_refuse_magic_version_endianness(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    gb_bytes(&b, "GGUX", 4);
    gb_u32(&b, 3); gb_u64(&b, 0); gb_u64(&b, 0);
    err = refused(&b, GGUFQ_E_BAD_MAGIC, "bad magic");
    assert_int_equal(err.offset, 0);
    gb_free(&b);

    /* short files: a prefix of the magic is a truncation, anything else bad magic */
    refused(&b, GGUFQ_E_TRUNCATED, "empty");
    gb_bytes(&b, "GG", 2);
    refused(&b, GGUFQ_E_TRUNCATED, "2 bytes");
    b.p[1] = 'X';
    refused(&b, GGUFQ_E_BAD_MAGIC, "2 wrong bytes");
    gb_free(&b);
    gb_bytes(&b, "\x7f" "ELF\x02\x01\x01\x00", 8);
    refused(&b, GGUFQ_E_BAD_MAGIC, "ELF");
    gb_free(&b);

    static const uint32_t bad_versions[] = { 0, 1, 4, 0x12345678u, 0xFFFFFFFFu };
    for (size_t i = 0; i < sizeof bad_versions / sizeof *bad_versions; i++) {
        gb_header(&b, bad_versions[i], 0, 0);
        err = refused(&b, GGUFQ_E_BAD_VERSION, "bad version");
        assert_int_equal(err.offset, 4);
        gb_free(&b);
    }

    /* version 3 / 2 written big-endian */
    static const uint32_t swapped[] = { 0x03000000u, 0x02000000u };
    for (int i = 0; i < 2; i++) {
        gb_header(&b, swapped[i], 0, 0);
        err = refused(&b, GGUFQ_E_BIG_ENDIAN, "big-endian");
        assert_int_equal(err.offset, 4);
        assert_mentions(&err, "big-endian");
        gb_free(&b);
    }

    /* a header cut short after the version */
    gb_header(&b, 3, 0, 0);
    b.len = 20;
    refused(&b, GGUFQ_E_TRUNCATED, "short header");
    gb_free(&b);
}

static void test_refuse_counts_and_limits(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    /* kv count larger than the bytes could hold (each kv needs >= 14 bytes) */
    gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "a", 1);   /* 17 bytes: room for one, not three */
    err = refused(&b, GGUFQ_E_TRUNCATED, "n_kv too large");
    assert_int_equal(err.offset, 16);
    gb_free(&b);
    gb_header(&b, 3, 0, UINT64_MAX);
    refused(&b, GGUFQ_E_TRUNCATED, "n_kv = UINT64_MAX");
    gb_free(&b);
    gb_header(&b, 3, UINT64_MAX / 2, 0);
    gb_zeros(&b, 1000);
    err = refused(&b, GGUFQ_E_TRUNCATED, "n_tensors huge");
    assert_int_equal(err.offset, 8);
    gb_free(&b);
    /* 1000 bytes can hold 30 minimal tensor infos, not 31 */
    gb_header(&b, 3, 31, 0);
    gb_zeros(&b, 1000);
    refused(&b, GGUFQ_E_TRUNCATED, "n_tensors 31");
    gb_free(&b);

    /* within the bytes but over the caller's limits */
    gb_header(&b, 3, 2, 3);
    gb_kv_u32(&b, "a", 1);
    gb_kv_u32(&b, "b", 2);
    gb_kv_u32(&b, "c", 3);
    const int64_t d[1] = { 8 };
    gb_tensor(&b, "t0", 1, d, GGUFQ_TYPE_F32, 0);
    gb_tensor(&b, "t1", 1, d, GGUFQ_TYPE_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    opens(&b, "limits file");
    ggufq_open_options opts = { 0 };
    opts.max_kv = 2;
    err = refused_with(&b, &opts, GGUFQ_E_LIMIT, "max_kv");
    assert_mentions(&err, "max_kv");
    opts.max_kv = 3;
    opts.max_tensors = 1;
    err = refused_with(&b, &opts, GGUFQ_E_LIMIT, "max_tensors");
    assert_mentions(&err, "max_tensors");
    opts.max_tensors = 0;
    opts.max_metadata_bytes = 100;
    err = refused_with(&b, &opts, GGUFQ_E_LIMIT, "max_metadata_bytes");
    assert_mentions(&err, "max_metadata_bytes");
    assert_mentions(&err, "100");
    gb_free(&b);
}

/* ------------------------------------------------------------------------- */
/* Keys and values                                                           */
/* ------------------------------------------------------------------------- */

static void test_refuse_keys_and_strings(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "", 1);
    err = refused(&b, GGUFQ_E_BAD_KEY, "empty key");
    assert_int_equal(err.offset, 24);
    gb_free(&b);

    gb_header(&b, 3, 0, 1);
    gb_strn(&b, "ab\0cd", 5);
    gb_u32(&b, 4); gb_u32(&b, 1);
    err = refused(&b, GGUFQ_E_BAD_KEY, "NUL in key");
    assert_int_equal(err.offset, 24 + 8 + 2);
    gb_free(&b);

    /* 65536-byte key: too long even though the bytes are there */
    char *big = malloc(65537);
    memset(big, 'k', 65536);
    big[65536] = '\0';
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, big, 1);
    refused(&b, GGUFQ_E_BAD_KEY, "65536-byte key");
    gb_free(&b);
    free(big);

    /* key length past the end; huge key length */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 30);
    gb_bytes(&b, "short", 5);
    gb_zeros(&b, 4);
    refused(&b, GGUFQ_E_TRUNCATED, "key past end");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, UINT64_MAX);
    gb_zeros(&b, 20);
    refused(&b, GGUFQ_E_BAD_KEY, "key length UINT64_MAX");
    gb_free(&b);

    /* string value lengths past the end */
    static const uint64_t lens[] = { 6, 1000, UINT64_MAX, UINT64_MAX - 7, (uint64_t)1 << 63 };
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        gb_header(&b, 3, 0, 1);
        gb_key(&b, "s", 8);
        gb_u64(&b, lens[i]);
        gb_bytes(&b, "abcde", 5);
        err = refused(&b, GGUFQ_E_TRUNCATED, "string past end");
        assert_int_equal(err.offset, 24 + 9 + 4);
        assert_mentions(&err, "key 's'");
        gb_free(&b);
    }
    /* a string in an array past the end */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "arr", 9);
    gb_array(&b, 8, 2);
    gb_str(&b, "ok");
    gb_u64(&b, 100);
    gb_zeros(&b, 10);
    refused(&b, GGUFQ_E_TRUNCATED, "array string past end");
    gb_free(&b);
    /* scalars cut short */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "x", 11);
    gb_u32(&b, 7);
    refused(&b, GGUFQ_E_TRUNCATED, "i64 cut short");
    gb_free(&b);
}

static void test_refuse_value_types_bools_arrays(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    static const uint32_t bad_types[] = { 13, 14, 255, 0x80000000u, 0xFFFFFFFFu };
    for (size_t i = 0; i < sizeof bad_types / sizeof *bad_types; i++) {
        char id[16];
        snprintf(id, sizeof id, "%" PRIu32, bad_types[i]);
        gb_header(&b, 3, 0, 1);
        gb_key(&b, "k", bad_types[i]);
        gb_zeros(&b, 16);
        err = refused(&b, GGUFQ_E_BAD_VALUE_TYPE, "bad value type");
        assert_int_equal(err.offset, 24 + 9);
        assert_mentions(&err, id);
        gb_free(&b);

        gb_header(&b, 3, 0, 1);
        gb_key(&b, "k", 9);
        gb_array(&b, bad_types[i], 1);
        gb_zeros(&b, 16);
        err = refused(&b, GGUFQ_E_BAD_VALUE_TYPE, "bad array element type");
        assert_int_equal(err.offset, 24 + 13);
        assert_mentions(&err, id);
        gb_free(&b);
    }

    /* bools other than 0/1, alone and in an array */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "b", 7);
    gb_u8(&b, 2);
    err = refused(&b, GGUFQ_E_BAD_BOOL, "bool 2");
    assert_int_equal(err.offset, 24 + 13);
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "b", 9);
    gb_array(&b, 7, 4);
    gb_u8(&b, 0); gb_u8(&b, 1); gb_u8(&b, 0xFF); gb_u8(&b, 0);
    err = refused(&b, GGUFQ_E_BAD_BOOL, "bool array");
    assert_int_equal(err.offset, 24 + 13 + 12 + 2);
    gb_free(&b);

    /* array counts that cannot fit */
    static const struct { uint32_t et; uint64_t n; } huge[] = {
        { 0, 100 }, { 4, (uint64_t)1 << 62 }, { 12, UINT64_MAX }, { 8, 1000000 },
        { 9, 50 }, { 8, UINT64_MAX },
    };
    for (size_t i = 0; i < sizeof huge / sizeof *huge; i++) {
        gb_header(&b, 3, 0, 1);
        gb_key(&b, "a", 9);
        gb_array(&b, huge[i].et, huge[i].n);
        gb_zeros(&b, 64);
        err = refused(&b, GGUFQ_E_TRUNCATED, "array count too large");
        assert_int_equal(err.offset, 24 + 13);
        gb_free(&b);
    }
    /* a nested array whose inner count cannot fit */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "a", 9);
    gb_array(&b, 9, 1);
    gb_array(&b, 6, 1000);
    gb_zeros(&b, 40);
    err = refused(&b, GGUFQ_E_TRUNCATED, "inner array too large");
    assert_int_equal(err.offset, 24 + 13 + 12);
    gb_free(&b);
}

static void test_refuse_nesting(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    gb_header(&b, 3, 0, 1);
    gb_key(&b, "deep", 9);
    for (int k = 0; k < GGUFQ_MAX_NESTING; k++)
        gb_array(&b, 9, 1);
    gb_array(&b, 0, 1);   /* level MAX + 1 */
    gb_u8(&b, 1);
    err = refused(&b, GGUFQ_E_NESTING, "17 levels");
    assert_int_equal(err.offset, 24 + 16 + 12 * GGUFQ_MAX_NESTING);
    gb_free(&b);

    /* 200,000 levels: refused without recursion */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "deeper", 9);
    for (int k = 0; k < 200000; k++)
        gb_array(&b, 9, 1);
    refused(&b, GGUFQ_E_NESTING, "200000 levels");
    gb_free(&b);

    /* a second element deeper than the first */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "wide", 9);
    gb_array(&b, 9, 2);
    gb_array(&b, 0, 0);
    for (int k = 1; k < GGUFQ_MAX_NESTING; k++)
        gb_array(&b, 9, 1);
    gb_array(&b, 0, 0);
    refused(&b, GGUFQ_E_NESTING, "deep second element");
    gb_free(&b);
}

static void test_refuse_duplicates(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "general.x", 1);
    gb_kv_str(&b, "general.y", "v");
    gb_kv_u32(&b, "general.x", 2);
    err = refused(&b, GGUFQ_E_DUPLICATE_KEY, "duplicate key");
    assert_mentions(&err, "general.x");
    assert_int_equal(err.offset, 24 + 25 + 30);
    gb_free(&b);

    const int64_t d[1] = { 8 };
    gb_header(&b, 3, 3, 0);
    gb_tensor(&b, "w", 1, d, GGUFQ_TYPE_F32, 0);
    gb_tensor(&b, "v", 1, d, GGUFQ_TYPE_F32, 32);
    gb_tensor(&b, "w", 1, d, GGUFQ_TYPE_F32, 64);
    gb_pad(&b, 32);
    gb_zeros(&b, 96);
    err = refused(&b, GGUFQ_E_DUPLICATE_TENSOR, "duplicate tensor");
    assert_mentions(&err, "'w'");
    assert_int_equal(err.offset, 24 + 2 * 33);
    gb_free(&b);
}

/* ------------------------------------------------------------------------- */
/* Tensor infos                                                              */
/* ------------------------------------------------------------------------- */

static void test_refuse_tensor_names(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    const int64_t d[1] = { 8 };

    one_tensor_file(&b, "", 1, d, GGUFQ_TYPE_F32, 0, 32);
    refused(&b, GGUFQ_E_BAD_NAME, "empty name");

    gb_free(&b);
    gb_header(&b, 3, 1, 0);
    gb_strn(&b, "a\0b", 3);
    gb_u32(&b, 1); gb_i64(&b, 8); gb_u32(&b, 0); gb_u64(&b, 0);
    gb_pad(&b, 32);
    gb_zeros(&b, 32);
    ggufq_error err = refused(&b, GGUFQ_E_BAD_NAME, "NUL in name");
    assert_int_equal(err.offset, 24 + 8 + 1);

    char *big = malloc(65537);
    memset(big, 't', 65536);
    big[65536] = '\0';
    one_tensor_file(&b, big, 1, d, GGUFQ_TYPE_F32, 0, 32);
    refused(&b, GGUFQ_E_BAD_NAME, "65536-byte name");
    big[65535] = '\0';
    one_tensor_file(&b, big, 1, d, GGUFQ_TYPE_F32, 0, 32);
    opens(&b, "65535-byte name");
    free(big);

    gb_free(&b);
    gb_header(&b, 3, 1, 0);
    gb_u64(&b, 5000);
    gb_zeros(&b, 100);
    refused(&b, GGUFQ_E_TRUNCATED, "name past end");
    gb_free(&b);
}

static void test_refuse_alignment(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;

    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.alignment", 5);   /* int32 */
    gb_u32(&b, 32);
    err = refused(&b, GGUFQ_E_BAD_ALIGNMENT, "int32 alignment");
    assert_mentions(&err, "int32");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.alignment", 10);  /* uint64 */
    gb_u64(&b, 32);
    refused(&b, GGUFQ_E_BAD_ALIGNMENT, "uint64 alignment");
    gb_free(&b);
    static const uint32_t bad[] = { 0, 3, 48, 0xFFFFFFFFu };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gb_header(&b, 3, 0, 1);
        gb_kv_u32(&b, "general.alignment", bad[i]);
        refused(&b, GGUFQ_E_BAD_ALIGNMENT, "bad alignment value");
        gb_free(&b);
    }
    /* 1 and 2^31 are powers of two */
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 1);
    opens(&b, "alignment 1");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0x80000000u);
    opens(&b, "alignment 2^31, no tensors");
    gb_free(&b);
}

static void test_refuse_dims_types_shapes(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;
    const int64_t d8[1] = { 8 };

    static const uint32_t bad_ndims[] = { 0, 5, 0xFFFFFFFFu };
    for (size_t i = 0; i < sizeof bad_ndims / sizeof *bad_ndims; i++) {
        gb_free(&b);
        gb_header(&b, 3, 1, 0);
        gb_str(&b, "t");
        gb_u32(&b, bad_ndims[i]);
        gb_zeros(&b, 80);
        err = refused(&b, GGUFQ_E_BAD_DIMS, "bad n_dims");
        assert_int_equal(err.offset, 24 + 9);
    }
    const int64_t neg[3] = { 8, 2, -1 };
    one_tensor_file(&b, "t", 3, neg, GGUFQ_TYPE_F32, 0, 64);
    err = refused(&b, GGUFQ_E_BAD_DIMS, "negative dim");
    assert_int_equal(err.offset, 24 + 9 + 4 + 16);

    static const uint32_t bad_types[] = { 4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, 0xFFFFFFFFu };
    for (size_t i = 0; i < sizeof bad_types / sizeof *bad_types; i++) {
        char id[16];
        snprintf(id, sizeof id, "%" PRIu32, bad_types[i]);
        one_tensor_file(&b, "t", 1, d8, bad_types[i], 0, 64);
        err = refused(&b, GGUFQ_E_UNKNOWN_TYPE, "unknown type");
        assert_int_equal(err.offset, 24 + 9 + 4 + 8);
        assert_mentions(&err, id);
    }

    const int64_t rows16[1] = { 16 };
    one_tensor_file(&b, "q", 1, rows16, GGUFQ_TYPE_Q4_0, 0, 64);
    refused(&b, GGUFQ_E_BAD_SHAPE, "q4_0 with 16 weights");
    const int64_t k128[2] = { 128, 2 };
    one_tensor_file(&b, "k", 2, k128, GGUFQ_TYPE_Q6_K, 0, 1024);
    refused(&b, GGUFQ_E_BAD_SHAPE, "q6_K with 128 weights");

    /* element counts and byte sizes beyond 64 bits */
    const int64_t big2[2] = { (int64_t)1 << 32, (int64_t)1 << 32 };
    one_tensor_file(&b, "o", 2, big2, GGUFQ_TYPE_F32, 0, 32);
    refused(&b, GGUFQ_E_OVERFLOW, "2^64 elements");
    const int64_t big4[4] = { INT64_MAX, 1, 1, 2 };
    one_tensor_file(&b, "o", 4, big4, GGUFQ_TYPE_I8, 0, 32);
    refused(&b, GGUFQ_E_OVERFLOW, "INT64_MAX * 2 elements");
    const int64_t max1[1] = { INT64_MAX };
    one_tensor_file(&b, "o", 1, max1, GGUFQ_TYPE_F32, 0, 32);
    refused(&b, GGUFQ_E_OVERFLOW, "INT64_MAX f32 bytes");
    /* a huge element count with a zero dimension is an empty tensor */
    const int64_t zero[4] = { 0, INT64_MAX, INT64_MAX, INT64_MAX };
    one_tensor_file(&b, "z", 4, zero, GGUFQ_TYPE_F32, 0, 0);
    opens(&b, "zero dimension");
    /* an enormous but representable tensor is refused for its data, not sizes */
    const int64_t large[1] = { (int64_t)1 << 40 };
    one_tensor_file(&b, "l", 1, large, GGUFQ_TYPE_F32, 0, 32);
    refused(&b, GGUFQ_E_TRUNCATED, "2^40 f32 weights");
    gb_free(&b);
}

static void test_refuse_offsets(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    ggufq_error err;
    const int64_t d8[1] = { 8 };   /* f32: 32 bytes */

    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, 4, 64);
    err = refused(&b, GGUFQ_E_BAD_OFFSET, "unaligned");
    assert_int_equal(err.offset, 24 + 9 + 4 + 8 + 4);
    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, 64, 32);
    refused(&b, GGUFQ_E_BAD_OFFSET, "offset past end");
    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, UINT64_MAX - 31, 32);
    refused(&b, GGUFQ_E_BAD_OFFSET, "offset near 2^64");
    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, 0, 31);
    refused(&b, GGUFQ_E_TRUNCATED, "data one byte short");
    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, 0, 32);
    opens(&b, "data exactly complete");
    one_tensor_file(&b, "t", 1, d8, GGUFQ_TYPE_F32, 32, 32);
    refused(&b, GGUFQ_E_TRUNCATED, "data starts at the end");
    /* tensors but no data section at all (header end not padded) */
    gb_free(&b);
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "t", 1, d8, GGUFQ_TYPE_F32, 0);
    refused(&b, GGUFQ_E_TRUNCATED, "no data section");

    /* overlaps: identical, partial, contained; only distinct ranges pass */
    static const struct { uint64_t a, b; int ok; } pairs[] = {
        { 0, 0, 0 }, { 0, 32, 1 }, { 64, 32, 1 }, { 64, 0, 1 }, { 32, 0, 1 },
    };
    const int64_t d16[1] = { 16 };   /* 64 bytes */
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        /* tensor A: 64 bytes at pairs.a; tensor B: 32 bytes at pairs.b */
        gb_free(&b);
        gb_header(&b, 3, 2, 0);
        gb_tensor(&b, "A", 1, d16, GGUFQ_TYPE_F32, pairs[i].a);
        gb_tensor(&b, "B", 1, d8, GGUFQ_TYPE_F32, pairs[i].b);
        gb_pad(&b, 32);
        gb_zeros(&b, 128);
        int overlap = pairs[i].b < pairs[i].a + 64 && pairs[i].a < pairs[i].b + 32;
        if (overlap) {
            err = refused(&b, GGUFQ_E_BAD_OFFSET, "overlap");
            assert_mentions(&err, "overlaps");
        } else {
            opens(&b, "disjoint");
        }
    }
    /* overlap hidden behind a long tensor: C lies inside A, after B */
    gb_free(&b);
    gb_header(&b, 3, 3, 0);
    const int64_t d64[1] = { 64 };   /* 256 bytes */
    gb_tensor(&b, "A", 1, d64, GGUFQ_TYPE_F32, 0);
    gb_tensor(&b, "B", 1, d8, GGUFQ_TYPE_F32, 32);
    gb_tensor(&b, "C", 1, d8, GGUFQ_TYPE_F32, 128);
    gb_pad(&b, 32);
    gb_zeros(&b, 256);
    refused(&b, GGUFQ_E_BAD_OFFSET, "overlap with an earlier long tensor");
    gb_free(&b);
}

/* ------------------------------------------------------------------------- */
/* Truncations and random corruption                                          */
/* ------------------------------------------------------------------------- */

static void test_every_truncation_is_refused(void **state)
{
    (void)state;
    gb_buf b = { 0 };
    gb_build_sample(&b);
    opens(&b, "sample");
    for (size_t len = 0; len < b.len; len++) {
        /* a fresh exact-size copy so any overread is caught by ASan */
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.p, len);
        ggufq_file *f = NULL;
        ggufq_error err;
        int rc = ggufq_open_memory(copy, len, NAME, NULL, &f, &err);
        if (rc >= 0)
            fail_msg("truncation to %zu of %zu bytes was accepted", len, b.len);
        assert_null(f);
        assert_int_equal(err.status, rc);
        assert_non_null(strstr(err.message, NAME));
        free(copy);
    }
    gb_free(&b);

    /* the fixture ends with tensor data: every cut is refused too (a sample of lengths) */
    size_t size;
    uint8_t *fixture = tu_read_file(tu_path("data/llama-2-tiny-random.gguf"), &size);
    assert_non_null(fixture);
    tu_rng rng = { 7 };
    for (int k = 0; k < 200; k++) {
        size_t len = k < 100 ? (size_t)(tu_rand_u64(&rng) % size)   /* anywhere */
                             : size - 1 - (size_t)(tu_rand_u64(&rng) % 4096);
        ggufq_file *f = NULL;
        ggufq_error err;
        int rc = ggufq_open_memory(fixture, len, NAME, NULL, &f, &err);
        if (rc >= 0)
            fail_msg("fixture cut to %zu bytes was accepted", len);
        assert_int_equal(rc, GGUFQ_E_TRUNCATED);
    }
    free(fixture);
}

/* Offsets of the length/count fields of a valid file (trusted: the fixture). */
typedef struct field_list {
    uint64_t at[64];
    int      n;
    uint64_t meta_end;     /* end of the small kvs before the big arrays */
    uint64_t infos_begin;  /* start of the tensor infos */
    uint64_t header_end;
} field_list;

static void add_field(field_list *fl, uint64_t at)
{
    if (fl->n < 64)
        fl->at[fl->n++] = at;
}

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static void scan_fields(const uint8_t *p, field_list *fl)
{
    memset(fl, 0, sizeof *fl);
    uint64_t nt = rd64(p + 8), nkv = rd64(p + 16), pos = 24;
    add_field(fl, 8);
    add_field(fl, 16);
    for (uint64_t i = 0; i < nkv; i++) {
        add_field(fl, pos);
        pos += 8 + rd64(p + pos);
        uint32_t t = rd32(p + pos);
        pos += 4;
        if (t == 8) {
            add_field(fl, pos);
            pos += 8 + rd64(p + pos);
        } else if (t == 9) {
            uint32_t et = rd32(p + pos);
            uint64_t n = rd64(p + pos + 4);
            if (fl->meta_end == 0)
                fl->meta_end = pos;
            add_field(fl, pos);
            add_field(fl, pos + 4);
            pos += 12;
            if (et == 8) {
                add_field(fl, pos);   /* the first string's length */
                for (uint64_t k = 0; k < n; k++)
                    pos += 8 + rd64(p + pos);
            } else {
                pos += n * 4;   /* the fixture's arrays are float32 / int32 */
            }
        } else {
            pos += 4;           /* the fixture's scalars are uint32 / float32 */
        }
    }
    fl->infos_begin = pos;
    for (uint64_t i = 0; i < nt; i++) {
        add_field(fl, pos);
        pos += 8 + rd64(p + pos);
        uint32_t nd = rd32(p + pos);
        add_field(fl, pos);
        add_field(fl, pos + 4);
        pos += 4 + 8 * (uint64_t)nd;
        add_field(fl, pos);
        add_field(fl, pos + 4);
        pos += 12;
    }
    fl->header_end = pos;
}

static void test_random_corruptions_of_fixture(void **state)
{
    (void)state;
    size_t size;
    uint8_t *orig = tu_read_file(tu_path("data/llama-2-tiny-random.gguf"), &size);
    assert_non_null(orig);
    uint8_t *buf = malloc(size);
    memcpy(buf, orig, size);
    field_list fl;
    scan_fields(orig, &fl);
    assert_int_equal(fl.header_end, 724398);   /* padded to 724416 */
    assert_true(fl.n > 40);

    static const uint64_t huge[] = {
        UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63, (uint64_t)1 << 32, 0xFFFFFFFFu,
        0, 1, 65535, 65536, 1750560, 724416,
    };
    tu_rng rng = { 20240607 };
    /* GGUFQ_FUZZ_ITERS=n runs a longer campaign locally */
    const char *env = getenv("GGUFQ_FUZZ_ITERS");
    int iters = env && atoi(env) > 0 ? atoi(env) : 400;
    int opened = 0;
    for (int iter = 0; iter < iters; iter++) {
        int edits = 1 + (int)(tu_rand_u64(&rng) % 4);
        for (int e = 0; e < edits; e++) {
            uint64_t kind = tu_rand_u64(&rng) % 4;
            if (kind == 0) {         /* a length/count/type field set to a nasty value */
                uint64_t at = fl.at[tu_rand_u64(&rng) % (uint64_t)fl.n];
                uint64_t v = huge[tu_rand_u64(&rng) % (sizeof huge / sizeof *huge)];
                if (tu_rand_u64(&rng) & 1)
                    v = tu_rand_u64(&rng) >> (tu_rand_u64(&rng) % 64);
                for (int k = 0; k < 8 && at + k < size; k++)
                    buf[at + k] = (uint8_t)(v >> (8 * k));
            } else {                 /* a flipped byte: small kvs, tensor infos, or anywhere */
                uint64_t lo = 0, hi = fl.meta_end;
                if (kind == 2) {
                    lo = fl.infos_begin;
                    hi = fl.header_end;
                } else if (kind == 3) {
                    hi = fl.header_end + 16;
                }
                uint64_t at = lo + tu_rand_u64(&rng) % (hi - lo);
                buf[at] ^= (uint8_t)(1u << (tu_rand_u64(&rng) % 8));
            }
        }
        ggufq_file *f = NULL;
        ggufq_error err;
        int rc = ggufq_open_memory(buf, size, NAME, NULL, &f, &err);
        if (rc == GGUFQ_OK) {
            assert_int_equal(gb_walk(f), 0);
            ggufq_close(f);
            opened++;
        } else {
            assert_null(f);
            assert_int_equal(err.status, rc);
            assert_true(rc >= GGUFQ_E_STATE);
            assert_non_null(strstr(err.message, NAME));
        }
        memcpy(buf, orig, fl.header_end + 16);   /* restore the header region */
    }
    fprintf(stderr, "corruptions: %d of %d still opened\n", opened, iters);
    /* many corruptions hit token text or ids and still open; many do not */
    assert_true(opened > 0 && opened < iters);
    free(buf);
    free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuse_magic_version_endianness),
        cmocka_unit_test(test_refuse_counts_and_limits),
        cmocka_unit_test(test_refuse_keys_and_strings),
        cmocka_unit_test(test_refuse_value_types_bools_arrays),
        cmocka_unit_test(test_refuse_nesting),
        cmocka_unit_test(test_refuse_duplicates),
        cmocka_unit_test(test_refuse_tensor_names),
        cmocka_unit_test(test_refuse_alignment),
        cmocka_unit_test(test_refuse_dims_types_shapes),
        cmocka_unit_test(test_refuse_offsets),
        cmocka_unit_test(test_every_truncation_is_refused),
        cmocka_unit_test(test_random_corruptions_of_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
