/*
 * bench_peer.c — the peer of `ggufq bench`: ggml's libggml-base.so, loaded
 * with dlopen when found, and its reference kernels for each type; and where
 * the peer's libraries are looked for (also by --requant, for libllama).
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

static void *peer_sym(const peer *p, const char *fmt, const char *name)
{
    if (!p->lib)
        return NULL;
    char sym[96];
    snprintf(sym, sizeof sym, fmt, name);
    return dlsym(p->lib, sym);
}

void bench_peer_resolve(const peer *p, ggufq_type type, peer_kernels *k)
{
    memset(k, 0, sizeof *k);
    const char *name = ggufq_type_name(type);
    if (type == GGUFQ_TYPE_F16) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "%s", "ggml_fp16_to_fp32_row"));
        k->row = AS_FN(peer_row_fn, peer_sym(p, "%s", "ggml_fp32_to_fp16_row"));
    } else if (type == GGUFQ_TYPE_BF16) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "%s", "ggml_bf16_to_fp32_row"));
        k->row = AS_FN(peer_row_fn, peer_sym(p, "%s", "ggml_fp32_to_bf16_row_ref"));
    } else if (ggufq_type_is_quantized(type)) {
        k->dequant = AS_FN(peer_dequant_fn, peer_sym(p, "dequantize_row_%s", name));
        /* Q8_1 and Q8_K have no quantize_<t>: ggml quantizes them row by row. */
        if (type != GGUFQ_TYPE_Q8_1 && type != GGUFQ_TYPE_Q8_K)
            k->chunk = AS_FN(peer_chunk_fn, peer_sym(p, "quantize_%s", name));
        if (!k->chunk)
            k->row = AS_FN(peer_row_fn, peer_sym(p, "quantize_row_%s_ref", name));
    }
}
