/*
 * dispatch.c — CPU feature detection and the one-time choice of kernels.
 *
 * Built for the baseline CPU: this file must never contain an instruction the
 * oldest supported CPU lacks, since it runs before we know what the CPU has.
 */
#if defined(__AVX__) || defined(__AVX2__) || defined(__AVX512F__)
#error "dispatch.c must be compiled for the baseline CPU (no -mavx*, no -march=native)"
#endif

#include "simd/dispatch.h"
#include "simd/simd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GQ_X86 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
#define GQ_ARM 1
#endif

static gq_cpu_features cpu_features;
static pthread_once_t  cpu_once = PTHREAD_ONCE_INIT;

#ifdef GQ_X86
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    /* xgetbv, spelled as bytes so no -mxsave is needed */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect_x86(gq_cpu_features *c)
{
    unsigned a, b, cx, d;
    c->x86 = true;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf == 0) /* some emulators report no leaves at all */
        return;
    __cpuid(1, a, b, cx, d);
    c->sse42 = (cx >> 20) & 1;
    c->fma   = (cx >> 12) & 1;
    c->f16c  = (cx >> 29) & 1;
    c->avx   = (cx >> 28) & 1;
    const bool osxsave = (cx >> 27) & 1;
    if (osxsave) {
        const uint64_t xcr0 = read_xcr0();
        c->os_avx    = (xcr0 & 0x6) == 0x6;
        c->os_avx512 = (xcr0 & 0xE6) == 0xE6;
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, cx, d);
        const unsigned max_subleaf = a;
        c->avx2       = (b >> 5) & 1;
        c->bmi2       = (b >> 8) & 1;
        c->avx512f    = (b >> 16) & 1;
        c->avx512dq   = (b >> 17) & 1;
        c->avx512bw   = (b >> 30) & 1;
        c->avx512vl   = (b >> 31) & 1;
        c->avx512vbmi = (cx >> 1) & 1;
        c->avx512vnni = (cx >> 11) & 1;
        if (max_subleaf >= 1) {
            unsigned a1, b1, c1, d1;
            __cpuid_count(7, 1, a1, b1, c1, d1);
            c->avx512bf16 = (a1 >> 5) & 1;
        }
    }
}
#endif

static void detect_cpu(void)
{
    gq_cpu_features *c = &cpu_features;
#ifdef GQ_X86
    detect_x86(c);
#elif defined(GQ_ARM)
    const unsigned long hw = getauxval(AT_HWCAP);
    c->arm = true;
    c->neon = (hw & HWCAP_ASIMD) != 0;
    c->fp16 = (hw & HWCAP_ASIMDHP) != 0 && (hw & HWCAP_FPHP) != 0;
    c->dotprod = (hw & HWCAP_ASIMDDP) != 0;
#endif
}

const gq_cpu_features *gq_cpu(void)
{
    pthread_once(&cpu_once, detect_cpu);
    return &cpu_features;
}

/* What each ISA's kernels need, and whether they were built in. */
static bool isa_runs_here(ggufq_isa isa)
{
    const gq_cpu_features *c = gq_cpu();
    switch (isa) {
    case GGUFQ_ISA_SCALAR:
        return true;
#ifdef GQ_X86
    case GGUFQ_ISA_AVX2:
        return c->os_avx && c->avx && c->avx2 && c->fma && c->f16c && c->bmi2;
    case GGUFQ_ISA_AVX512:
        return c->os_avx && c->os_avx512 && c->avx2 && c->fma && c->f16c && c->bmi2 &&
               c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq;
#endif
#ifdef GQ_ARM
    case GGUFQ_ISA_NEON:
        return c->neon;
#endif
    default:
        (void)c;
        return false;
    }
}

bool gq_row_applies(const gq_kernel_row *row, const gq_cpu_features *c)
{
    switch (row->needs) {
    case GQ_FEATURE_NONE:
        return true;
    case GQ_FEATURE_AVX512_BF16:
        return c->avx512bf16;
    default:   /* test_kernel_table: no row names another */
        return false;
    }
}

/* ------------------------------------------------------------------------- */
/* Kernel tables: per ISA, the scalar kernels with that ISA's rows on top.    */

typedef struct {
    gq_kernels k;
    ggufq_isa  isa[4];   /* whose code k.dequantize / quantize / dequantize_f16 / _bf16 is */
} dispatch_entry;

static dispatch_entry isa_tables[GGUFQ_ISA_NEON + 1][GGUFQ_TYPE_COUNT];

static const gq_isa_kernels *isa_kernels(ggufq_isa isa)
{
    switch (isa) {
#if defined(GQ_X86)
    case GGUFQ_ISA_AVX2:   return &gq_avx2_kernels;
    case GGUFQ_ISA_AVX512: return &gq_avx512_kernels;
#elif defined(GQ_ARM)
    case GGUFQ_ISA_NEON:   return &gq_neon_kernels;
#endif
    default:               return NULL;
    }
}

