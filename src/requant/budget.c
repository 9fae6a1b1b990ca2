/*
 * budget.c — the budget planner: one option per tensor, lowest total error
 * within a byte budget (see budget.h for the method and its guarantee).
 */
#include "requant/budget.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "requant/requant_internal.h"

/* One upgrade step: tensor `tensor` moves from hull point `from` to from + 1. */
typedef struct hull_step {
    size_t   tensor, from;
    uint64_t bytes;    /* bytes it costs, > 0 */
    double   gain;     /* error it removes, > 0 */
} hull_step;

/*
 * a removes more error per byte than b: a.gain / a.bytes > b.gain / b.bytes,
 * compared as products (bytes > 0). Each product is its own statement so no
 * compiler contracts the comparison into a fused multiply-add: the order must
 * be the same on every machine.
 */
static int compare_steps(const void *pa, const void *pb)
{
    const hull_step *a = pa, *b = pb;
    double left = a->gain * (double)b->bytes;
    double right = b->gain * (double)a->bytes;
    if (left != right)
        return left > right ? -1 : 1;
    if (a->tensor != b->tensor)
        return a->tensor < b->tensor ? -1 : 1;
    return a->from < b->from ? -1 : (a->from > b->from);
}

/* An option and its index, so sorting needs no global (the library is thread-safe). */
typedef struct indexed_option {
    gq_budget_option option;
    size_t           index;
} indexed_option;

/* By bytes, then error, then index: a total order. */
static int compare_options(const void *pa, const void *pb)
{
    const indexed_option *a = pa, *b = pb;
    if (a->option.bytes != b->option.bytes)
        return a->option.bytes < b->option.bytes ? -1 : 1;
    if (a->option.error != b->option.error)
        return a->option.error < b->option.error ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

/* The middle point m lies on or above the segment from p to q (p, m, q by bytes). */
static bool not_below_chord(const gq_budget_option *p, const gq_budget_option *m,
                            const gq_budget_option *q)
{
    double left = (p->error - m->error) * (double)(q->bytes - m->bytes);
    double right = (m->error - q->error) * (double)(m->bytes - p->bytes);
    return left <= right;
}

/*
 * The tensor's lower convex hull, cheapest first, as option indices into
 * hull (n_options entries of room): the options no mix of two others beats.
 * order is scratch of the same size. Returns the hull's length (>= 1).
 */
static size_t build_hull(const gq_budget_tensor *t, indexed_option *order, size_t *hull)
{
    for (size_t j = 0; j < t->n_options; j++)
        order[j] = (indexed_option){ t->options[j], j };
    qsort(order, t->n_options, sizeof *order, compare_options);
    size_t n = 0;
    for (size_t j = 0; j < t->n_options; j++) {
        const gq_budget_option *o = &t->options[order[j].index];
        if (n > 0 && o->error >= t->options[hull[n - 1]].error)
            continue;   /* costs as much or more and is no better */
        while (n >= 2 && not_below_chord(&t->options[hull[n - 2]], &t->options[hull[n - 1]], o))
            n--;
        hull[n++] = order[j].index;
    }
    return n;
}

static double total_error(const gq_budget_tensor *t, size_t n, const size_t *choice)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += t[i].options[choice[i]].error;
    return sum;
}

/*
 * Spend what is left on single-tensor switches to any option (hull or not),
 * the largest error reduction first, until none fits.
 */
static void fill_leftover(const gq_budget_tensor *t, size_t n, size_t *choice, uint64_t *left)
{
    for (;;) {
        size_t best_i = n, best_j = 0;
        double best_gain = 0.0;
        for (size_t i = 0; i < n; i++) {
            const gq_budget_option *cur = &t[i].options[choice[i]];
            for (size_t j = 0; j < t[i].n_options; j++) {
                const gq_budget_option *o = &t[i].options[j];
                if (o->error >= cur->error || (o->bytes > cur->bytes && o->bytes - cur->bytes > *left))
                    continue;
                double gain = cur->error - o->error;
                if (gain > best_gain) {
                    best_gain = gain;
                    best_i = i;
                    best_j = j;
                }
            }
        }
        if (best_i == n)
            return;
        const gq_budget_option *cur = &t[best_i].options[choice[best_i]];
        const gq_budget_option *o = &t[best_i].options[best_j];
        *left = o->bytes >= cur->bytes ? *left - (o->bytes - cur->bytes) : *left + (cur->bytes - o->bytes);
        choice[best_i] = best_j;
    }
}

