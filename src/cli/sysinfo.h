/*
 * sysinfo.h — provenance of a measurement: the machine (CPU model, CPUs this
 * process may use), the build (ggufq version, git commit, build type,
 * compiler) and the ISA whose kernels run. `ggufq cpu` and `ggufq bench`
 * print it so that numbers can be traced to what produced them.
 */
#ifndef GGUFQ_CLI_SYSINFO_H
#define GGUFQ_CLI_SYSINFO_H

typedef struct cli_sysinfo {
    char        cpu_model[128];  /* /proc/cpuinfo "model name", else the cpuid brand string, else "unknown" */
    int         cpus_online;     /* sysconf(_SC_NPROCESSORS_ONLN) */
    int         cpus_usable;     /* CPUs in this process's affinity mask; 0: unknown */
    const char *compiler;        /* "gcc 13.2.0", "clang 17.0.6 ...": __VERSION__ of this build */
    const char *version;         /* ggufq_version() */
    const char *commit;          /* git commit at build time ("-dirty" when changed); "unknown" */
    const char *build_type;      /* CMake's build type (Release, Debug ...) */
    const char *isa;             /* the ISA in use now */
} cli_sysinfo;

void cli_sysinfo_get(cli_sysinfo *s);

/* Two lines, labels padded to 10 columns:
 *   machine:  <cpu model>, <n> CPUs online, <m> usable
 *   build:    ggufq <version>, commit <commit>, <build type>, <compiler>  */
void cli_sysinfo_print_text(void);

/* "provenance":{"cpu_model":...,"cpus_online":N,"cpus_usable":N,"compiler":...,
 * "version":...,"commit":...,"build_type":...,"isa":...} (no comma before it). */
void cli_sysinfo_print_json(void);

#endif
