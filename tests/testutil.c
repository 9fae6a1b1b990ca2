/*
 * testutil.c — helpers shared by the test programs.
 */
#include "testutil.h"

#include <dirent.h>

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Runs before main() in every test program: when GGUFQ_ISA names an ISA this
 * CPU/OS (or this build) cannot run, the program skips (exit 77, which ctest
 * reports as skipped) instead of silently testing another ISA.
 */
__attribute__((constructor)) static void tu_check_isa_env(void)
{
    const char *want = getenv("GGUFQ_ISA");
    if (!want || !*want)
        return;
    for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++) {
        if (strcasecmp(want, ggufq_isa_name((ggufq_isa)i)) != 0)
            continue;
        if (!ggufq_isa_supported((ggufq_isa)i)) {
            fprintf(stderr, "SKIP: GGUFQ_ISA=%s: this CPU/OS cannot run it\n", want);
            _exit(77);
        }
        if (ggufq_active_isa() != (ggufq_isa)i) {
            fprintf(stderr, "GGUFQ_ISA=%s not in effect (active: %s)\n", want,
                    ggufq_isa_name(ggufq_active_isa()));
            _exit(1);
        }
        printf("kernels: %s\n", want);
        return;
    }
    fprintf(stderr, "GGUFQ_ISA=%s is not an ISA name\n", want);
    _exit(1);
}

const char *tu_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", GGUFQ_TEST_DIR, rel);
    return buf;
}

void *tu_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long n = ftell(f);
    if (n < 0) { fclose(f); return NULL; }
    rewind(f);
    /* one byte more, a NUL after the contents, so text files can be searched as strings */
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    if (buf && size)
        *size = (size_t)n;
    return buf;
}

const char *tu_peer_dir(void)
{
    static char dir[4096];
    static int state = 0; /* 0 unknown, 1 found, -1 absent */
    if (state == 0) {
        const char *env = getenv("GGUFQ_PEER_DIR");
        snprintf(dir, sizeof dir, "%s", env && *env ? env : GGUFQ_PEER_DEFAULT);
        char lib[4200];
        snprintf(lib, sizeof lib, "%s/libggml-base.so", dir);
        state = access(lib, R_OK) == 0 ? 1 : -1;
        if (state < 0)
            fprintf(stderr, "SKIP: ggml peer library not found at %s "
                            "(run tools/fetch-peer, or set GGUFQ_PEER_DIR)\n", lib);
    }
    return state > 0 ? dir : NULL;
}

void *tu_peer_open(const char *lib)
{
    const char *dir = tu_peer_dir();
    if (!dir)
        return NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, lib);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        fprintf(stderr, "SKIP: cannot load %s: %s\n", path, dlerror());
    return h;
}

const pk_peer *tu_peer(void)
{
    static pk_peer peer;
    static int state = 0; /* 0 unknown, 1 open, -1 absent */
    if (state == 0) {
        const char *dir = tu_peer_dir();
        state = dir && pk_open(&peer, dir) ? 1 : -1;
    }
    return state > 0 ? &peer : NULL;
}

int64_t tu_first_byte_diff(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return (int64_t)i;
    return -1;
}

int64_t tu_first_float_diff(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return i;
    return -1;
}

void tu_expect_same_bytes(const void *got, const void *want, size_t n, const char *what)
{
    const int64_t i = tu_first_byte_diff(got, want, n);
    if (i >= 0)
        fail_msg("%s: byte %lld of %zu is 0x%02x, ggml has 0x%02x", what, (long long)i, n,
                 ((const uint8_t *)got)[i], ((const uint8_t *)want)[i]);
}

void tu_expect_same_floats(const float *got, const float *want, int64_t n, const char *what)
{
    const int64_t i = tu_first_float_diff(got, want, n);
    if (i >= 0) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        fail_msg("%s: float %lld of %lld is %.9g (0x%08x), ggml has %.9g (0x%08x)", what,
                 (long long)i, (long long)n, (double)got[i], a, (double)want[i], b);
    }
}

const char *tu_tmpdir(const char *test_name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/test-tmp/%s-%ld", GGUFQ_BUILD_DIR, test_name, (long)getpid());
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", buf, buf);
    if (system(cmd) != 0)
        fprintf(stderr, "tu_tmpdir: cannot create %s\n", buf);
    return buf;
}

int tu_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}
