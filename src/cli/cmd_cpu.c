/*
 * cmd_cpu.c — `ggufq cpu [--json]`: the CPU features the library detected,
 * which ISAs' kernels can run here, and the one in use.
 *
 * Also holds cli_check_isa_env(), run by main before every command, so that a
 * GGUFQ_ISA the CPU cannot run is an error rather than a silent fallback.
 */
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "json.h"

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

static void print_text(void)
{
    out_printf("features: %s\n", ggufq_cpu_features());
    out_puts("isa:\n");
    for (size_t i = 0; i < N_ISAS; i++) {
        const char *name = ggufq_isa_name(all_isas[i]);
        out_printf("  %-8s %s\n", name, ggufq_isa_supported(all_isas[i]) ? "yes" : "no");
    }
    out_printf("selected: %s\n", ggufq_isa_name(ggufq_active_isa()));
}

/* {"features":["x86-64",...],"isa":{"scalar":true,...},"selected":"avx2"} */
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
    out_printf("},\"selected\":\"%s\"}\n", ggufq_isa_name(ggufq_active_isa()));
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
