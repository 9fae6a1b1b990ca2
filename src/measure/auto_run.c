/*
 * auto_run.c — a budget plan as llama-quantize --tensor-type rules (built,
 * checked against requant's own plan of them, written), the recipe
 * comparison, and ggufq_auto_requant.
 *
 * Rules are anchored exact names, "^blk\.0\.attn_q\.weight$=q4_K":
 * llama-quantize lowercases a pattern and std::regex_search's it in the
 * tensor name, so an anchored, escaped name matches that tensor only.
 * Replayed on the base type with --pure (no recipe rules), every converted
 * tensor gets its rule's type; tensors without a rule are never converted.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "measure/auto_plan.h"

/* "^" name with ERE metacharacters escaped "$=" type; NULL when out of memory. */
static char *make_rule(const char *name, ggufq_type t)
{
    const char *tn = ggufq_type_name(t);
    const size_t len = 2 * strlen(name) + strlen(tn) + 4;
    char *r = malloc(len);
    if (!r)
        return NULL;
    size_t o = 0;
    r[o++] = '^';
    for (const char *c = name; *c; c++) {
        if (strchr(".[]{}()\\*+?^$|", *c))
            r[o++] = '\\';
        r[o++] = *c;
    }
    snprintf(r + o, len - o, "$=%s", tn);
    return r;
}

/* The quantized type of the most chosen weights (ties: the smaller id), else q8_0. */
static ggufq_type base_type(const ggufq_plan *base, const ggufq_type *chosen)
{
    uint64_t w[GGUFQ_TYPE_COUNT] = { 0 };
    for (int64_t i = 0; i < base->n; i++) {
        const ggufq_plan_entry *e = &base->entries[i];
        uint64_t n = 1;
        for (uint32_t d = 0; d < e->n_dims; d++)
            n *= (uint64_t)e->dims[d];
        if (chosen[i] != GGUFQ_TYPE_COUNT && ggufq_type_is_quantized(chosen[i]))
            w[chosen[i]] += n;
    }
    int best = GGUFQ_TYPE_Q8_0;
    for (int t = 0; t < GGUFQ_TYPE_COUNT; t++)
        if (w[t] > w[best])
            best = t;
    return (ggufq_type)best;
}

static int make_rules(ggufq_auto_plan *p, const ggufq_plan *base, const ggufq_type *chosen, ggufq_error *err)
{
    p->rules = calloc((size_t)base->n + 1, sizeof *p->rules);
    if (!p->rules)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < base->n; i++) {
        const ggufq_plan_entry *e = &base->entries[i];
        ggufq_type t = chosen[i];
        if (t == GGUFQ_TYPE_COUNT) {   /* a fixed point: a rule only where it is converted */
            if (e->out_type == e->in_type)
                continue;
            t = e->out_type;
        }
        if (!(p->rules[p->n_rules] = make_rule(e->name, t)))
            return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
        p->n_rules++;
    }
    return GGUFQ_OK;
}

static int fill_entries(ggufq_auto_plan *p, const ggufq_plan *base, const ggufq_type *chosen, ggufq_error *err)
{
    const ggufq_plan *r = p->replay;
    p->e = calloc((size_t)r->n + 1, sizeof *p->e);
    if (!p->e)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    uint64_t bytes = 0, padded = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const ggufq_plan_entry *x = &r->entries[i], *b = &base->entries[i];
        const bool is_chosen = chosen[i] != GGUFQ_TYPE_COUNT;
        if (strcmp(x->name, b->name) != 0 || x->out_type != (is_chosen ? chosen[i] : b->out_type))
            return gq_rq_fail(err, GGUFQ_E_STATE, "%s: tensor '%s': its rule gives %s, the plan has %s (a name "
                              "an anchored --tensor-type pattern cannot match: llama-quantize lowercases "
                              "patterns)", p->in_path, b->name, ggufq_type_name(x->out_type),
                              ggufq_type_name(is_chosen ? chosen[i] : b->out_type));
        ggufq_auto_entry *e = &p->e[p->n++];
        uint64_t n = 1;
        for (uint32_t d = 0; d < x->n_dims; d++)
            n *= (uint64_t)x->dims[d];
        double er = 0;
        if (x->out_type != x->in_type || is_chosen)
            if (!gq_auto_error_of(p, x->name, x->out_type, &er))
                er = x->out_type == x->in_type ? 0 : NAN;
        *e = (ggufq_auto_entry){ x->name, x->in_type, x->out_type, (int64_t)n, x->out_bytes, er, is_chosen,
                                 is_chosen ? "budget" : b->reason };
        p->tot.fixed += !is_chosen;
        bytes += x->out_bytes;
        padded += (x->out_bytes + p->file_align - 1) / p->file_align * p->file_align;
    }
    p->tot.tensor_bytes = bytes;
    p->tot.file_bytes = p->header + padded;
    p->tot.bpw = p->tot.weights ? 8.0 * (double)bytes / (double)p->tot.weights : 0;
    return GGUFQ_OK;
}

