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

/* Print the help of a command (NULL: the program's) on stdout; CLI_EXIT_OK. */
int cli_help(const char *command);
/* "ggufq <command>: <message>" and the command's usage line on stderr; CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF_LIKE(2, 3);

/* True for "-h" and "--help". */
bool cli_is_help_option(const char *arg);

#endif
