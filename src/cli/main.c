/*
 * main.c — the ggufq program: the table of subcommands, the program's help,
 * --version and the dispatch. Each command's help lives with its parser in
 * cmd_<name>.c (its cli_command record).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sigbus.h"

static const cli_command *const commands[] = {
    &cmd_info_command,
    &cmd_dequant_command,
    &cmd_requant_command,
    &cmd_diff_command,
    &cmd_stats_command,
    &cmd_types_command,
    &cmd_bench_command,
    &cmd_cpu_command,
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_program_help(void)
{
    out_puts(cli_program_usage);
    out_puts("\nInspect and convert GGUF files (ggml / llama.cpp).\n\nCommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        out_printf("  %-9s %s\n", commands[i]->name, commands[i]->summary);
    out_printf("  %-9s %s\n", "help", "Show the help of a command");
    out_puts("\nOptions:\n"
             "  --version   Print the version and exit\n"
             "  -h, --help  Show this help\n"
             "\nRun 'ggufq help COMMAND' or 'ggufq COMMAND --help' for a command's options.\n"
             "Exit status: 0 success, 1 invalid input or failure, 2 usage error,\n"
             "130 or 143 after SIGINT or SIGTERM (clean-up done).\n");
}

static int run_help(int argc, char **argv)
{
    if (argc == 1 || (argc == 2 && strcmp(argv[1], "help") == 0)) {
        print_program_help();
        return CLI_EXIT_OK;
    }
    if (argc > 2)
        return cli_usage_error(NULL, "help takes at most one command name");
    if (!cli_find_command(argv[1]))
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return cli_help(argv[1]);
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
    const cli_command *c = cli_find_command(name);
    if (!c) {
        if (name[0] == '-')
            return cli_usage_error(NULL, "unknown option '%s'", name);
        return cli_usage_error(NULL, "unknown command '%s'", name);
    }
    int rc = cli_check_isa_env();
    if (rc != CLI_EXIT_OK)
        return rc;
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    out_init();
    cli_register_commands(commands, N_COMMANDS);
    cli_sigbus_install();   /* an input truncated while mapped: an error, not a crash */
    int status = dispatch(argc, argv);
    return out_finish(status);
}
