/*
 * cmd_cpu.c — `ggufq cpu [--json]`: the CPU features the library detected,
 * which ISAs' kernels can run here, and the one in use.
 *
 * First the provenance (sysinfo.h): CPU model, CPUs, build and compiler.
 */
#include <string.h>

#include "cli.h"
#include "json.h"
#include "sysinfo.h"

static const ggufq_isa all_isas[] = {
    GGUFQ_ISA_SCALAR, GGUFQ_ISA_AVX2, GGUFQ_ISA_AVX512, GGUFQ_ISA_NEON
};
#define N_ISAS (sizeof all_isas / sizeof all_isas[0])

static void print_text(void)
{
    cli_sysinfo_print_text();
    out_printf("features: %s\n", ggufq_cpu_features());
    out_puts("isa:\n");
    for (size_t i = 0; i < N_ISAS; i++) {
        const char *name = ggufq_isa_name(all_isas[i]);
        out_printf("  %-8s %s\n", name, ggufq_isa_supported(all_isas[i]) ? "yes" : "no");
    }
    out_printf("selected: %s\n", ggufq_isa_name(ggufq_active_isa()));
}

/* {"features":["x86-64",...],"isa":{"scalar":true,...},"selected":"avx2","provenance":{...}} */
static void print_json(void)
{
    const char *f = ggufq_cpu_features();
    out_puts("{\"features\":[");
    bool first = true;
    while (*f) {
        size_t n = strcspn(f, " ");
        if (n > 0) {
            if (!first)
                out_putc(',');
            json_write_string(f, n);
            first = false;
        }
        f += n;
        f += strspn(f, " ");
    }
    out_puts("],\"isa\":{");
    for (size_t i = 0; i < N_ISAS; i++) {
        const char *name = ggufq_isa_name(all_isas[i]);
        out_printf("%s\"%s\":%s", i ? "," : "", name,
                   ggufq_isa_supported(all_isas[i]) ? "true" : "false");
    }
    out_printf("},\"selected\":\"%s\",", ggufq_isa_name(ggufq_active_isa()));
    cli_sysinfo_print_json();
    out_puts("}\n");
}

int cmd_cpu(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (cli_is_help_option(argv[i]))
            return cli_help("cpu");
        else if (argv[i][0] == '-')
            return cli_usage_error("cpu", "unknown option '%s'", argv[i]);
        else
            return cli_usage_error("cpu", "unexpected argument '%s'", argv[i]);
    }
    if (json)
        print_json();
    else
        print_text();
    return CLI_EXIT_OK;
}

const cli_command cmd_cpu_command = {
    .name = "cpu",
    .summary = "Show the CPU's features and which kernels run",
    .usage = "usage: ggufq cpu [--json]",
    .help =
      "Print where results come from: the machine (CPU model, CPUs online and\n"
      "CPUs this process may run on) and the build (ggufq version, git commit,\n"
      "build type, compiler); then the CPU features the library detected, each\n"
      "instruction set with whether this CPU and OS can run its kernels, and the\n"
      "line 'selected: ISA' naming the kernels in use.\n"
      "\n"
      "GGUFQ_ISA=scalar|avx2|avx512|neon in the environment forces one ISA for\n"
      "every command; if the CPU cannot run it, every command fails (exit 1).\n"
      "\n"
      "Options:\n"
      "  --json      {\"features\": [...], \"isa\": {name: true|false, ...},\n"
      "               \"selected\": name, \"provenance\": {\"cpu_model\",\n"
      "               \"cpus_online\", \"cpus_usable\", \"compiler\", \"version\",\n"
      "               \"commit\", \"build_type\", \"isa\"}}\n"
      "  -h, --help  Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq cpu\n"
      "  GGUFQ_ISA=avx2 ggufq cpu\n"
      "  ggufq cpu --json | jq -r .provenance.commit\n",
    .run = cmd_cpu,
};
