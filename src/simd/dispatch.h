/*
 * dispatch.h — picks, once per process, the ISA whose kernels run.
 *
 * Each ISA's table (src/simd/kernels_<isa>.c, see simd.h) lists its kernels
 * by (type, operation); the others are the scalar kernels. The choice is
 * made once (pthread_once): GGUFQ_ISA from the environment if set, else the
 * best ISA the CPU and OS run.
 */
#ifndef GGUFQ_DISPATCH_H
#define GGUFQ_DISPATCH_H

#include <stdbool.h>

#include "ggufq.h"
#include "quants/quants.h"

/* Kernels to use for a type under the active ISA (scalar where no SIMD kernel); NULL if none. */
const gq_kernels *gq_kernels_for(int type);
/* The same for a given ISA; NULL if the ISA cannot run here. For tests and benchmarks. */
const gq_kernels *gq_kernels_for_isa(ggufq_isa isa, int type);

/* The ISA name ("scalar", "avx2", ...) whose code does op on type under the
 * active ISA; NULL if no kernel does (ggufq_kernel_isa). */
const char *gq_kernel_isa(int type, ggufq_kernel_op op);

/* CPU features as detected (for `ggufq cpu`). */
typedef struct gq_cpu_features {
    bool x86, arm;
    bool sse42, avx, avx2, fma, f16c, bmi2;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, avx512vbmi;
    bool os_avx, os_avx512;       /* XGETBV: the OS saves the YMM / ZMM state */
    bool neon, fp16, dotprod;     /* AArch64 */
} gq_cpu_features;

const gq_cpu_features *gq_cpu(void);

/* Whether a table row applies on a CPU with features c: a row that needs a
 * feature (gq_kernel_row.needs, simd.h) only where c has it. The one rule
 * dispatch uses; exposed for test_kernel_table. */
struct gq_kernel_row;
bool gq_row_applies(const struct gq_kernel_row *row, const gq_cpu_features *c);

/*
 * What became of the GGUFQ_ISA variable (ggufq_isa_env_status): GGUFQ_OK, or
 * GGUFQ_E_INVALID_ARG / GGUFQ_E_ISA_UNSUPPORTED with *message (if message is
 * not NULL) set to a static description; the best ISA is then in use.
 */
int gq_isa_env_status(const char **message);

#endif
