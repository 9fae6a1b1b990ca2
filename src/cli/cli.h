/*
 * cli.h — the subcommands of the ggufq program and the help they share.
 */
#ifndef GGUFQ_CLI_H
#define GGUFQ_CLI_H

#include "cli_util.h"

/*
 * A subcommand: argv[0] is the command's name, the rest its arguments.
 * Returns the process exit status (CLI_EXIT_*). Output goes through out_*().
 */
int cmd_info(int argc, char **argv);
int cmd_dequant(int argc, char **argv);
int cmd_requant(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_cpu(int argc, char **argv);

/* The ISA named (case-insensitive: "scalar", "avx2", ...), or -1. */
int cli_parse_isa(const char *name);
/*
 * GGUFQ_ISA, if set, must name an ISA this CPU runs: otherwise an error on
 * stderr and CLI_EXIT_FAIL (the library alone would fall back to the best ISA).
 */
int cli_check_isa_env(void);

/* Print the help of a command (NULL: the program's) on stdout; CLI_EXIT_OK. */
int cli_help(const char *command);
/* "ggufq <command>: <message>" and the command's usage line on stderr; CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF_LIKE(2, 3);

/* True for "-h" and "--help". */
bool cli_is_help_option(const char *arg);

#endif