int gq_auto_make_replay(ggufq_auto_plan *p, const ggufq_requant_options *ro, const ggufq_plan *base,
                        const ggufq_type *chosen, ggufq_error *err)
{
    int rc = make_rules(p, base, chosen, err);
    if (rc < 0)
        return rc;
    p->tot.base_type = base_type(base, chosen);
    ggufq_requant_options o = *ro;
    o.target = ggufq_type_name(p->tot.base_type);
    o.pure = true;
    o.dry_run = true;
    o.tensor_types = (const char *const *)p->rules;
    o.n_tensor_types = (size_t)p->n_rules;
    if ((rc = ggufq_requant_plan(p->in_path, &o, &p->replay, err)) < 0)
        return rc;
    if (p->replay->n != base->n)
        return gq_rq_fail(err, GGUFQ_E_STATE, "%s: the replay plans %lld tensors, the base %lld", p->in_path,
                          (long long)p->replay->n, (long long)base->n);
    return fill_entries(p, base, chosen, err);
}

/* ---- recipes ------------------------------------------------------------------- */

int ggufq_auto_plan_recipe(const ggufq_auto_plan *plan, const char *recipe, uint64_t *tensor_bytes, double *error,
                           ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!plan || !recipe || !tensor_bytes || !error)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = recipe;
    o.imatrix_path = plan->imatrix_path;
    o.leave_output_tensor = plan->leave_output;
    o.dry_run = true;
    ggufq_plan *r = NULL;
    int rc = ggufq_requant_plan(plan->in_path, &o, &r, err);
    if (rc < 0)
        return gq_rq_fail(err, GGUFQ_E_NOT_FOUND, "%s: %s", recipe, err ? err->message : "refused");
    uint64_t bytes = 0;
    double total = 0;
    for (int64_t i = 0; rc == GGUFQ_OK && i < r->n; i++) {
        const ggufq_plan_entry *x = &r->entries[i];
        bytes += x->out_bytes;
        if (i >= plan->n || strcmp(plan->e[i].name, x->name) != 0)
            rc = gq_rq_fail(err, GGUFQ_E_NOT_FOUND, "%s: tensor order differs from the plan's", recipe);
        else if (plan->e[i].chosen) {
            double e = 0;
            if (x->out_type != x->in_type && !gq_auto_error_of(plan, x->name, x->out_type, &e))
                rc = gq_rq_fail(err, GGUFQ_E_NOT_FOUND, "%s: tensor '%s' as %s: no candidate measured it",
                                recipe, x->name, ggufq_type_name(x->out_type));
            total += e;
        }
    }
    ggufq_plan_free(r);
    if (rc == GGUFQ_OK) {
        *tensor_bytes = bytes;
        *error = total;
    }
    return rc;
}

/* ---- the rules file ----------------------------------------------------------------- */

int ggufq_auto_plan_write_rules(const ggufq_auto_plan *plan, const char *path, ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!plan || !path)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return gq_rq_fail(err, GGUFQ_E_IO, "%s: not a regular file: refusing to replace it", path);
    const size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: %s", path, strerror(errno));
        free(tmp);
        return rc;
    }
    FILE *f = fdopen(fd, "w");
    bool ok = f != NULL;
    for (int64_t i = 0; ok && i < plan->n_rules; i++)
        ok = fprintf(f, "%s\n", plan->rules[i]) >= 0;
    ok = ok && fflush(f) == 0 && fsync(fd) == 0;
    const int e = errno;
    if (f)
        ok = fclose(f) == 0 && ok;
    else
        close(fd);
    ok = ok && rename(tmp, path) == 0;
    int rc = GGUFQ_OK;
    if (!ok) {
        rc = gq_rq_fail(err, e == ENOSPC ? GGUFQ_E_NO_SPACE : GGUFQ_E_IO, "%s: %s", path, strerror(e ? e : errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* ---- the run ------------------------------------------------------------------------- */

int ggufq_auto_requant(const char *in_path, const char *out_path, const ggufq_auto_plan *plan,
                       const ggufq_requant_options *ropts, ggufq_progress_fn progress, void *user_data,
                       ggufq_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!in_path || !plan)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "NULL argument");
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    if (ropts) {
        if (ropts->struct_size != sizeof *ropts)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "ggufq_requant_options: struct_size %zu is not valid",
                              ropts->struct_size);
        o = *ropts;
    }
    if (o.n_include_weights || o.n_exclude_weights || o.n_prune_layers)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "a budget plan cannot be run with --include-weights, "
                          "--exclude-weights or --prune-layers");
    const size_t n_kv = o.n_kv_overrides;
    const char **kv = calloc(n_kv + 3, sizeof *kv);
    char keys[3][192];
    if (!kv)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    if (n_kv)
        memcpy(kv, o.kv_overrides, n_kv * sizeof *kv);
    snprintf(keys[0], sizeof keys[0], "quantize.budget.target=str:%s", plan->target_text);
    snprintf(keys[1], sizeof keys[1], "quantize.budget.bpw=float:%.4f", plan->tot.bpw);
    snprintf(keys[2], sizeof keys[2], "quantize.budget.objective=str:%s",
             plan->tot.weighted ? "imatrix-weighted squared error" : "squared error");
    for (int k = 0; k < 3; k++)
        kv[n_kv + (size_t)k] = keys[k];
    o.kv_overrides = kv;
    o.n_kv_overrides = n_kv + 3;
    o.target = ggufq_type_name(plan->tot.base_type);
    o.pure = true;
    o.tensor_types = (const char *const *)plan->rules;
    o.n_tensor_types = (size_t)plan->n_rules;
    int rc = ggufq_requant(in_path, out_path, &o, progress, user_data, err);
    free(kv);
    return rc;
}