static int check_input(const gq_budget_tensor *t, size_t n, size_t *max_options, ggufq_error *err)
{
    *max_options = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].n_options == 0 || !t[i].options)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "budget: tensor %zu has no option", i);
        for (size_t j = 0; j < t[i].n_options; j++)
            if (!isfinite(t[i].options[j].error) || t[i].options[j].error < 0)
                return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                                  "budget: tensor %zu option %zu: error %g is not finite and >= 0",
                                  i, j, t[i].options[j].error);
        if (t[i].n_options > *max_options)
            *max_options = t[i].n_options;
    }
    return GGUFQ_OK;
}

/* Build every hull (hulls[i] has t[i].n_options room) and the list of upgrade steps. */
static size_t build_steps(const gq_budget_tensor *t, size_t n, size_t **hulls, indexed_option *scratch,
                          hull_step *steps)
{
    size_t n_steps = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = build_hull(&t[i], scratch, hulls[i]);
        for (size_t k = 0; k + 1 < len; k++) {
            const gq_budget_option *a = &t[i].options[hulls[i][k]], *b = &t[i].options[hulls[i][k + 1]];
            steps[n_steps++] = (hull_step){ i, k, b->bytes - a->bytes, a->error - b->error };
        }
    }
    return n_steps;
}

/* Sums of bytes over the cheapest and the best hull points; false on overflow. */
static bool hull_totals(const gq_budget_tensor *t, size_t n, size_t **hulls, const hull_step *steps,
                        size_t n_steps, gq_budget_result *r)
{
    r->min_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = t[i].options[hulls[i][0]].bytes;
        if (r->min_bytes + b < b)
            return false;
        r->min_bytes += b;
    }
    r->max_bytes = r->min_bytes;
    for (size_t s = 0; s < n_steps; s++) {
        if (r->max_bytes + steps[s].bytes < steps[s].bytes)
            return false;
        r->max_bytes += steps[s].bytes;
    }
    return true;
}

/* Buy steps best first; a step that does not fit blocks its tensor. Returns the LP bound. */
static double buy_steps(const gq_budget_tensor *t, size_t n, size_t **hulls, const hull_step *steps,
                        size_t n_steps, size_t *position, bool *blocked, uint64_t *left)
{
    double error = 0.0;
    for (size_t i = 0; i < n; i++)
        error += t[i].options[hulls[i][0]].error;
    bool bounded = false;
    double bound = 0.0;
    for (size_t s = 0; s < n_steps; s++) {
        const hull_step *st = &steps[s];
        if (blocked[st->tensor])
            continue;
        if (st->bytes <= *left) {
            *left -= st->bytes;
            position[st->tensor]++;
            error -= st->gain;
            continue;
        }
        if (!bounded) {   /* the relaxation takes the fraction that fits of this step, then stops */
            double fraction = (double)*left / (double)st->bytes;
            bound = error - fraction * st->gain;
            bounded = true;
        }
        blocked[st->tensor] = true;
    }
    return bounded ? bound : error;
}

/* ------------------------------------------------------------------------- */
/* Branch and bound: the proof of optimality on small and medium instances    */
/* ------------------------------------------------------------------------- */

/* Work allowed to the search, in step visits of the bound: about 0.1 s. */
#define SEARCH_WORK 20000000u

typedef struct search {
    const gq_budget_tensor *t;
    size_t           n;
    const hull_step *steps;          /* all hull steps, best gain per byte first */
    size_t           n_steps;
    const size_t    *order;          /* tensors in branching order */
    const size_t    *depth_of;       /* each tensor's place in order */
    const uint64_t  *suffix_bytes;   /* cheapest bytes of order[d..n) */
    const double    *suffix_error;   /* their errors (the bound's starting point) */
    size_t         **front;          /* per tensor: options no other beats, lowest error first */
    const size_t    *front_len;
    uint64_t         budget;
    size_t          *current, *best;
    double           best_error;
    uint64_t         nodes, node_limit;
    bool             complete;
} search;

