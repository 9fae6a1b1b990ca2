/*
 * test_isa_env.c — an unusable GGUFQ_ISA: the library writes nothing to
 * stderr (it never prints), keeps running on the best ISA, and reports the
 * problem through ggufq_isa_env_status: the status and the exact message.
 *
 * The ISA is chosen once per process, so each case runs in a child with
 * GGUFQ_ISA set and its stderr sent to a file; the child reports what the
 * library told it on a pipe. Cases: a name that is no ISA, one with a
 * terminal escape (shown as \x1B), an ISA this build or CPU cannot run (NEON
 * on x86, AVX2 on AArch64), and a good one (GGUFQ_OK, empty message).
 */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct child_report {
    int  status;          /* ggufq_isa_env_status */
    int  err_status;      /* its ggufq_error's status */
    int  active;          /* ggufq_active_isa */
    int  kernel_rc;       /* a dequantization and a quantization, both GGUFQ_OK */
    char message[512];
} child_report;

/* In the child: use the kernels, then ask how the ISA was chosen. */
static void child_run(int fd)
{
    child_report r;
    memset(&r, 0, sizeof r);
    const float x[32] = { 1.0f, -2.0f, 0.5f };
    uint8_t q[64];
    float back[32];
    r.kernel_rc = ggufq_quantize(GGUFQ_TYPE_Q8_0, x, q, 1, 32, NULL);
    if (r.kernel_rc == GGUFQ_OK)
        r.kernel_rc = ggufq_dequantize(GGUFQ_TYPE_Q8_0, q, back, 32);
    r.active = (int)ggufq_active_isa();
    ggufq_error err;
    memset(&err, 0x55, sizeof err);
    r.status = ggufq_isa_env_status(&err);
    r.err_status = err.status;
    memcpy(r.message, err.message, sizeof r.message);
    r.message[sizeof r.message - 1] = '\0';
    if (ggufq_isa_env_status(NULL) != r.status)   /* err is optional; the answer stays */
        r.status = 12345;
    fflush(NULL);
    _exit(write(fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 3);
}

/* Run one case; *stderr_bytes: what the child wrote to stderr. */
static child_report run_case(const char *isa_env, long *stderr_bytes)
{
    char errpath[4096];
    snprintf(errpath, sizeof errpath, "%s/stderr", tu_tmpdir("test_isa_env"));
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        /* fd 2 itself: stdio's stderr (unbuffered) and raw writes both land there */
        const int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (e < 0 || dup2(e, 2) != 2 || setenv("GGUFQ_ISA", isa_env, 1) != 0)
            _exit(4);
        close(e);
        child_run(fds[1]);
    }
    close(fds[1]);
    child_report r;
    memset(&r, 0, sizeof r);
    const ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    assert_int_equal(got, (ssize_t)sizeof r);
    FILE *f = fopen(errpath, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *stderr_bytes = ftell(f);
    fclose(f);
    return r;
}

/* The ISA chosen when GGUFQ_ISA is unset: the best one this CPU runs. */
static int best_isa(void)
{
    static const ggufq_isa order[] = { GGUFQ_ISA_AVX512, GGUFQ_ISA_AVX2, GGUFQ_ISA_NEON };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (ggufq_isa_supported(order[i]))
            return (int)order[i];
    return GGUFQ_ISA_SCALAR;
}

static void expect_case(const char *isa_env, int status, int active, const char *message)
{
    long stderr_bytes = -1;
    const child_report r = run_case(isa_env, &stderr_bytes);
    if (stderr_bytes != 0)
        fprintf(stderr, "GGUFQ_ISA=%s: the library wrote %ld bytes to stderr\n", isa_env,
                stderr_bytes);
    assert_int_equal(stderr_bytes, 0);
    assert_int_equal(r.kernel_rc, GGUFQ_OK);
    assert_int_equal(r.status, status);
    assert_int_equal(r.err_status, status);
    assert_int_equal(r.active, active);
    assert_string_equal(r.message, message);
}

static void test_bad_names(void **state)
{
    (void)state;
    expect_case("bogus", GGUFQ_E_INVALID_ARG, best_isa(),
                "GGUFQ_ISA=bogus: not one of scalar, avx2, avx512, neon");
    expect_case("avx\x1b[2J\\", GGUFQ_E_INVALID_ARG, best_isa(),
                "GGUFQ_ISA=avx\\x1B[2J\\x5C: not one of scalar, avx2, avx512, neon");
    /* a long value: its first 48 bytes and "..." */
    char longname[100], want[160];
    memset(longname, 'a', 99);
    longname[99] = '\0';
    snprintf(want, sizeof want, "GGUFQ_ISA=%.48s...: not one of scalar, avx2, avx512, neon",
             longname);
    expect_case(longname, GGUFQ_E_INVALID_ARG, best_isa(), want);
}

static void test_unsupported_isa(void **state)
{
    (void)state;
#if defined(__x86_64__) || defined(__i386__)
    const char *other = "neon";
#else
    const char *other = "avx2";
#endif
    char want[128];
    snprintf(want, sizeof want, "GGUFQ_ISA=%s: this CPU/OS cannot run it (or this build lacks it)",
             other);
    expect_case(other, GGUFQ_E_ISA_UNSUPPORTED, best_isa(), want);
}

static void test_good_names(void **state)
{
    (void)state;
    expect_case("SCALAR", GGUFQ_OK, GGUFQ_ISA_SCALAR, "");
    expect_case("", GGUFQ_OK, best_isa(), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_unsupported_isa),
        cmocka_unit_test(test_good_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
