/*
 * auto_plan.h — what auto_plan.c (measure and choose) and auto_run.c (the
 * replay rules, recipes, the run) share. Not public API.
 */
#ifndef GGUFQ_MEASURE_AUTO_PLAN_H
#define GGUFQ_MEASURE_AUTO_PLAN_H

#include "requant/requant_internal.h"

struct ggufq_auto_plan {
    ggufq_auto_entry  *e;          /* the replay's entries, in output order */
    int64_t            n;
    ggufq_auto_totals  tot;
    char             **rules;      /* "^name$=type", one per converted tensor */
    int64_t            n_rules;
    ggufq_plan        *replay;     /* requant's plan of the rules (names point into it) */
    ggufq_stats       *stats;
    int64_t           *by_name;    /* stats indices sorted by name */
    ggufq_type         cands[64];
    size_t             n_cands;
    gq_imatrix         im;
    bool               has_im;
    bool               leave_output;
    char              *in_path, *imatrix_path, *target_text;
    uint64_t           align;      /* budget units: the file's alignment for a size, 1 for bpw */
    uint64_t           file_align; /* the output's alignment */
    uint64_t           header;     /* estimated header bytes (all output files) */
    uint64_t           overhead;   /* header counted in the budget units (0 for bpw) */
};

bool gq_auto_type_requires_imatrix(ggufq_type t);
/* auto_measured.c: sort stats indices by their tensors' names (tmp: n entries of scratch). */
void gq_auto_sort_by_name(int64_t *idx, int64_t n, int64_t *tmp, const ggufq_stats *s);
/* The measured tensor of that name (NULL: not measured). */
const ggufq_stats_tensor *gq_auto_measured(const ggufq_auto_plan *p, const char *name);
/* The objective (ggufq.h) of one measured candidate. */
double gq_auto_error(const ggufq_auto_plan *p, const ggufq_stats_tensor *t, const ggufq_stats_candidate *c);
/* The error of tensor `name` written as `type`; false if no candidate wrote that type. */
bool gq_auto_error_of(const ggufq_auto_plan *p, const char *name, ggufq_type type, double *error);
/* chosen[i]: the type of base entry i, GGUFQ_TYPE_COUNT for a fixed point. Fills p->rules, replay, e, tot. */
int gq_auto_make_replay(ggufq_auto_plan *p, const ggufq_requant_options *ro, const ggufq_plan *base,
                        const ggufq_type *chosen, ggufq_error *err);

#endif
