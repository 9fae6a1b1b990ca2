/*
 * sysinfo.c — the machine and the build a result comes from (sysinfo.h),
 * and the ISA helpers every command shares: cli_parse_isa, and
 * cli_check_isa_env, run by main before every command so that a GGUFQ_ISA
 * the CPU cannot run is an error rather than a silent fallback.
 *
 * The only file that includes the generated ggufq_build_info.h: a new
 * commit recompiles this file alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT_S */
#endif

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#  include <cpuid.h>
#endif

#include "cli.h"
#include "ggufq_build_info.h"
#include "json.h"
#include "sysinfo.h"

static const ggufq_isa all_isas[] = {
    GGUFQ_ISA_SCALAR, GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON
};
#define N_ISAS (sizeof all_isas / sizeof all_isas[0])

int cli_parse_isa(const char *name)
{
    for (size_t i = 0; i < N_ISAS; i++)
        if (strcasecmp(name, ggufq_isa_name(all_isas[i])) == 0)
            return (int)all_isas[i];
    return -1;
}

/*
 * The library falls back to the best ISA when GGUFQ_ISA is unusable (and
 * says so only through ggufq_isa_env_status); a user who asked for one ISA
 * must not get numbers or files from another without noticing.
 */
int cli_check_isa_env(void)
{
    ggufq_error err;
    if (ggufq_isa_env_status(&err) < 0) {
        cli_error("%s", err.message);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- */
/* Provenance                                                                */
/* ------------------------------------------------------------------------- */

#if defined(__clang__)
#  define COMPILER_TEXT "clang " __clang_version__
#elif defined(__GNUC__)
#  define COMPILER_TEXT "gcc " __VERSION__
#else
#  define COMPILER_TEXT "unknown"
#endif

/* Trim white space at both ends, in place; collapse runs of spaces (brand strings pad with them). */
static void tidy(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        const bool space = *r == ' ' || *r == '\t' || *r == '\n' || *r == '\r';
        if (space && (w == s || w[-1] == ' '))
            continue;
        *w++ = space ? ' ' : *r;
    }
    while (w > s && w[-1] == ' ')
        w--;
    *w = '\0';
}

/* The first "model name" of /proc/cpuinfo (x86; on most ARM kernels there is none). */
static bool cpu_model_from_proc(char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (colon) {
            snprintf(buf, size, "%s", colon + 1);
            tidy(buf);
            found = buf[0] != '\0';
        }
    }
    fclose(f);
    return found;
}

/* CPUID leaves 0x80000002..4: the 48-byte brand string. */
static bool cpu_model_from_cpuid(char *buf, size_t size)
{
#if defined(__x86_64__) || defined(__i386__)
    if ((unsigned int)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u)   /* int in clang, unsigned in gcc */
        return false;
    unsigned int regs[12];
    for (unsigned int i = 0; i < 3; i++)
        __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char brand[49];
    memcpy(brand, regs, 48);
    brand[48] = '\0';
    snprintf(buf, size, "%s", brand);
    tidy(buf);
    return buf[0] != '\0';
#else
    (void)buf;
    (void)size;
    return false;
#endif
}

/* CPUs in the affinity mask (what taskset or a container's cpuset leaves); 0 if unknown. */
static int usable_cpus(void)
{
    for (int n = 1024; n <= 1 << 16; n *= 4) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            return 0;
        const size_t bytes = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(bytes, set);
        int count = 0;
        if (sched_getaffinity(0, bytes, set) == 0)
            count = CPU_COUNT_S(bytes, set);
        CPU_FREE(set);
        if (count > 0)
            return count;
    }
    return 0;
}

void cli_sysinfo_get(cli_sysinfo *s)
{
    memset(s, 0, sizeof *s);
    if (!cpu_model_from_proc(s->cpu_model, sizeof s->cpu_model) &&
        !cpu_model_from_cpuid(s->cpu_model, sizeof s->cpu_model))
        snprintf(s->cpu_model, sizeof s->cpu_model, "unknown");
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    s->cpus_online = online > 0 ? (int)online : 0;
    s->cpus_usable = usable_cpus();
    s->compiler = COMPILER_TEXT;
    s->version = ggufq_version();
    s->commit = GGUFQ_GIT_COMMIT;
    s->build_type = GGUFQ_BUILD_TYPE[0] ? GGUFQ_BUILD_TYPE : "unknown";
    s->isa = ggufq_isa_name(ggufq_active_isa());
}

void cli_sysinfo_print_text(void)
{
    cli_sysinfo s;
    cli_sysinfo_get(&s);
    strbuf model = { 0 };
    cli_text_name(&model, s.cpu_model);   /* from the kernel: printed escaped, as any outside text */
    out_printf("machine:  %s, %d CPU%s online, ", sb_str(&model), s.cpus_online, s.cpus_online == 1 ? "" : "s");
    if (s.cpus_usable > 0)
        out_printf("%d usable\n", s.cpus_usable);
    else
        out_puts("usable unknown\n");
    out_printf("build:    ggufq %s, commit %s, %s, %s\n", s.version, s.commit, s.build_type, s.compiler);
    sb_free(&model);
}

static void json_member(const char *key, const char *value, bool comma)
{
    out_printf("%s\"%s\":", comma ? "," : "", key);
    json_write_string(value, strlen(value));
}

void cli_sysinfo_print_json(void)
{
    cli_sysinfo s;
    cli_sysinfo_get(&s);
    out_puts("\"provenance\":{");
    json_member("cpu_model", s.cpu_model, false);
    out_printf(",\"cpus_online\":%d,\"cpus_usable\":", s.cpus_online);
    if (s.cpus_usable > 0)
        out_printf("%d", s.cpus_usable);
    else
        out_puts("null");
    json_member("compiler", s.compiler, true);
    json_member("version", s.version, true);
    json_member("commit", s.commit, true);
    json_member("build_type", s.build_type, true);
    json_member("isa", s.isa, true);
    out_putc('}');
}
