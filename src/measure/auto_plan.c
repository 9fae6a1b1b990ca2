/*
 * auto_plan.c — ggufq_auto_plan_make: per-tensor types chosen from measured
 * error under a size budget (`ggufq requant IN auto OUT --target-size ...`).
 *
 * 1. A requant plan of the options as given (any bare target, --pure) tells
 *    the fixed points: tensors kept as they are, and tensors a requant
 *    option sets (reasons "override: ...").
 * 2. ggufq_stats_run measures every other tensor at every candidate: the
 *    bytes `requant --pure` writes (fallbacks included) and the error sums.
 * 3. Each tensor's options are its distinct written types (bytes, error);
 *    gq_budget_solve chooses one per tensor within the budget.
 * 4. The choice becomes anchored exact-name --tensor-type rules on a bare
 *    base type with --pure; requant's own plan of exactly that replay gives
 *    the entries (and is checked to hold every chosen type), so the file
 *    ggufq_auto_requant writes is the one the rules reproduce.
 * The error and the budget units are described in include/ggufq.h; the
 * measured errors are looked up in auto_measured.c, the rules built in auto_run.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/auto_plan.h"
#include "measure/measure.h"
#include "requant/budget.h"

#define HEADER_SLACK 1024   /* keys requant and auto add to the input's header (plus the imatrix path) */

void ggufq_auto_options_init(ggufq_auto_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

int64_t ggufq_auto_plan_count(const ggufq_auto_plan *plan) { return plan ? plan->n : 0; }

const ggufq_auto_entry *ggufq_auto_plan_at(const ggufq_auto_plan *plan, int64_t i)
{
    return plan && i >= 0 && i < plan->n ? &plan->e[i] : NULL;
}

void ggufq_auto_plan_totals(const ggufq_auto_plan *plan, ggufq_auto_totals *out)
{
    if (!out)
        return;
    if (plan)
        *out = plan->tot;
    else
        memset(out, 0, sizeof *out);
}

void ggufq_auto_plan_free(ggufq_auto_plan *plan)
{
    if (!plan)
        return;
    for (int64_t i = 0; plan->rules && i < plan->n_rules; i++)
        free(plan->rules[i]);
    free(plan->rules);
    free(plan->e);
    free(plan->by_name);
    ggufq_plan_free(plan->replay);
    ggufq_stats_free(plan->stats);
    free(plan->in_path);
    free(plan->imatrix_path);
    free(plan->target_text);
    gq_imatrix_free(&plan->im);
    free(plan);
}

/* ---- candidates ------------------------------------------------------------ */

/* llama.cpp refuses these without an importance matrix (tensor_requires_imatrix, but for token_embd/output). */
bool gq_auto_type_requires_imatrix(ggufq_type t)
{
    return t == GGUFQ_TYPE_IQ3_XXS || t == GGUFQ_TYPE_IQ2_XXS || t == GGUFQ_TYPE_IQ2_XS ||
           t == GGUFQ_TYPE_IQ2_S || t == GGUFQ_TYPE_IQ1_M || t == GGUFQ_TYPE_IQ1_S;
}

static bool is_embd_or_output(const char *name)
{
    return strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0 ||
           strcmp(name, "output.weight") == 0;
}

/*
 * Every tensor the base plan converts has an imatrix entry of the right size
 * (all: for types the kernels cannot quantize without one, iq2_xs; else but
 * token_embd and output, which llama.cpp exempts: iq3_xxs).
 */
static bool imatrix_covers(const gq_imatrix *im, const ggufq_plan *base, bool all)
{
    for (int64_t i = 0; i < base->n; i++) {
        const ggufq_plan_entry *e = &base->entries[i];
        if (strncmp(e->reason, "kept", 4) == 0 || strncmp(e->reason, "override", 8) == 0 ||
            (!all && is_embd_or_output(e->name)))
            continue;
        const gq_imatrix_entry *m = gq_imatrix_find(im, e->name);
        const int64_t ne2 = e->n_dims > 2 ? e->dims[2] : 1;
        if (!m || m->n != e->dims[0] * ne2)
            return false;
    }
    return true;
}

static int pick_candidates(ggufq_auto_plan *p, const ggufq_auto_options *o, const gq_imatrix *im,
                           const ggufq_plan *base, ggufq_error *err)
{
    if (o->candidates) {
        if (o->n_candidates == 0 || o->n_candidates > 64)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "between 1 and 64 candidate types are needed (got %zu)",
                              o->n_candidates);
        for (size_t k = 0; k < o->n_candidates; k++) {
            const ggufq_type t = o->candidates[k];
            if (!ggufq_type_is_valid((int)t))
                return gq_rq_fail(err, GGUFQ_E_UNKNOWN_TYPE, "candidate type %d: not a ggml type", (int)t);
            const bool plain = t == GGUFQ_TYPE_F32 || t == GGUFQ_TYPE_F16 || t == GGUFQ_TYPE_BF16;
            if (!plain && !(ggufq_type_is_quantized(t) && ggufq_type_can_quantize(t)))
                return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "candidate %s: not a type to quantize to",
                                  ggufq_type_name(t));
            for (size_t j = 0; j < k; j++)
                if (o->candidates[j] == t)
                    return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "candidate %s given twice", ggufq_type_name(t));
            if (!im && gq_auto_type_requires_imatrix(t))
                return gq_rq_fail(err, GGUFQ_E_NEEDS_IMATRIX, "candidate %s needs an importance matrix "
                                  "(--imatrix)", ggufq_type_name(t));
            p->cands[p->n_cands++] = t;
        }
        return GGUFQ_OK;
    }
    static const ggufq_type ladder[] = {
        GGUFQ_TYPE_Q2_K, GGUFQ_TYPE_Q3_K, GGUFQ_TYPE_Q4_K, GGUFQ_TYPE_Q5_K, GGUFQ_TYPE_Q6_K,
        GGUFQ_TYPE_Q8_0, GGUFQ_TYPE_IQ4_XS, GGUFQ_TYPE_F16,
    };
    for (size_t k = 0; k < sizeof ladder / sizeof ladder[0]; k++)
        p->cands[p->n_cands++] = ladder[k];
    if (im) {
        p->cands[p->n_cands++] = GGUFQ_TYPE_IQ3_S;
        if (imatrix_covers(im, base, false))
            p->cands[p->n_cands++] = GGUFQ_TYPE_IQ3_XXS;
        if (imatrix_covers(im, base, true))
            p->cands[p->n_cands++] = GGUFQ_TYPE_IQ2_XS;
    }
    return GGUFQ_OK;
}

