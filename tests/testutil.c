/*
 * testutil.c — helpers shared by the test programs.
 */
#include "testutil.h"

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
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
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

uint64_t tu_rand_u64(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tu_rand_uniform(tu_rng *r)
{
    return (float)(tu_rand_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float tu_rand_gauss(tu_rng *r)
{
    double u1 = ((tu_rand_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (tu_rand_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