/* The relaxation's optimum for tensors order[d..n) within `left` bytes: no choice of them is below it. */
static double relaxed_bound(const search *s, size_t d, uint64_t left)
{
    double error = s->suffix_error[d];
    left -= s->suffix_bytes[d];
    for (size_t k = 0; k < s->n_steps; k++) {
        const hull_step *st = &s->steps[k];
        if (s->depth_of[st->tensor] < d)
            continue;
        if (st->bytes > left)
            return error - ((double)left / (double)st->bytes) * st->gain;
        left -= st->bytes;
        error -= st->gain;
    }
    return error;
}

static void branch(search *s, size_t d, uint64_t used, double error)
{
    if (++s->nodes > s->node_limit) {
        s->complete = false;
        return;
    }
    if (d == s->n) {
        if (error < s->best_error) {
            s->best_error = error;
            memcpy(s->best, s->current, s->n * sizeof *s->best);
        }
        return;
    }
    uint64_t left = s->budget - used;
    if (s->suffix_bytes[d] > left || error + relaxed_bound(s, d, left) >= s->best_error)
        return;
    size_t i = s->order[d];
    for (size_t k = 0; k < s->front_len[i] && s->complete; k++) {
        const gq_budget_option *o = &s->t[i].options[s->front[i][k]];
        if (o->bytes > left)
            continue;
        s->current[i] = s->front[i][k];
        branch(s, d + 1, used + o->bytes, error + o->error);
    }
}

/* The options no other beats (less or equal bytes and less error), lowest error first. */
static size_t build_front(const gq_budget_tensor *t, indexed_option *order, size_t *front)
{
    for (size_t j = 0; j < t->n_options; j++)
        order[j] = (indexed_option){ t->options[j], j };
    qsort(order, t->n_options, sizeof *order, compare_options);
    size_t n = 0;
    for (size_t j = 0; j < t->n_options; j++)
        if (n == 0 || order[j].option.error < t->options[front[n - 1]].error)
            front[n++] = order[j].index;
    for (size_t a = 0, b = n - 1; a < b; a++, b--) {
        size_t tmp = front[a];
        front[a] = front[b];
        front[b] = tmp;
    }
    return n;
}

typedef struct tensor_span {
    double span;     /* error of its cheapest option minus its lowest error */
    size_t index;
} tensor_span;