/* ---- the solve ----------------------------------------------------------------- */

typedef struct solve_input {
    gq_budget_tensor *t;
    gq_budget_option *opts;     /* n * n_cands */
    ggufq_type       *types;    /* type of each option */
    int64_t          *entry;    /* base plan entry of each chosen tensor */
    size_t            n;
    uint64_t          fixed;    /* bytes of the fixed points (units) */
} solve_input;

static uint64_t units(const ggufq_auto_plan *p, uint64_t bytes)
{
    return p->align > 1 ? (bytes + p->align - 1) / p->align * p->align : bytes;
}

static int build_options(ggufq_auto_plan *p, const ggufq_plan *base, solve_input *si, ggufq_error *err)
{
    const size_t nc = p->n_cands;
    si->t = calloc((size_t)base->n + 1, sizeof *si->t);
    si->opts = calloc(((size_t)base->n + 1) * nc, sizeof *si->opts);
    si->types = calloc(((size_t)base->n + 1) * nc, sizeof *si->types);
    si->entry = calloc((size_t)base->n + 1, sizeof *si->entry);
    if (!si->t || !si->opts || !si->types || !si->entry)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < base->n; i++) {
        const ggufq_plan_entry *e = &base->entries[i];
        const ggufq_stats_tensor *t = strncmp(e->reason, "override", 8) == 0 ? NULL : gq_auto_measured(p, e->name);
        if (!t) {
            si->fixed += units(p, e->out_bytes);
            continue;
        }
        gq_budget_option *o = si->opts + si->n * nc;
        ggufq_type *ty = si->types + si->n * nc;
        size_t k = 0;
        for (size_t c = 0; c < nc; c++) {
            const ggufq_stats_candidate *sc = &t->candidates[c];
            bool seen = false;
            for (size_t j = 0; j < k; j++)
                seen |= ty[j] == sc->used;
            if (seen)
                continue;
            const double er = gq_auto_error(p, t, sc);
            if (!isfinite(er) || er < 0)
                return gq_rq_fail(err, GGUFQ_E_NONFINITE, "%s: tensor '%s': the error as %s is not finite",
                                  p->in_path, e->name, ggufq_type_name(sc->used));
            o[k] = (gq_budget_option){ units(p, sc->bytes), er };
            ty[k++] = sc->used;
        }
        si->t[si->n] = (gq_budget_tensor){ o, k };
        si->entry[si->n++] = i;
    }
    return GGUFQ_OK;
}

static void solve_input_free(solve_input *si)
{
    free(si->t);
    free(si->opts);
    free(si->types);
    free(si->entry);
}

