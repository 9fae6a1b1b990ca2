/*
 * peer_kernels.c — binding to ggml's kernels in the peer library (see peer_kernels.h).
 */
#include "peer_kernels.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const pk_type pk_types[] = {
    { GGUFQ_TYPE_F16,     PK_VIA_F16_ROW,  PK_PLAIN },
    { GGUFQ_TYPE_BF16,    PK_VIA_BF16_ROW, PK_PLAIN },
    { GGUFQ_TYPE_Q4_0,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q4_1,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q5_0,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q5_1,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q8_0,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q8_1,    PK_VIA_ROW_REF,  PK_NO_IMATRIX | PK_NO_DEQUANT },
    { GGUFQ_TYPE_Q1_0,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q2_0,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q2_K,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q3_K,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q4_K,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q5_K,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q6_K,    PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_Q8_K,    PK_VIA_ROW_REF,  PK_NO_IMATRIX },
    { GGUFQ_TYPE_IQ2_XXS, PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW },
    { GGUFQ_TYPE_IQ2_XS,  PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW },
    { GGUFQ_TYPE_IQ2_S,   PK_VIA_CHUNK,    PK_SLOW },
    { GGUFQ_TYPE_IQ3_XXS, PK_VIA_CHUNK,    PK_SLOW },
    { GGUFQ_TYPE_IQ3_S,   PK_VIA_CHUNK,    PK_SLOW },
    { GGUFQ_TYPE_IQ1_S,   PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW },
    { GGUFQ_TYPE_IQ1_M,   PK_VIA_CHUNK,    PK_SLOW },
    { GGUFQ_TYPE_IQ4_NL,  PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_IQ4_XS,  PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_TQ1_0,   PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_TQ2_0,   PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_MXFP4,   PK_VIA_CHUNK,    0 },
    { GGUFQ_TYPE_NVFP4,   PK_VIA_CHUNK,    0 },
};
const size_t pk_n_types = sizeof pk_types / sizeof pk_types[0];

const pk_type *pk_type_of(ggufq_type type)
{
    for (size_t i = 0; i < pk_n_types; i++)
        if (pk_types[i].type == type)
            return &pk_types[i];
    return NULL;
}

bool pk_open(pk_peer *p, const char *dir)
{
    char path[4200];
    memset(p, 0, sizeof *p);
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (p->lib == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return false;
    }
    /* dlsym's object pointer to a function pointer: POSIX guarantees this works */
    *(void **)&p->quantize_init = dlsym(p->lib, "ggml_quantize_init");
    if (p->quantize_init == NULL) {
        fprintf(stderr, "%s lacks ggml_quantize_init\n", path);
        pk_close(p);
        return false;
    }
    return true;
}

void pk_close(pk_peer *p)
{
    if (p->lib != NULL)
        dlclose(p->lib);
    memset(p, 0, sizeof *p);
}

/* The symbol fmt % name; NULL (with a message if `required`) if absent. */
static void *peer_sym(const pk_peer *p, const char *fmt, const char *name, bool required)
{
    char sym[96];
    snprintf(sym, sizeof sym, fmt, name);
    void *f = dlsym(p->lib, sym);
    if (f == NULL && required)
        fprintf(stderr, "the peer lacks %s\n", sym);
    return f;
}

bool pk_kernels_of(const pk_peer *p, ggufq_type type, pk_kernels *k)
{
    memset(k, 0, sizeof *k);
    k->info = pk_type_of(type);
    if (k->info == NULL || p->lib == NULL) {
        fprintf(stderr, "no peer kernels for type %d\n", (int)type);
        return false;
    }
    const char *name = ggufq_type_name(type);
    switch (k->info->via) {
    case PK_VIA_F16_ROW:
        *(void **)&k->row = peer_sym(p, "%s", "ggml_fp32_to_fp16_row", true);
        *(void **)&k->dequant = peer_sym(p, "%s", "ggml_fp16_to_fp32_row", true);
        return k->row != NULL && k->dequant != NULL;
    case PK_VIA_BF16_ROW:
        *(void **)&k->row = peer_sym(p, "%s", "ggml_fp32_to_bf16_row_ref", true);
        *(void **)&k->dequant = peer_sym(p, "%s", "ggml_bf16_to_fp32_row", true);
        return k->row != NULL && k->dequant != NULL;
    case PK_VIA_CHUNK:
        *(void **)&k->chunk = peer_sym(p, "quantize_%s", name, true);
        if (k->chunk == NULL)
            return false;
        break;
    case PK_VIA_ROW_REF:
        break;
    }
    *(void **)&k->row = peer_sym(p, "quantize_row_%s_ref", name, k->info->via == PK_VIA_ROW_REF);
    if (k->row == NULL && k->info->via == PK_VIA_ROW_REF)
        return false;
    if (!(k->info->flags & PK_NO_DEQUANT)) {
        *(void **)&k->dequant = peer_sym(p, "dequantize_row_%s", name, true);
        if (k->dequant == NULL)
            return false;
    }
    if (k->info->via == PK_VIA_CHUNK)
        p->quantize_init((int)type);   /* IQ grids and search tables; a no-op for other types */
    return true;
}

void pk_quantize(const pk_kernels *k, const float *src, void *dst, int64_t nrows,
                 int64_t n_per_row, const float *imatrix)
{
    if (k->info->via == PK_VIA_CHUNK) {
        k->chunk(src, dst, nrows, n_per_row, imatrix);
        return;
    }
    const size_t row_bytes = ggufq_row_size(k->info->type, n_per_row);
    for (int64_t r = 0; r < nrows; r++)
        k->row(src + r * n_per_row, (uint8_t *)dst + r * row_bytes, n_per_row);
}
