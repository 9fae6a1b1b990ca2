/*
 * cli_help.c — a command's help and usage errors, found by the command's name
 * in the table main.c registers. Commands call these; main.c calls them too;
 * this file calls neither, so the dependencies point one way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char cli_program_usage[] = "usage: ggufq COMMAND [ARGS...]\n";

static const cli_command *const *registered;
static size_t n_registered;

void cli_register_commands(const cli_command *const *commands, size_t count)
{
    registered = commands;
    n_registered = count;
}

const cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; name && i < n_registered; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

int cli_help(const char *name)
{
    const cli_command *c = cli_find_command(name);
    if (!c)
        return CLI_EXIT_USAGE;
    out_printf("%s\n\n%s\n", c->usage, c->summary);
    if (c->help)
        out_printf("\n%s", c->help);
    return CLI_EXIT_OK;
}

int cli_usage_error(const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cli_command *c = cli_find_command(name);
    if (c) {
        fprintf(stderr, "ggufq %s: %s\n%s\nRun 'ggufq help %s' for more.\n", name, msg, c->usage, name);
    } else {
        fprintf(stderr, "ggufq: %s\n%sRun 'ggufq help' for the list of commands.\n", msg, cli_program_usage);
    }
    return CLI_EXIT_USAGE;
}

bool cli_is_help_option(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}
