/*
 * main.c — the ggufq program: subcommand dispatch, help and --version.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);   /* NULL: not yet available */
    const char *summary;
    const char *usage;                   /* first line(s) of the help */
    const char *details;                 /* rest of the help, or NULL */
} command;

static const command commands[] = {
    { "info", cmd_info,
      "Show a GGUF file's header, metadata and tensors",
      "usage: ggufq info [--json] FILE",
      "Print the header (version, alignment, data offset, file size, key and\n"
      "tensor counts), one line per metadata key (type and value; long strings\n"
      "and arrays abbreviated) and a table of the tensors with totals.\n"
      "\n"
      "Options:\n"
      "  --json      Print one compact JSON object on a single line instead:\n"
      "              {\"version\", \"alignment\", \"kv_count\", \"tensor_count\",\n"
      "               \"metadata\": {key: value, ...} in file order,\n"
      "               \"tensors\": [{\"name\", \"type\", \"shape\", \"offset\", \"size\"}, ...]}\n"
      "              \"offset\" is relative to the start of the data section.\n"
      "              Arrays are printed in full. Integers are exact (uint64\n"
      "              included); floats use the shortest decimal that reads back\n"
      "              as the same float32/float64 (-0.0 for negative zero); NaN\n"
      "              and infinities are null. Strings are UTF-8 with control\n"
      "              characters escaped; each invalid UTF-8 sequence (maximal\n"
      "              subpart, as Unicode and Python define it) becomes \\ufffd.\n"
      "  -h, --help  Show this help\n" },
    { "dequant", cmd_dequant,
      "Convert every tensor to f32, f16 or bf16",
      "usage: ggufq dequant IN OUT [--to f32|f16|bf16] [--threads N]",
      "Write OUT, a copy of the GGUF file IN with every tensor decoded to F32\n"
      "(bit for bit as ggml's reference kernels) and, for f16 and bf16, encoded\n"
      "again as that type. Tensors already of the target type are copied as they\n"
      "are. Metadata is copied in order; general.file_type is set to llama.cpp's\n"
      "file type (f32: 0, f16: 1, bf16: 32); the alignment is kept.\n"
      "OUT is written to a temporary file renamed into place at the end: on any\n"
      "failure OUT is left untouched. OUT may not be IN.\n"
      "\n"
      "Options:\n"
      "  --to TYPE      Target type: f32 (default), f16 or bf16\n"
      "  --threads N    Worker threads (default 1)\n"
      "  -h, --help     Show this help\n" },
    { "requant", NULL, "Re-quantize a GGUF file (not yet available)", "usage: ggufq requant ...", NULL },
    { "bench",   NULL, "Benchmark the kernels (not yet available)", "usage: ggufq bench ...", NULL },
    { "cpu",     NULL, "Show the CPU's instruction sets (not yet available)", "usage: ggufq cpu", NULL },
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static const char program_usage[] = "usage: ggufq COMMAND [ARGS...]\n";

static void print_program_help(void)
{
    out_puts(program_usage);
    out_puts("\nInspect and convert GGUF files (ggml / llama.cpp).\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (commands[i].run) {
            out_printf("  %-9s %s\n", commands[i].name, commands[i].summary);
        }
    }
    out_printf("  %-9s %s\n", "help", "Show the help of a command");
    out_puts("\nNot yet available:");
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!commands[i].run)
            out_printf(" %s", commands[i].name);
    out_puts("\n\nOptions:\n"
             "  --version   Print the version and exit\n"
             "  -h, --help  Show this help\n"
             "\nRun 'ggufq help COMMAND' or 'ggufq COMMAND --help' for a command's options.\n"
             "Exit status: 0 success, 1 invalid input or failure, 2 usage error.\n");
}

int cli_help(const char *name)
{
    if (!name) {
        print_program_help();
        return CLI_EXIT_OK;
    }
    const command *c = find_command(name);
    if (!c)
        return CLI_EXIT_USAGE;
    out_printf("%s\n\n%s\n", c->usage, c->summary);
    if (c->details)
        out_printf("\n%s", c->details);
    return CLI_EXIT_OK;
}

int cli_usage_error(const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const command *c = name ? find_command(name) : NULL;
    if (c) {
        fprintf(stderr, "ggufq %s: %s\n%s\nRun 'ggufq help %s' for more.\n", name, msg, c->usage, name);
    } else {
        fprintf(stderr, "ggufq: %s\n%sRun 'ggufq help' for the list of commands.\n", msg, program_usage);
    }
    return CLI_EXIT_USAGE;
}

bool cli_is_help_option(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

static int run_help(int argc, char **argv)
{
    if (argc == 1)
        return cli_help(NULL);
    if (argc > 2)
        return cli_usage_error(NULL, "help takes at most one command name");
    if (!find_command(argv[1]) && strcmp(argv[1], "help") != 0)
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return cli_help(strcmp(argv[1], "help") == 0 ? NULL : argv[1]);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error(NULL, "no command given");
    const char *name = argv[1];
    if (strcmp(name, "--version") == 0) {
        if (argc > 2)
            return cli_usage_error(NULL, "--version takes no arguments");
        out_printf("ggufq %s\n", ggufq_version());
        return CLI_EXIT_OK;
    }
    if (cli_is_help_option(name) || strcmp(name, "help") == 0)
        return run_help(argc - 1, argv + 1);
    const command *c = find_command(name);
    if (!c) {
        if (name[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s'", name);
        return cli_usage_error(NULL, "unknown command '%s'", name);
    }
    if (!c->run) {
        cli_error("%s: not yet available in this version", name);
        return CLI_EXIT_FAIL;
    }
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    out_init();
    int status = dispatch(argc, argv);
    return out_finish(status);
}
