/*
 * test_budget.c — the budget planner (src/requant/budget.c) against brute
 * force on small instances, and its exact arithmetic at the edges.
 */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/budget.h"
#include "tu_rng.h"

#define MAX_T 7
#define MAX_O 5

/* The true optimum by enumerating every choice (MAX_O^MAX_T at most). */
static double brute_force(const gq_budget_tensor *t, size_t n, uint64_t budget)
{
    size_t idx[MAX_T] = { 0 };
    double best = INFINITY;
    for (;;) {
        uint64_t bytes = 0;
        double error = 0.0;
        for (size_t i = 0; i < n; i++) {
            bytes += t[i].options[idx[i]].bytes;
            error += t[i].options[idx[i]].error;
        }
        if (bytes <= budget && error < best)
            best = error;
        size_t i = 0;
        while (i < n && ++idx[i] == t[i].n_options)
            idx[i++] = 0;
        if (i == n)
            return best;
    }
}

typedef struct instance {
    gq_budget_option options[MAX_T][MAX_O];
    gq_budget_tensor tensors[MAX_T];
    size_t n;
} instance;

/* Options shaped like quantized types: more bytes, mostly less error, some noise and ties. */
static void random_instance(instance *in, tu_rng *rng)
{
    in->n = 1 + tu_rand_u64(rng) % MAX_T;
    for (size_t i = 0; i < in->n; i++) {
        size_t k = 1 + tu_rand_u64(rng) % MAX_O;
        uint64_t scale = 1 + tu_rand_u64(rng) % 64;
        for (size_t j = 0; j < k; j++) {
            uint64_t bits = 2 + tu_rand_u64(rng) % 7;   /* 2..8 "bits per weight" */
            in->options[i][j].bytes = bits * scale * 32;
            in->options[i][j].error = (double)scale * ldexp(1.0, -(int)bits) *
                                      (double)(1 + tu_rand_u64(rng) % 4);
        }
        in->tensors[i] = (gq_budget_tensor){ in->options[i], k };
    }
}

static uint64_t sum_bytes(const instance *in, const size_t *choice)
{
    uint64_t b = 0;
    for (size_t i = 0; i < in->n; i++)
        b += in->options[i][choice[i]].bytes;
    return b;
}

/* Feasible, never better than the optimum, bound below it; count exact hits. */
static void test_against_brute_force(void **state)
{
    (void)state;
    tu_rng rng = { 20261125 };
    int exact = 0, runs = 3000;
    double worst_gap = 0.0;
    for (int r = 0; r < runs; r++) {
        instance in;
        random_instance(&in, &rng);
        gq_budget_result res;
        size_t choice[MAX_T];
        ggufq_error err = { 0 };
        /* first learn the range, then pick a budget inside it */
        int st = gq_budget_solve(in.tensors, in.n, UINT64_MAX, choice, &res, &err);
        assert_int_equal(st, GGUFQ_OK);
        uint64_t lo = res.min_bytes, hi = res.max_bytes;
        uint64_t budget = lo + (hi > lo ? tu_rand_u64(&rng) % (hi - lo + 1) : 0);
        st = gq_budget_solve(in.tensors, in.n, budget, choice, &res, &err);
        assert_int_equal(st, GGUFQ_OK);
        assert_true(res.bytes <= budget);
        assert_int_equal(res.bytes, sum_bytes(&in, choice));
        double opt = brute_force(in.tensors, in.n, budget);
        assert_true(res.error >= opt * (1 - 1e-12));
        assert_true(res.lower_bound <= opt * (1 + 1e-12));
        if (res.error <= opt * (1 + 1e-12))
            exact++;
        double gap = opt > 0 ? (res.error - opt) / opt : 0;
        if (gap > worst_gap)
            worst_gap = gap;
    }
    printf("budget: optimal in %d of %d random instances, worst gap %.3f%%\n",
           exact, runs, 100 * worst_gap);
    assert_int_equal(exact, runs);   /* small instances: the search proves the optimum */
}

/*
 * A model-sized instance (300 tensors, 9 types each): feasible, within 2% of
 * the budget, and the answer's distance to the optimum is bounded.
 */
