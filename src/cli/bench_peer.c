/*
 * bench_peer.c — the peer of `ggufq bench`: ggml's libggml-base.so, loaded
 * with dlopen when found, and its reference kernels for each type (looked up
 * by the tests' binding, tests/peer_kernels.c); and where the peer's
 * libraries are looked for (also by --requant, for libllama).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* readlink */
#endif

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define PEER_LIB         "libggml-base.so"
#define PEER_SUBDIR      "peer/package/bins/linux-x64"

/* dlsym's object pointer to a function pointer (POSIX guarantees this works). */
#define AS_FN(fn_type, obj) ((fn_type)(obj))

/* <dir of this program>/PEER_SUBDIR, where `make test` fetches the peer for the build dir. */
void bench_peer_dir(const char *given, char *buf, size_t size)
{
    const char *env = getenv("GGUFQ_PEER_DIR");
    if (given) {
        snprintf(buf, size, "%s", given);
        return;
    }
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(buf, size, "%s", PEER_SUBDIR);
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, size, "%s/%s", exe, PEER_SUBDIR);
}

bool bench_peer_open(peer *p, const bench_opts *o)
{
    memset(p, 0, sizeof *p);
    if (o->no_peer) {
        snprintf(p->why, sizeof p->why, "not timed (--no-peer)");
        return true;
    }
    char dir[PATH_MAX + 64];
    bench_peer_dir(o->peer_dir, dir, sizeof dir);
    snprintf(p->path, sizeof p->path, "%s/%s", dir, PEER_LIB);
    if (access(p->path, R_OK) != 0) {
        snprintf(p->why, sizeof p->why, "%s not found (--peer DIR or GGUFQ_PEER_DIR; 'make peer' fetches it)",
                 p->path);
    } else {
        p->lib = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
        if (!p->lib) {
            const char *e = dlerror();
            snprintf(p->why, sizeof p->why, "cannot load: %s", e ? e : p->path);
        }
    }
    if (!p->lib && o->peer_dir) {
        cli_error("bench: --peer %s: %s", o->peer_dir, p->why);
        return false;
    }
    if (p->lib) {
        p->quantize_init = AS_FN(peer_init_fn, dlsym(p->lib, "ggml_quantize_init"));
        p->quantize_free = AS_FN(peer_free_fn, dlsym(p->lib, "ggml_quantize_free"));
    }
    return true;
}

void bench_peer_resolve(const peer *p, ggufq_type type, peer_kernels *k)
{
    const pk_peer pk = { p->lib, p->quantize_init };
    if (!p->lib || !pk_kernels_resolve(&pk, type, k, true))
        memset(k, 0, sizeof *k);   /* none: the type is timed for ggufq alone */
}