/* Tensors whose options span the most error first: they decide the most. */
static int compare_span(const void *pa, const void *pb)
{
    const tensor_span *a = pa, *b = pb;
    if (a->span != b->span)
        return a->span > b->span ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

/*
 * Search every choice the relaxation cannot rule out, starting from the
 * greedy choice as the one to beat. When the search finishes within its work
 * allowance the best choice found is the optimum (result->lower_bound becomes
 * its error); otherwise the better of the two is kept with the relaxation's bound.
 */
static int search_optimum(const gq_budget_tensor *t, size_t n, const hull_step *steps, size_t n_steps,
                          uint64_t budget, size_t *choice, gq_budget_result *result,
                          indexed_option *scratch, size_t total_options)
{
    uint64_t limit = SEARCH_WORK / (n_steps + n + 1);
    if (n == 0 || n > 4096 || limit < 4 * (uint64_t)n)
        return GGUFQ_OK;   /* too large to prove: the greedy choice and its bound stand */
    search s = { .t = t, .n = n, .steps = steps, .n_steps = n_steps, .budget = budget,
                 .node_limit = limit, .complete = true, .best_error = result->error };
    size_t *sizes = malloc((5 * n + total_options) * sizeof *sizes);
    size_t **front = malloc(n * sizeof *front);
    tensor_span *spans = malloc(n * sizeof *spans);
    uint64_t *suffix_bytes = malloc((n + 1) * sizeof *suffix_bytes);
    double *suffix_error = malloc((n + 1) * sizeof *suffix_error);
    if (!sizes || !front || !spans || !suffix_bytes || !suffix_error) {
        free(sizes), free(front), free(spans), free(suffix_bytes), free(suffix_error);
        return GGUFQ_E_NOMEM;
    }
    size_t *front_len = sizes, *order = sizes + n, *depth_of = sizes + 2 * n;
    s.current = sizes + 3 * n;
    s.best = sizes + 4 * n;   /* n entries; the fronts follow */
    size_t *front_space = s.best + n;
    for (size_t i = 0, at = 0; i < n; i++) {
        front[i] = front_space + at;
        at += t[i].n_options;
        front_len[i] = build_front(&t[i], scratch, front[i]);
        const gq_budget_option *cheapest = &t[i].options[front[i][front_len[i] - 1]];
        spans[i] = (tensor_span){ cheapest->error - t[i].options[front[i][0]].error, i };
    }
    qsort(spans, n, sizeof *spans, compare_span);
    suffix_bytes[n] = 0;
    suffix_error[n] = 0.0;
    for (size_t d = n; d-- > 0;) {
        size_t i = order[d] = spans[d].index;
        depth_of[i] = d;
        const gq_budget_option *cheapest = &t[i].options[front[i][front_len[i] - 1]];
        suffix_bytes[d] = suffix_bytes[d + 1] + cheapest->bytes;
        suffix_error[d] = suffix_error[d + 1] + cheapest->error;
    }
    memcpy(s.best, choice, n * sizeof *choice);
    s.order = order;
    s.depth_of = depth_of;
    s.suffix_bytes = suffix_bytes;
    s.suffix_error = suffix_error;
    s.front = front;
    s.front_len = front_len;
    branch(&s, 0, 0, 0.0);
    double error = total_error(t, n, s.best);
    if (error < result->error) {
        memcpy(choice, s.best, n * sizeof *choice);
        result->error = error;
    }
    if (s.complete)
        result->lower_bound = result->error;
    free(sizes), free(front), free(spans), free(suffix_bytes), free(suffix_error);
    return GGUFQ_OK;
}

int gq_budget_solve(const gq_budget_tensor *t, size_t n, uint64_t budget, size_t *choice,
                    gq_budget_result *result, ggufq_error *err)
{
    if ((n && (!t || !choice)) || !result)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "budget: NULL argument");
    *result = (gq_budget_result){ 0 };
    size_t max_options, total_options = 0;
    int st = check_input(t, n, &max_options, err);
    if (st != GGUFQ_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        total_options += t[i].n_options;

    size_t *hull_space = malloc((total_options + 1) * sizeof *hull_space);
    indexed_option *scratch = malloc((max_options + 1) * sizeof *scratch);
    size_t **hulls = malloc((n + 1) * sizeof *hulls);
    size_t *position = calloc(n + 1, sizeof *position);
    bool *blocked = calloc(n + 1, sizeof *blocked);
    hull_step *steps = malloc((total_options + 1) * sizeof *steps);
    if (!hull_space || !scratch || !hulls || !position || !blocked || !steps) {
        st = gq_rq_fail(err, GGUFQ_E_NOMEM, "budget: out of memory for %zu tensors", n);
        goto done;
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        hulls[i] = hull_space + used;
        used += t[i].n_options;
    }
    size_t n_steps = build_steps(t, n, hulls, scratch, steps);
    if (!hull_totals(t, n, hulls, steps, n_steps, result)) {
        st = gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "budget: the tensors' sizes overflow 64 bits");
        goto done;
    }
    if (budget < result->min_bytes) {
        st = gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                        "budget of %llu bytes is below the smallest possible file: %llu bytes of tensor data",
                        (unsigned long long)budget, (unsigned long long)result->min_bytes);
        goto done;
    }
    qsort(steps, n_steps, sizeof *steps, compare_steps);
    uint64_t left = budget - result->min_bytes;
    result->lower_bound = buy_steps(t, n, hulls, steps, n_steps, position, blocked, &left);
    for (size_t i = 0; i < n; i++)
        choice[i] = hulls[i][position[i]];
    fill_leftover(t, n, choice, &left);
    result->error = total_error(t, n, choice);
    st = search_optimum(t, n, steps, n_steps, budget, choice, result, scratch, total_options);
    if (st != GGUFQ_OK) {
        st = gq_rq_fail(err, st, "budget: out of memory for %zu tensors", n);
        goto done;
    }
    result->bytes = 0;
    for (size_t i = 0; i < n; i++)
        result->bytes += t[i].options[choice[i]].bytes;
    if (result->lower_bound > result->error)   /* summation order only: the choice is exact */
        result->lower_bound = result->error;
done:
    free(hull_space);
    free(scratch);
    free(hulls);
    free(position);
    free(blocked);
    free(steps);
    return st;
}
