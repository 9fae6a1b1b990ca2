/*
 * test_types.c — type table and status strings of the public API.
 */
#include "testutil.h"

#include <string.h>

static void test_type_ids_and_names(void **state)
{
    (void)state;
    assert_string_equal(ggufq_type_name(GGUFQ_TYPE_Q4_K), "q4_K");
    assert_string_equal(ggufq_type_name(GGUFQ_TYPE_IQ2_XXS), "iq2_xxs");
    assert_string_equal(ggufq_type_name(GGUFQ_TYPE_BF16), "bf16");
    assert_int_equal(ggufq_type_from_name("Q4_K"), GGUFQ_TYPE_Q4_K);
    assert_int_equal(ggufq_type_from_name("iq4_XS"), GGUFQ_TYPE_IQ4_XS);
    assert_true(ggufq_type_from_name("q4_2") < 0);
    assert_true(ggufq_type_from_name(NULL) < 0);
    for (int removed = 4; removed <= 5; removed++)
        assert_false(ggufq_type_is_valid(removed));
    for (int removed = 31; removed <= 38; removed++)
        if (removed != 34 && removed != 35)
            assert_false(ggufq_type_is_valid(removed));
    assert_false(ggufq_type_is_valid(GGUFQ_TYPE_COUNT));
    assert_false(ggufq_type_is_valid(-1));
    assert_null(ggufq_type_name((ggufq_type)4));
}

static void test_block_geometry(void **state)
{
    (void)state;
    assert_int_equal(ggufq_type_block_size(GGUFQ_TYPE_Q4_0), 32);
    assert_int_equal(ggufq_type_block_bytes(GGUFQ_TYPE_Q4_0), 18);
    assert_int_equal(ggufq_type_block_size(GGUFQ_TYPE_Q4_K), 256);
    assert_int_equal(ggufq_type_block_bytes(GGUFQ_TYPE_Q4_K), 144);
    assert_int_equal(ggufq_type_block_bytes(GGUFQ_TYPE_NVFP4), 36);
    assert_int_equal(ggufq_type_block_size(GGUFQ_TYPE_Q1_0), 128);
    assert_int_equal(ggufq_row_size(GGUFQ_TYPE_Q6_K, 512), 420);
    assert_int_equal(ggufq_row_size(GGUFQ_TYPE_Q6_K, 100), 0);
    assert_int_equal(ggufq_row_size(GGUFQ_TYPE_F16, 7), 14);
    assert_true(ggufq_type_is_quantized(GGUFQ_TYPE_Q8_0));
    assert_false(ggufq_type_is_quantized(GGUFQ_TYPE_BF16));
}

static void test_status_strings(void **state)
{
    (void)state;
    assert_string_equal(ggufq_strerror(GGUFQ_OK), "success");
    assert_string_equal(ggufq_strerror(GGUFQ_E_TRUNCATED), "truncated file");
    assert_string_equal(ggufq_strerror(12345), "unknown status");
    for (int s = GGUFQ_E_STATE; s < 0; s++)
        assert_string_not_equal(ggufq_strerror(s), "unknown status");
    /* stable values: outside programs rely on them */
    assert_int_equal(GGUFQ_E_NEEDS_IMATRIX, -7);
    assert_int_equal(GGUFQ_E_TRUNCATED, -13);
}

static void test_kernel_argument_checks(void **state)
{
    (void)state;
    float out[32];
    unsigned char blk[64] = { 0 };
    assert_int_equal(ggufq_dequantize((ggufq_type)4, blk, out, 32), GGUFQ_E_UNKNOWN_TYPE);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_0, blk, out, 31), GGUFQ_E_BAD_SIZE);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_0, NULL, out, 32), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_dequantize(GGUFQ_TYPE_Q4_0, blk, out, -32), GGUFQ_E_INVALID_ARG);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_Q4_0, out, blk, 1, 31, NULL), GGUFQ_E_BAD_SIZE);
    assert_int_equal(ggufq_quantize(GGUFQ_TYPE_IQ2_XXS, out, blk, 1, 256, NULL),
                     GGUFQ_E_NEEDS_IMATRIX);
}

static void test_isa(void **state)
{
    (void)state;
    assert_string_equal(ggufq_isa_name(GGUFQ_ISA_SCALAR), "scalar");
    assert_string_equal(ggufq_isa_name(GGUFQ_ISA_AVX512), "avx512");
    assert_null(ggufq_isa_name((ggufq_isa)9));
    assert_true(ggufq_isa_supported(GGUFQ_ISA_SCALAR));
    assert_int_equal(ggufq_use_isa((ggufq_isa)9), GGUFQ_E_INVALID_ARG);
#if defined(__x86_64__)
    assert_int_equal(ggufq_use_isa(GGUFQ_ISA_NEON), GGUFQ_E_ISA_UNSUPPORTED);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_ids_and_names),
        cmocka_unit_test(test_block_geometry),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_kernel_argument_checks),
        cmocka_unit_test(test_isa),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
