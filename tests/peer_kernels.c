/*
 * peer_kernels.c — binding to ggml's kernels in the peer library (see peer_kernels.h).
 */
#include "peer_kernels.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define F16(off)   { PK_SCALE_F16, off }
#define F16_2(a, b) { F16(a), F16(b) }

const pk_type pk_types[] = {
    { GGUFQ_TYPE_F16,     PK_VIA_F16_ROW,  PK_PLAIN, { { 0 } } },
    { GGUFQ_TYPE_BF16,    PK_VIA_BF16_ROW, PK_PLAIN, { { 0 } } },
    { GGUFQ_TYPE_Q4_0,    PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_Q4_1,    PK_VIA_CHUNK,    0, F16_2(0, 2) },
    { GGUFQ_TYPE_Q5_0,    PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_Q5_1,    PK_VIA_CHUNK,    0, F16_2(0, 2) },
    { GGUFQ_TYPE_Q8_0,    PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_Q8_1,    PK_VIA_ROW_REF,  PK_NO_IMATRIX | PK_NO_DEQUANT, F16_2(0, 2) },
    { GGUFQ_TYPE_Q1_0,    PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_Q2_0,    PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_Q2_K,    PK_VIA_CHUNK,    0, F16_2(80, 82) },
    { GGUFQ_TYPE_Q3_K,    PK_VIA_CHUNK,    0, { F16(108) } },
    { GGUFQ_TYPE_Q4_K,    PK_VIA_CHUNK,    0, F16_2(0, 2) },
    { GGUFQ_TYPE_Q5_K,    PK_VIA_CHUNK,    0, F16_2(0, 2) },
    { GGUFQ_TYPE_Q6_K,    PK_VIA_CHUNK,    0, { F16(208) } },
    { GGUFQ_TYPE_Q8_K,    PK_VIA_ROW_REF,  PK_NO_IMATRIX, { { PK_SCALE_F32, 0 } } },
    { GGUFQ_TYPE_IQ2_XXS, PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ2_XS,  PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ2_S,   PK_VIA_CHUNK,    PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ3_XXS, PK_VIA_CHUNK,    PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ3_S,   PK_VIA_CHUNK,    PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ1_S,   PK_VIA_CHUNK,    PK_NEEDS_IMATRIX | PK_SLOW, { F16(0) } },
    { GGUFQ_TYPE_IQ1_M,   PK_VIA_CHUNK,    PK_SLOW, { { PK_SCALE_IQ1M, 48 } } },
    { GGUFQ_TYPE_IQ4_NL,  PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_IQ4_XS,  PK_VIA_CHUNK,    0, { F16(0) } },
    { GGUFQ_TYPE_TQ1_0,   PK_VIA_CHUNK,    0, { F16(52) } },
    { GGUFQ_TYPE_TQ2_0,   PK_VIA_CHUNK,    0, { F16(64) } },
    { GGUFQ_TYPE_MXFP4,   PK_VIA_CHUNK,    0, { { PK_SCALE_E8M0, 0 } } },
    { GGUFQ_TYPE_NVFP4,   PK_VIA_CHUNK,    0,
      { { PK_SCALE_UE4M3, 0 }, { PK_SCALE_UE4M3, 1 }, { PK_SCALE_UE4M3, 2 }, { PK_SCALE_UE4M3, 3 } } },
};
const size_t pk_n_types = sizeof pk_types / sizeof pk_types[0];

const pk_type *pk_type_of(ggufq_type type)
{
    for (size_t i = 0; i < pk_n_types; i++)
        if (pk_types[i].type == type)
            return &pk_types[i];
    return NULL;
}

/* The special values of each scale kind (see peer_kernels.h); NaNs first. */
static const uint32_t special_f16[] = {
    0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7D5A, 0xFEA5, 0x7FFF, 0xFFFF, /* NaN */
    0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x8001, 0x7BFF, 0xFBFF,
};
static const uint32_t special_f32[] = {
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FA5A5A5u, 0xFFD0C0B0u, 0x7FFFFFFFu,
    0xFFFFFFFFu, /* NaN */
    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x7F7FFFFFu,
    0xFF7FFFFFu,
};
static const uint32_t special_e8m0[] = { 0xFF, 0xFE, 0x00, 0x01, 0x7F, 0x80 };
static const uint32_t special_ue4m3[] = { 0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x01, 0x81 };

#define N_OF(a) (unsigned)(sizeof(a) / sizeof(a)[0])

