/*
 * cli.h — the subcommands of the ggufq program and the help they share.
 *
 * Each cmd_<name>.c exports one cli_command record: its name, summary, help
 * and run function, next to the parser the help describes. main.c holds only
 * the table of records, the program's own help and the dispatch; cli_help.c
 * finds a command's record by name (in the table main registers) for
 * cli_help() and cli_usage_error(), so that commands never call into main.c.
 */
#ifndef GGUFQ_CLI_H
#define GGUFQ_CLI_H

#include "cli_util.h"

/* A subcommand: argv[0] is the command's name, the rest its arguments.
 * Returns the process exit status (CLI_EXIT_*). Output goes through out_*(). */
typedef int (*cli_run_fn)(int argc, char **argv);

typedef struct cli_command {
    const char *name;
    const char *summary;   /* one line, in the program's list of commands */
    const char *usage;     /* "usage: ggufq NAME ...": the help's first line(s), and what a
                              usage error repeats */
    const char *help;      /* the rest: what it does, every option, then 2-4 examples */
    cli_run_fn  run;
} cli_command;

extern const cli_command cmd_info_command;
extern const cli_command cmd_dequant_command;
extern const cli_command cmd_requant_command;
extern const cli_command cmd_bench_command;
extern const cli_command cmd_types_command;
extern const cli_command cmd_diff_command;
extern const cli_command cmd_stats_command;
extern const cli_command cmd_cpu_command;

int cmd_info(int argc, char **argv);
int cmd_dequant(int argc, char **argv);
int cmd_requant(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_types(int argc, char **argv);
int cmd_cpu(int argc, char **argv);

/* ---- help and usage errors (cli_help.c) --------------------------------- */

/* The commands cli_find_command() knows; main registers its table once, first. */
void cli_register_commands(const cli_command *const *commands, size_t count);
/* The registered command of that name, or NULL. */
const cli_command *cli_find_command(const char *name);

/* Print a command's help on stdout (usage, summary, help); CLI_EXIT_OK.
 * CLI_EXIT_USAGE, printing nothing, if no command has that name. */
int cli_help(const char *command);
/* "ggufq <command>: <message>" and the command's usage on stderr
 * (command NULL or unknown: the program's usage); CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF_LIKE(2, 3);
/* The program's usage line. */
extern const char cli_program_usage[];

/* True for "-h" and "--help". */
bool cli_is_help_option(const char *arg);

/* ---- the machine and the build (sysinfo.c) ------------------------------ */

/* The ISA named (case-insensitive: "scalar", "avx2", ...), or -1. */
int cli_parse_isa(const char *name);
/*
 * GGUFQ_ISA, if set, must name an ISA this CPU runs: otherwise an error on
 * stderr and CLI_EXIT_FAIL (the library alone would fall back to the best ISA).
 */
int cli_check_isa_env(void);

#endif
