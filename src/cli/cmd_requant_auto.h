/*
 * cmd_requant_auto.h — `ggufq requant IN auto OUT --target-size SIZE |
 * --target-bpw B`: the budget options (parsed among requant's) and the run.
 */
#ifndef GGUFQ_CLI_CMD_REQUANT_AUTO_H
#define GGUFQ_CLI_CMD_REQUANT_AUTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

typedef struct auto_args {
    const char *given;          /* the first budget option given (for "needs TYPE auto"); NULL: none */
    uint64_t    target_size;
    double      target_bpw;
    ggufq_type  cands[64];
    size_t      n_cands;
    const char *plan_out, *stats_cache;
} auto_args;

/* TYPE "auto" (any case). */
bool auto_is_target(const char *s);
/* One of the options below (they take a value). */
bool auto_takes_value(const char *opt);
int  auto_apply_value(auto_args *a, const char *opt, const char *val);
/* The budget run: o holds requant's other options (its target is ignored). */
int  cmd_requant_auto(const auto_args *a, const char *in, const char *out, const ggufq_requant_options *o,
                      bool quiet, int progress);

#endif