static const uint32_t *specials_of(unsigned kind, unsigned *n)
{
    switch (kind) {
    case PK_SCALE_F16:
    case PK_SCALE_IQ1M:  *n = N_OF(special_f16);   return special_f16;
    case PK_SCALE_F32:   *n = N_OF(special_f32);   return special_f32;
    case PK_SCALE_E8M0:  *n = N_OF(special_e8m0);  return special_e8m0;
    case PK_SCALE_UE4M3: *n = N_OF(special_ue4m3); return special_ue4m3;
    default:             *n = 0;                   return NULL;
    }
}

unsigned pk_n_scales(const pk_type *t)
{
    unsigned n = 0;
    while (n < PK_MAX_SCALES && t->scales[n].kind != PK_SCALE_NONE)
        n++;
    return n;
}

unsigned pk_n_specials(const pk_type *t, unsigned field)
{
    unsigned n = 0;
    if (field < PK_MAX_SCALES)
        specials_of(t->scales[field].kind, &n);
    return n;
}

void pk_force_scale(const pk_type *t, unsigned field, unsigned which, uint8_t *block)
{
    unsigned n;
    if (field >= PK_MAX_SCALES)
        return;
    const uint32_t *values = specials_of(t->scales[field].kind, &n);
    if (which >= n)
        return;
    const uint32_t v = values[which];
    uint8_t *p = block + t->scales[field].offset;
    switch (t->scales[field].kind) {
    case PK_SCALE_F16:
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        break;
    case PK_SCALE_F32:
        for (int i = 0; i < 4; i++)
            p[i] = (uint8_t)(v >> 8 * i);
        break;
    case PK_SCALE_E8M0:
    case PK_SCALE_UE4M3:
        p[0] = (uint8_t)v;
        break;
    case PK_SCALE_IQ1M:
        /* nibble k of the half is the top nibble of little-endian u16 k */
        for (int k = 0; k < 4; k++)
            p[2 * k + 1] = (uint8_t)((p[2 * k + 1] & 0x0F) | ((v >> 4 * k) & 0xF) << 4);
        break;
    default:
        break;
    }
}

void pk_force_scales(const pk_type *t, uint64_t pick, uint8_t *block)
{
    const unsigned n = pk_n_scales(t);
    for (unsigned f = 0; f < n; f++)
        pk_force_scale(t, f, (unsigned)(pick >> 8 * f & 0xFF) % (pk_n_specials(t, f) + 2), block);
}

bool pk_block_has_inf_scale(const pk_type *t, const uint8_t *block)
{
    const unsigned n = pk_n_scales(t);
    for (unsigned f = 0; f < n; f++) {
        const uint8_t *p = block + t->scales[f].offset;
        uint32_t v = 0;
        switch (t->scales[f].kind) {
        case PK_SCALE_F16:
            v = (uint32_t)(p[0] | p[1] << 8);
            if ((v & 0x7FFF) == 0x7C00)
                return true;
            break;
        case PK_SCALE_IQ1M:
            for (int k = 0; k < 4; k++)
                v |= (uint32_t)(p[2 * k + 1] >> 4) << 4 * k;
            if ((v & 0x7FFF) == 0x7C00)
                return true;
            break;
        case PK_SCALE_F32:
            v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            if ((v & 0x7FFFFFFFu) == 0x7F800000u)
                return true;
            break;
        default:
            break;
        }
    }
    return false;
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

/* The symbol fmt % name; NULL (with a message if `required` and not `quiet`) if absent. */
static void *peer_sym_q(const pk_peer *p, const char *fmt, const char *name, bool required, bool quiet)
{
    char sym[96];
    snprintf(sym, sizeof sym, fmt, name);
    void *f = dlsym(p->lib, sym);
    if (f == NULL && required && !quiet)
        fprintf(stderr, "the peer lacks %s\n", sym);
    return f;
}

#define peer_sym(p, fmt, name, required) peer_sym_q(p, fmt, name, required, quiet)

bool pk_kernels_resolve(const pk_peer *p, ggufq_type type, pk_kernels *k, bool quiet)
{
    memset(k, 0, sizeof *k);
    k->info = pk_type_of(type);
    if (k->info == NULL || p->lib == NULL) {
        if (!quiet)
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
    return true;
}

#undef peer_sym

bool pk_kernels_of(const pk_peer *p, ggufq_type type, pk_kernels *k)
{
    if (!pk_kernels_resolve(p, type, k, false))
        return false;
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
