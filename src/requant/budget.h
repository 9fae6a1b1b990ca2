/*
 * budget.h — choose one type per tensor so the file fits a byte budget at the
 * lowest total error (the planner behind `requant auto`).
 *
 * The problem is a multiple-choice knapsack: tensor i takes exactly one of
 * its options (bytes b, error e); minimise the sum of e subject to the sum of
 * b <= budget. gq_budget_solve works on each tensor's lower convex hull of
 * (b, e) points and buys the upgrade steps in order of error removed per
 * byte — the exact optimum of the relaxation in which one tensor may be split
 * between two neighbouring hull points — then spends the bytes left over on
 * the best single-tensor switches. The result is feasible, deterministic
 * (no floating-point sums depend on order: every comparison is made on the
 * same two products), and comes with a lower bound no choice can beat, so the
 * distance to the true optimum is known (result.error - result.lower_bound).
 *
 * Errors are whatever the caller measures (requant auto: the imatrix-weighted
 * squared error of the whole tensor), finite and >= 0.
 */
#ifndef GGUFQ_REQUANT_BUDGET_H
#define GGUFQ_REQUANT_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

typedef struct gq_budget_option {
    uint64_t bytes;
    double   error;
} gq_budget_option;

/* A tensor's options; one option makes it a fixed point (a user rule, a tensor never quantized). */
typedef struct gq_budget_tensor {
    const gq_budget_option *options;
    size_t                  n_options;   /* >= 1 */
} gq_budget_tensor;

typedef struct gq_budget_result {
    uint64_t bytes;        /* total bytes of the choice */
    double   error;        /* total error of the choice */
    double   lower_bound;  /* no choice within the budget has a smaller total error */
    uint64_t min_bytes;    /* the smallest total any choice has */
    uint64_t max_bytes;    /* the total when every tensor takes its lowest-error option */
} gq_budget_result;

/*
 * Fill choice[i] (an index into t[i].options) for every tensor. Returns
 * GGUFQ_OK, or GGUFQ_E_INVALID_ARG (with a message in err) when an option's
 * error is not finite and >= 0, a tensor has no option, or the budget is
 * below the smallest possible total (result.min_bytes says how much is needed).
 * A budget at or above max_bytes gives every tensor its lowest-error option.
 * result is filled whenever the totals could be computed.
 */
int gq_budget_solve(const gq_budget_tensor *t, size_t n, uint64_t budget, size_t *choice,
                    gq_budget_result *result, ggufq_error *err);

#endif