/* The budget in units (target_bytes) and the part the chosen tensors may use. */
static int budget_of(ggufq_auto_plan *p, const ggufq_auto_options *o, const solve_input *si, uint64_t min_c,
                     uint64_t max_c, uint64_t *avail, ggufq_error *err)
{
    ggufq_auto_totals *tot = &p->tot;
    uint64_t target;
    char what[96];
    if (o->target_size) {
        target = o->target_size;
        snprintf(what, sizeof what, "--target-size %llu bytes", (unsigned long long)target);
    } else {
        const double b = floor(o->target_bpw * (double)tot->weights / 8.0);
        target = b >= 1.8e19 ? UINT64_MAX : (uint64_t)b;
        snprintf(what, sizeof what, "--target-bpw %.4g (%llu bytes of tensor data)", o->target_bpw,
                 (unsigned long long)target);
    }
    tot->target_bytes = target;
    const uint64_t base = p->overhead + si->fixed;
    tot->min_bytes = base + min_c;
    tot->max_bytes = base + max_c;
    if (target < tot->min_bytes)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "%s: the budget %s is below the smallest plan: %llu bytes (%.4f bits per weight: every "
                          "tensor at its smallest candidate%s)", p->in_path, what,
                          (unsigned long long)tot->min_bytes,
                          tot->weights ? 8.0 * (double)(tot->min_bytes - p->overhead) / (double)tot->weights : 0.0,
                          p->overhead ? ", the header estimated at the input's plus 1 KiB" : "");
    *avail = target - base;
    return GGUFQ_OK;
}

static int solve(ggufq_auto_plan *p, const ggufq_auto_options *o, const ggufq_plan *base, ggufq_type *chosen,
                 ggufq_error *err)
{
    solve_input si;
    memset(&si, 0, sizeof si);
    int rc = build_options(p, base, &si, err);
    uint64_t min_c = 0, max_c = 0, avail = 0;
    for (size_t i = 0; rc == GGUFQ_OK && i < si.n; i++) {
        uint64_t lo = UINT64_MAX, best_b = 0;
        double best_e = INFINITY;
        for (size_t k = 0; k < si.t[i].n_options; k++) {
            const gq_budget_option *x = &si.t[i].options[k];
            lo = x->bytes < lo ? x->bytes : lo;
            if (x->error < best_e || (x->error == best_e && x->bytes < best_b)) {
                best_e = x->error;
                best_b = x->bytes;
            }
        }
        min_c += lo;
        max_c += best_b;
    }
    if (rc == GGUFQ_OK)
        rc = budget_of(p, o, &si, min_c, max_c, &avail, err);
    size_t *choice = rc == GGUFQ_OK ? calloc(si.n + 1, sizeof *choice) : NULL;
    if (rc == GGUFQ_OK && !choice)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    gq_budget_result res;
    memset(&res, 0, sizeof res);
    if (rc == GGUFQ_OK)
        rc = gq_budget_solve(si.t, si.n, avail, choice, &res, err);
    if (rc == GGUFQ_OK) {
        for (size_t i = 0; i < si.n; i++)
            chosen[si.entry[i]] = si.types[i * p->n_cands + choice[i]];
        p->tot.error = res.error;
        p->tot.lower_bound = res.lower_bound;
        p->tot.budget_bytes = avail;
        p->tot.chosen = (int64_t)si.n;
        /* 98% of the budget, or nothing left to buy */
        const uint64_t used = p->overhead + si.fixed + res.bytes;
        p->tot.budget_reached = (double)used >= 0.98 * (double)p->tot.target_bytes;
    }
    free(choice);
    solve_input_free(&si);
    return rc;
}

/* ---- the plan -------------------------------------------------------------------- */

static int take_ropts(const ggufq_requant_options *ropts, ggufq_requant_options *ro, ggufq_error *err)
{
    ggufq_requant_options_init(ro);
    if (ropts) {
        if (ropts->struct_size != sizeof *ropts)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "ggufq_requant_options: struct_size %zu is not valid",
                              ropts->struct_size);
        *ro = *ropts;
    }
    if (ro->n_include_weights || ro->n_exclude_weights)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "a budget plan measures with the whole imatrix: "
                          "--include-weights and --exclude-weights cannot be used with it");
    if (ro->n_prune_layers)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "a budget plan cannot prune layers (--prune-layers): "
                          "prune first, then plan the pruned file");
    ro->target = "q8_0";
    ro->pure = true;
    ro->dry_run = true;
    return GGUFQ_OK;
}

static int check_budget_opts(const ggufq_auto_options *o, ggufq_error *err)
{
    if (!o || o->struct_size != sizeof *o)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "ggufq_auto_options: %s", o ? "struct_size is not valid"
                                                                              : "NULL");
    if (o->target_size == 0 && !(isfinite(o->target_bpw) && o->target_bpw > 0))
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "a budget is needed: a target size in bytes, or a "
                          "target bits per weight above 0 (--target-size or --target-bpw)");
    return GGUFQ_OK;
}

