/*
 * cmd_cpu.c — `ggufq cpu [--kernels] [--json]`: the CPU features the library
 * detected, which ISAs' kernels can run here, the one in use, and with
 * --kernels which ISA's code each (type, operation) runs (ggufq_kernel_isa).
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

static const struct { ggufq_kernel_op op; const char *name; } kernel_ops[] = {
    { GGUFQ_OP_DEQUANTIZE, "dequantize" },
    { GGUFQ_OP_QUANTIZE, "quantize" },
    { GGUFQ_OP_QUANTIZE_IMATRIX, "quantize_imatrix" },
    { GGUFQ_OP_DEQUANTIZE_F16, "dequantize_f16" },
    { GGUFQ_OP_DEQUANTIZE_BF16, "dequantize_bf16" },
};
#define N_KERNEL_OPS (sizeof kernel_ops / sizeof kernel_ops[0])

/* Every type the library knows, with the ISA of each operation's kernel ("-": none). */
static void print_kernels_text(void)
{
    out_printf("kernels (under %s; '-': not available):\n", ggufq_isa_name(ggufq_active_isa()));
    /* to_f16/to_bf16: ggufq_dequantize_to's fused kernel, or "<isa>+convert" */
    static const int width[N_KERNEL_OPS] = { 10, 10, 16, 14, 0 };
    out_printf("  %-8s %-10s %-10s %-16s %-14s %s\n", "type", "dequantize", "quantize",
               "quantize+imatrix", "to_f16", "to_bf16");
    for (int id = 0; id < GGUFQ_TYPE_COUNT; id++) {
        if (!ggufq_type_is_valid(id))
            continue;
        const char *name = ggufq_type_name((ggufq_type)id);
        out_printf("  %-8s", name);
        for (size_t k = 0; k < N_KERNEL_OPS; k++) {
            const char *isa = ggufq_kernel_isa((ggufq_type)id, kernel_ops[k].op);
            out_printf(" %-*s", width[k], isa ? isa : "-");
        }
        out_putc('\n');
    }
}

/* "kernels":{"q4_K":{"dequantize":"avx2","quantize":"avx512","quantize_imatrix":"avx512"},...} */
static void print_kernels_json(void)
{
    out_puts("\"kernels\":{");
    bool first = true;
    for (int id = 0; id < GGUFQ_TYPE_COUNT; id++) {
        if (!ggufq_type_is_valid(id))
            continue;
        const char *name = ggufq_type_name((ggufq_type)id);
        out_printf("%s\"%s\":{", first ? "" : ",", name);
        first = false;
        for (size_t k = 0; k < N_KERNEL_OPS; k++) {
            const char *isa = ggufq_kernel_isa((ggufq_type)id, kernel_ops[k].op);
            out_printf("%s\"%s\":", k ? "," : "", kernel_ops[k].name);
            if (isa)
                out_printf("\"%s\"", isa);
            else
                out_puts("null");
        }
        out_putc('}');
    }
    out_puts("},");
}

static void print_text(bool kernels)
{
    cli_sysinfo_print_text();
    out_printf("features: %s\n", ggufq_cpu_features());
    out_puts("isa:\n");
    for (size_t i = 0; i < N_ISAS; i++) {
        const char *name = ggufq_isa_name(all_isas[i]);
        out_printf("  %-8s %s\n", name, ggufq_isa_supported(all_isas[i]) ? "yes" : "no");
    }
    out_printf("selected: %s\n", ggufq_isa_name(ggufq_active_isa()));
    if (kernels)
        print_kernels_text();
}

/* {"features":["x86-64",...],"isa":{"scalar":true,...},"selected":"avx2","provenance":{...}} */
static void print_json(bool kernels)
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
    if (kernels)
        print_kernels_json();
    cli_sysinfo_print_json();
    out_puts("}\n");
}

int cmd_cpu(int argc, char **argv)
{
    bool json = false, kernels = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--kernels") == 0)
            kernels = true;
        else if (cli_is_help_option(argv[i]))
            return cli_help("cpu");
        else if (argv[i][0] == '-')
            return cli_usage_error("cpu", "unknown option '%s'", argv[i]);
        else
            return cli_usage_error("cpu", "unexpected argument '%s'", argv[i]);
    }
    if (json)
        print_json(kernels);
    else
        print_text(kernels);
    return CLI_EXIT_OK;
}

const cli_command cmd_cpu_command = {
    .name = "cpu",
    .summary = "Show the CPU's features and which kernels run",
    .usage = "usage: ggufq cpu [--kernels] [--json]",
    .help =
      "Print where results come from: the machine (CPU model, CPUs online and\n"
      "CPUs this process may run on) and the build (ggufq version, git commit,\n"
      "build type, compiler); then the CPU features the library detected, each\n"
      "instruction set with whether this CPU and OS can run its kernels, and the\n"
      "line 'selected: ISA' naming the kernels in use. With --kernels, a table:\n"
      "for every type, the ISA whose code dequantizes it, quantizes it, and\n"
      "quantizes it with an importance matrix (an AVX-512 run reuses AVX2\n"
      "kernels where those measured faster; 'scalar': no SIMD kernel; '-': the\n"
      "library cannot do it). src/simd/README.md explains the tables behind it.\n"
      "\n"
      "GGUFQ_ISA=scalar|avx2|avx512|neon in the environment forces one ISA for\n"
      "every command; if the CPU cannot run it, every command fails (exit 1).\n"
      "\n"
      "Options:\n"
      "  --kernels   Add the kernel coverage table\n"
      "  --json      {\"features\": [...], \"isa\": {name: true|false, ...},\n"
      "               \"selected\": name, with --kernels \"kernels\": {type:\n"
      "               {\"dequantize\", \"quantize\", \"quantize_imatrix\": ISA or\n"
      "               null}, ...}, \"provenance\": {\"cpu_model\",\n"
      "               \"cpus_online\", \"cpus_usable\", \"compiler\", \"version\",\n"
      "               \"commit\", \"build_type\", \"isa\"}}\n"
      "  -h, --help  Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq cpu\n"
      "  GGUFQ_ISA=avx2 ggufq cpu --kernels\n"
      "  ggufq cpu --json | jq -r .provenance.commit\n",
    .run = cmd_cpu,
};