static void fill_isa_table(ggufq_isa isa)
{
    dispatch_entry *t = isa_tables[isa];
    for (int type = 0; type < GGUFQ_TYPE_COUNT; type++) {
        const gq_kernels *k = gq_scalar_kernels(type);
        if (k)
            t[type] = (dispatch_entry){ *k, { GGUFQ_ISA_SCALAR, GGUFQ_ISA_SCALAR,
                                              GGUFQ_ISA_SCALAR, GGUFQ_ISA_SCALAR } };
    }
    /* Only here, after isa_runs_here(isa) said the CPU can: prepare may run
     * code compiled with the ISA's flags. */
    const gq_isa_kernels *table = isa_kernels(isa);
    if (!table)
        return;
    if (table->prepare)
        table->prepare();
    for (int i = 0; i < table->n_rows; i++) {
        const gq_kernel_row *row = &table->rows[i];
        if (!gq_row_applies(row, gq_cpu()))
            continue;   /* a later row overrides an earlier one: the feature's row follows the plain one */
        dispatch_entry *e = &t[row->type];
        switch (row->op) {
        case GGUFQ_OP_DEQUANTIZE:
            e->k.dequantize = row->dequantize;
            e->isa[0] = row->isa;
            break;
        case GGUFQ_OP_QUANTIZE:
            e->k.quantize = row->quantize;
            e->isa[1] = row->isa;
            break;
        case GGUFQ_OP_DEQUANTIZE_F16:
            e->k.dequantize_f16 = row->half;
            e->isa[2] = row->isa;
            break;
        case GGUFQ_OP_DEQUANTIZE_BF16:
            e->k.dequantize_bf16 = row->half;
            e->isa[3] = row->isa;
            break;
        default:   /* test_kernel_table: no row has another op */
            break;
        }
    }
}

/* ------------------------------------------------------------------------- */
/* The choice                                                                 */

static _Atomic int active_isa = -1;  /* -1: not decided yet */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
/* What became of GGUFQ_ISA (set once, in decide_isa): the library never
 * prints, so a bad value is kept here for the caller (ggufq_isa_env_status). */
enum { ENV_SHOWN = 48 };   /* bytes of the value a message shows */
static int  env_status = GGUFQ_OK;
static char env_message[4 * ENV_SHOWN + 96];

static ggufq_isa best_isa(void)
{
    static const ggufq_isa order[] = { GGUFQ_ISA_AVX512, GGUFQ_ISA_AVX2, GGUFQ_ISA_NEON };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (isa_runs_here(order[i]))
            return order[i];
    return GGUFQ_ISA_SCALAR;
}

/* The variable's value for a message: at most ENV_SHOWN bytes, anything
 * but printable ASCII as \xNN (it may hold terminal escapes). */
static void quote_env(char *out, size_t cap, const char *env)
{
    size_t len = 0;
    for (const unsigned char *p = (const unsigned char *)env; *p && len + 5 < cap; p++) {
        if (p - (const unsigned char *)env == ENV_SHOWN) {
            memcpy(out + len, "...", 3);
            len += 3;
            break;
        }
        if (*p >= 0x20 && *p < 0x7F && *p != '\\')
            out[len++] = (char)*p;
        else
            len += (size_t)snprintf(out + len, cap - len, "\\x%02X", *p);
    }
    out[len] = '\0';
}

static void decide_isa(void)
{
    for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++)
        if (isa_runs_here((ggufq_isa)i))
            fill_isa_table((ggufq_isa)i);

    ggufq_isa isa = best_isa();
    const char *env = getenv("GGUFQ_ISA");
    if (env && *env) {
        int wanted = -1;
        for (int i = GGUFQ_ISA_SCALAR; i <= GGUFQ_ISA_NEON; i++)
            if (strcasecmp(env, ggufq_isa_name((ggufq_isa)i)) == 0)
                wanted = i;
        char value[4 * ENV_SHOWN + 8];
        quote_env(value, sizeof value, env);
        if (wanted < 0) {
            env_status = GGUFQ_E_INVALID_ARG;
            snprintf(env_message, sizeof env_message,
                     "GGUFQ_ISA=%s: not one of scalar, avx2, avx512, neon", value);
        } else if (!isa_runs_here((ggufq_isa)wanted)) {
            env_status = GGUFQ_E_ISA_UNSUPPORTED;
            snprintf(env_message, sizeof env_message,
                     "GGUFQ_ISA=%s: this CPU/OS cannot run it (or this build lacks it)", value);
        } else {
            isa = (ggufq_isa)wanted;
        }
    }
    atomic_store_explicit(&active_isa, (int)isa, memory_order_release);
}