static void test_model_sized(void **state)
{
    (void)state;
    enum { N = 300, K = 9 };
    static gq_budget_option opts[N][K];
    gq_budget_tensor t[N];
    tu_rng rng = { 42 };
    uint64_t cheapest = 0, best = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t weights = 256 * 256 * (1 + tu_rand_u64(&rng) % 64);
        double sensitivity = 1.0 + (double)(tu_rand_u64(&rng) % 1000) / 100.0;
        for (size_t j = 0; j < K; j++) {   /* 2.5 .. 8.5 bits per weight */
            double bpw = 2.5 + 0.75 * (double)j;
            opts[i][j].bytes = (uint64_t)(bpw * (double)weights / 8);
            opts[i][j].error = sensitivity * (double)weights * ldexp(1.0, -2 * (int)j) *
                               (1.0 + (double)(tu_rand_u64(&rng) % 100) / 400.0);
        }
        t[i] = (gq_budget_tensor){ opts[i], K };
        cheapest += opts[i][0].bytes;
        best += opts[i][K - 1].bytes;
    }
    uint64_t budget = cheapest + (best - cheapest) / 3;
    size_t choice[N];
    gq_budget_result res;
    ggufq_error err = { 0 };
    assert_int_equal(gq_budget_solve(t, N, budget, choice, &res, &err), GGUFQ_OK);
    assert_true(res.bytes <= budget);
    assert_true(res.bytes >= budget - budget / 50);
    assert_true(res.lower_bound <= res.error);
    printf("budget: 300 tensors: %.6f%% of the budget used, error within %.4f%% of the optimum\n",
           100.0 * (double)res.bytes / (double)budget, 100.0 * (res.error - res.lower_bound) / res.error);
    assert_true(res.error - res.lower_bound <= 0.01 * res.error);
}

/* Ends of the range: the cheapest choice, every best option, a budget below the minimum. */
static void test_edges(void **state)
{
    (void)state;
    const gq_budget_option a[] = { { 100, 8.0 }, { 200, 2.0 }, { 400, 1.0 } };
    const gq_budget_option b[] = { { 50, 3.0 } };                 /* a fixed point */
    const gq_budget_option c[] = { { 300, 1.0 }, { 100, 5.0 }, { 150, 5.0 } };  /* 150 is dominated */
    gq_budget_tensor t[] = { { a, 3 }, { b, 1 }, { c, 3 } };
    size_t choice[3];
    gq_budget_result res;
    ggufq_error err = { 0 };

    assert_int_equal(gq_budget_solve(t, 3, 250, choice, &res, &err), GGUFQ_OK);
    assert_int_equal(res.min_bytes, 250);
    assert_int_equal(res.max_bytes, 750);
    assert_int_equal(choice[0], 0);
    assert_int_equal(choice[1], 0);
    assert_int_equal(choice[2], 1);
    assert_int_equal(res.bytes, 250);
    assert_true(res.error == 16.0);

    assert_int_equal(gq_budget_solve(t, 3, 750, choice, &res, &err), GGUFQ_OK);
    assert_int_equal(choice[0], 2);
    assert_int_equal(choice[2], 0);
    assert_true(res.error == 5.0 && res.lower_bound == 5.0);

    /* 350: a's step to 200 removes 6 per 100 bytes, c's step 4 per 200: a first */
    assert_int_equal(gq_budget_solve(t, 3, 350, choice, &res, &err), GGUFQ_OK);
    assert_int_equal(choice[0], 1);
    assert_int_equal(choice[2], 1);
    assert_int_equal(res.bytes, 350);
    assert_true(res.error == 10.0);

    assert_int_equal(gq_budget_solve(t, 3, 249, choice, &res, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message,
                        "budget of 249 bytes is below the smallest possible file: 250 bytes of tensor data");
    assert_int_equal(res.min_bytes, 250);
}

static void test_bad_input(void **state)
{
    (void)state;
    const gq_budget_option nan_opt[] = { { 10, NAN } };
    const gq_budget_option neg_opt[] = { { 10, -1.0 } };
    gq_budget_tensor t1[] = { { nan_opt, 1 } }, t2[] = { { neg_opt, 1 } }, t3[] = { { nan_opt, 0 } };
    size_t choice[1];
    gq_budget_result res;
    ggufq_error err = { 0 };
    assert_int_equal(gq_budget_solve(t1, 1, 100, choice, &res, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message, "budget: tensor 0 option 0: error nan is not finite and >= 0");
    assert_int_equal(gq_budget_solve(t2, 1, 100, choice, &res, &err), GGUFQ_E_INVALID_ARG);
    assert_int_equal(gq_budget_solve(t3, 1, 100, choice, &res, &err), GGUFQ_E_INVALID_ARG);
    assert_string_equal(err.message, "budget: tensor 0 has no option");
    assert_int_equal(gq_budget_solve(NULL, 0, 0, NULL, &res, &err), GGUFQ_OK);
    assert_int_equal(res.bytes, 0);
}

/* Equal gains across tensors: the lower tensor index is upgraded first, every time. */
static void test_ties_are_deterministic(void **state)
{
    (void)state;
    const gq_budget_option same[] = { { 100, 4.0 }, { 200, 2.0 } };
    gq_budget_tensor t[] = { { same, 2 }, { same, 2 }, { same, 2 } };
    size_t choice[3];
    gq_budget_result res;
    ggufq_error err = { 0 };
    assert_int_equal(gq_budget_solve(t, 3, 400, choice, &res, &err), GGUFQ_OK);
    assert_int_equal(choice[0], 1);
    assert_int_equal(choice[1], 0);
    assert_int_equal(choice[2], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_model_sized),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_ties_are_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