/* Header and alignment of the output, estimated from the input's shards. */
static int read_layout(ggufq_auto_plan *p, ggufq_error *err)
{
    gq_shards s = { 0, NULL };
    int rc = gq_shards_open(p->in_path, &s, err);
    if (rc < 0)
        return rc;
    p->file_align = ggufq_file_alignment(s.files[0]);
    p->align = p->file_align;
    uint64_t head = 0;
    for (int k = 0; k < s.n; k++)
        head += ggufq_file_data_offset(s.files[k]);
    p->header = head + HEADER_SLACK + (p->imatrix_path ? strlen(p->imatrix_path) : 0);
    gq_shards_close(&s);
    return GGUFQ_OK;
}

static int run_stats(ggufq_auto_plan *p, const ggufq_requant_options *ro, const ggufq_auto_options *o,
                     ggufq_error *err)
{
    ggufq_stats_options so;
    ggufq_stats_options_init(&so);
    so.types = p->cands;
    so.n_types = p->n_cands;
    so.imatrix_path = ro->imatrix_path;
    so.nthreads = ro->nthreads;
    so.cache_path = o->stats_cache_path;
    int rc = ggufq_stats_run(p->in_path, &so, &p->stats, err);
    if (rc < 0)
        return rc;
    const int64_t n = ggufq_stats_count(p->stats);
    p->by_name = malloc((size_t)(n + 1) * sizeof *p->by_name);
    int64_t *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
    if (!p->by_name || !tmp) {
        free(tmp);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < n; i++)
        p->by_name[i] = i;
    gq_auto_sort_by_name(p->by_name, n, tmp, p->stats);
    free(tmp);
    return GGUFQ_OK;
}

static int plan_steps(ggufq_auto_plan *p, ggufq_requant_options *ro, const ggufq_auto_options *o,
                      ggufq_error *err)
{
    ggufq_plan *base = NULL;
    int rc = ggufq_requant_plan(p->in_path, ro, &base, err);
    if (rc < 0)
        return rc;
    if (ro->imatrix_path) {
        ggufq_requant_options io;
        ggufq_requant_options_init(&io);
        rc = gq_imatrix_load(ro->imatrix_path, &io, &p->im, err);
        p->has_im = rc == GGUFQ_OK && p->im.n > 0;
    }
    if (rc == GGUFQ_OK)
        rc = pick_candidates(p, o, p->has_im ? &p->im : NULL, base, err);
    if (rc == GGUFQ_OK)
        rc = read_layout(p, err);
    if (rc == GGUFQ_OK) {
        if (!o->target_size)   /* bpw: tensor bytes as they are, no header */
            p->align = 1;
        p->overhead = o->target_size ? p->header : 0;
        p->tot.weights = base->n_weights;
        p->tot.weighted = p->has_im;
        rc = run_stats(p, ro, o, err);
    }
    ggufq_type *chosen = rc == GGUFQ_OK ? malloc(((size_t)base->n + 1) * sizeof *chosen) : NULL;
    if (rc == GGUFQ_OK && !chosen)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int64_t i = 0; rc == GGUFQ_OK && i < base->n; i++)
        chosen[i] = GGUFQ_TYPE_COUNT;   /* a fixed point */
    if (rc == GGUFQ_OK)
        rc = solve(p, o, base, chosen, err);
    if (rc == GGUFQ_OK)
        rc = gq_auto_make_replay(p, ro, base, chosen, err);
    free(chosen);
    ggufq_plan_free(base);
    return rc;
}

int ggufq_auto_plan_make(const char *in_path, const ggufq_requant_options *ropts, const ggufq_auto_options *opts,
                         ggufq_auto_plan **out, ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!in_path || !out)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    *out = NULL;
    int rc = check_budget_opts(opts, err);
    ggufq_requant_options ro;
    if (rc == GGUFQ_OK)
        rc = take_ropts(ropts, &ro, err);
    if (rc < 0)
        return rc;
    ggufq_auto_plan *p = calloc(1, sizeof *p);
    if (!p || !(p->in_path = strdup(in_path)) ||
        (ro.imatrix_path && !(p->imatrix_path = strdup(ro.imatrix_path)))) {
        ggufq_auto_plan_free(p);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    char text[64];
    if (opts->target_size)
        snprintf(text, sizeof text, "size %llu bytes", (unsigned long long)opts->target_size);
    else
        snprintf(text, sizeof text, "%.6g bits per weight", opts->target_bpw);
    p->target_text = strdup(text);
    p->leave_output = ro.leave_output_tensor;
    rc = p->target_text ? plan_steps(p, &ro, opts, err) : gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    if (rc < 0) {
        ggufq_auto_plan_free(p);
        return rc;
    }
    *out = p;
    return GGUFQ_OK;
}