int gq_isa_env_status(const char **message)
{
    pthread_once(&isa_once, decide_isa);
    if (message)
        *message = env_message;
    return env_status;
}

ggufq_isa ggufq_active_isa(void)
{
    pthread_once(&isa_once, decide_isa);
    return (ggufq_isa)atomic_load_explicit(&active_isa, memory_order_acquire);
}

bool ggufq_isa_supported(ggufq_isa isa)
{
    return isa_runs_here(isa);
}

int ggufq_use_isa(ggufq_isa isa)
{
    if ((int)isa < GGUFQ_ISA_SCALAR || isa > GGUFQ_ISA_NEON)
        return GGUFQ_E_INVALID_ARG;
    if (!isa_runs_here(isa))
        return GGUFQ_E_ISA_UNSUPPORTED;
    pthread_once(&isa_once, decide_isa);
    atomic_store_explicit(&active_isa, (int)isa, memory_order_release);
    return GGUFQ_OK;
}

const char *ggufq_isa_name(ggufq_isa isa)
{
    static const char *const names[] = { "scalar", "avx2", "avx512", "neon" };
    if ((int)isa < 0 || (int)isa > GGUFQ_ISA_NEON)
        return NULL;
    return names[isa];
}

const gq_kernels *gq_kernels_for_isa(ggufq_isa isa, int type)
{
    if ((int)isa < 0 || isa > GGUFQ_ISA_NEON || type < 0 || type >= GGUFQ_TYPE_COUNT)
        return NULL;
    pthread_once(&isa_once, decide_isa);
    if (!isa_runs_here(isa))
        return NULL;
    const gq_kernels *k = &isa_tables[isa][type].k;
    return k->dequantize ? k : NULL;
}

const char *gq_kernel_isa(int type, ggufq_kernel_op op)
{
    const ggufq_isa isa = ggufq_active_isa();
    const gq_kernels *k = gq_kernels_for_isa(isa, type);
    if (!k)
        return NULL;
    switch (op) {
    case GGUFQ_OP_DEQUANTIZE:
        return ggufq_isa_name(isa_tables[isa][type].isa[0]);
    case GGUFQ_OP_QUANTIZE:
    case GGUFQ_OP_QUANTIZE_IMATRIX:  /* a quantize kernel runs its imatrix path itself */
        return k->quantize ? ggufq_isa_name(isa_tables[isa][type].isa[1]) : NULL;
    case GGUFQ_OP_DEQUANTIZE_F16:
    case GGUFQ_OP_DEQUANTIZE_BF16: {
        /* a fused kernel, else the F32 decoder followed by the conversion */
        static const char *const staged[] = { "scalar+convert", "avx2+convert",
                                              "avx512+convert", "neon+convert" };
        const bool f16 = op == GGUFQ_OP_DEQUANTIZE_F16;
        if (f16 ? k->dequantize_f16 : k->dequantize_bf16)
            return ggufq_isa_name(isa_tables[isa][type].isa[f16 ? 2 : 3]);
        return staged[isa_tables[isa][type].isa[0]];
    }
    default:
        return NULL;
    }
}

const gq_kernels *gq_kernels_for(int type)
{
    return gq_kernels_for_isa(ggufq_active_isa(), type);
}

/* ------------------------------------------------------------------------- */
/* Description for `ggufq cpu`                                                */

static char cpu_text[512];
static pthread_once_t cpu_text_once = PTHREAD_ONCE_INIT;

static void describe_cpu(void)
{
    const gq_cpu_features *c = gq_cpu();
    const struct { bool on; const char *name; } f[] = {
        { c->x86, "x86-64" }, { c->arm, "aarch64" },
        { c->sse42, "sse4.2" }, { c->avx, "avx" }, { c->avx2, "avx2" }, { c->fma, "fma" },
        { c->f16c, "f16c" }, { c->bmi2, "bmi2" }, { c->avx512f, "avx512f" },
        { c->avx512bw, "avx512bw" }, { c->avx512vl, "avx512vl" }, { c->avx512dq, "avx512dq" },
        { c->avx512vnni, "avx512vnni" }, { c->avx512bf16, "avx512bf16" },
        { c->avx512vbmi, "avx512vbmi" }, { c->os_avx, "os-ymm-state" },
        { c->os_avx512, "os-zmm-state" }, { c->neon, "neon" }, { c->fp16, "fp16" },
        { c->dotprod, "dotprod" },
    };
    size_t len = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!f[i].on)
            continue;
        int n = snprintf(cpu_text + len, sizeof cpu_text - len, "%s%s", len ? " " : "", f[i].name);
        if (n < 0 || (size_t)n >= sizeof cpu_text - len)
            break;
        len += (size_t)n;
    }
}

const char *ggufq_cpu_features(void)
{
    pthread_once(&cpu_text_once, describe_cpu);
    return cpu_text;
}
