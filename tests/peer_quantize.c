/*
 * peer_quantize.c — binding llama.cpp's llama_model_quantize (see peer_quantize.h).
 */
#include "peer_quantize.h"

#include <dlfcn.h>
#include <string.h>

_Static_assert(sizeof(peer_qparams) == 64, "llama_model_quantize_params of the peer is 64 bytes");
_Static_assert(sizeof(peer_kv_override) == 264, "llama_model_kv_override is 264 bytes");

typedef void (*log_fn)(int level, const char *text, void *user);
typedef void (*log_set_fn)(log_fn, void *);
typedef void (*init_fn)(void);

static void quiet_log(int level, const char *text, void *user) { (void)level; (void)text; (void)user; }

/* dlsym's object pointer as a function pointer (POSIX guarantees this works). */
static void *symbol(void *lib, const char *name) { return lib ? dlsym(lib, name) : NULL; }

bool peer_quantizer_bind(peer_quantizer *q, void *lib, bool quiet)
{
    memset(q, 0, sizeof *q);
    void *defaults = symbol(lib, "llama_model_quantize_default_params");
    void *quantize = symbol(lib, "llama_model_quantize");
    void *log_set = symbol(lib, "llama_log_set");
    void *backend_init = symbol(lib, "llama_backend_init");
    if (!defaults || !quantize || !log_set || !backend_init)
        return false;
    memcpy(&q->defaults, &defaults, sizeof defaults);
    memcpy(&q->quantize, &quantize, sizeof quantize);
    log_set_fn set;
    init_fn init;
    memcpy(&set, &log_set, sizeof set);
    memcpy(&init, &backend_init, sizeof init);
    if (quiet)
        set(quiet_log, NULL);
    init();
    return true;
}
