/*
 * plan_make.c — a plan over opened inputs: the tensors of every shard in the
 * order llama.cpp's llama_model_quantize processes and writes them (sorted by
 * layer number, "blk.N." prefix, tensors without one first, then by name — the
 * order of its weights map — or, with keep_split, shard by shard in file
 * order), pruned (--prune-layers), typed by the policy (plan.c, which sees
 * them in that same order: some recipes count layers as they go), sized, and
 * matched with the imatrix. Every refusal of a run that needs no tensor data
 * is found here, so a dry run refuses the same way and nothing is written.
 * The plan object (struct ggufq_plan) and its public accessors live here too.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/plan.h"
#include "requant/requant_internal.h"

/* ------------------------------------------------------------------------- */
/* Order                                                                      */
/* ------------------------------------------------------------------------- */

typedef struct tensor_ref {
    int         shard;
    int64_t     index;
    uint64_t    offset;
    int         layer;   /* as sscanf(name, "blk.%d.") leaves it: -1 without a number */
    const char *name;
    char       *renamed; /* --prune-layers: the new name (owned), or NULL: unchanged */
} tensor_ref;

/* The layer llama.cpp's weight_name_comparer reads with sscanf("blk.%d."). */
static int name_layer(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    const char *p = name + 4;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
        p++;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p)
        return -1;
    if (errno == ERANGE || v > INT_MAX || v < INT_MIN)
        return v > 0 ? INT_MAX : INT_MIN;   /* out of range for %d: behaviour left to the C library */
    return (int)v;
}

static int by_layer_then_name(const void *a, const void *b)
{
    const tensor_ref *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_shard_then_offset(const void *a, const void *b)
{
    const tensor_ref *x = a, *y = b;
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * The same order for a test's list of tensors: order[0..n-1] = indices of in[]
 * sorted as collect_refs sorts a model's tensors (names are unique).
 */
int gq_plan_order(const gq_plan_input *in, int64_t n, int64_t *order)
{
    tensor_ref *refs = calloc((size_t)(n ? n : 1), sizeof *refs);
    if (!refs)
        return GGUFQ_E_NOMEM;
    for (int64_t i = 0; i < n; i++)
        refs[i] = (tensor_ref){ 0, i, 0, name_layer(in[i].name), in[i].name, NULL };
    qsort(refs, (size_t)n, sizeof *refs, by_layer_then_name);
    for (int64_t i = 0; i < n; i++)
        order[i] = refs[i].index;
    free(refs);
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Model facts for the policy                                                */
/* ------------------------------------------------------------------------- */

static int64_t arch_int(const ggufq_file *f, const char *arch, const char *suffix)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    ggufq_value v, e;
    int64_t x = 0;
    if (ggufq_get(f, key, &v) != GGUFQ_OK)
        return 0;
    if (v.type == GGUFQ_VT_ARRAY) {   /* per-layer values: layer 0's, as llama.cpp's hparams arrays */
        if (v.count == 0 || ggufq_array_get(&v, 0, &e) != GGUFQ_OK)
            return 0;
        v = e;
    }
    return ggufq_value_int(&v, &x) == GGUFQ_OK ? x : 0;
}

/* Model counts larger than this are not real models; they would overflow the
 * policy's int arithmetic (e.g. 7 * n_layer / 8). */
#define MAX_MODEL_COUNT 1000000

static int model_info(const ggufq_file *f, gq_model_info *m, char *arch_buf, size_t cap,
                      ggufq_error *err)
{
    memset(m, 0, sizeof *m);
    arch_buf[0] = '\0';
    ggufq_value v;
    ggufq_str s;
    if (ggufq_get(f, "general.architecture", &v) == GGUFQ_OK && ggufq_value_str(&v, &s) == GGUFQ_OK &&
        s.len < cap) {
        memcpy(arch_buf, s.ptr, (size_t)s.len);
        arch_buf[s.len] = '\0';
    }
    m->arch = arch_buf;
    m->known_arch = arch_buf[0] != '\0';
    if (!m->known_arch)
        return GGUFQ_OK;
    static const char *const keys[] = { "block_count", "attention.head_count",
                                        "attention.head_count_kv", "expert_count" };
    int64_t *dst[] = { &m->n_layer, &m->n_head, &m->n_head_kv, &m->n_expert };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        *dst[i] = arch_int(f, arch_buf, keys[i]);
        if (*dst[i] < 0 || *dst[i] > MAX_MODEL_COUNT)
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: %s.%s = %lld is not a plausible count "
                              "(0..%d)", ggufq_file_name(f), arch_buf, keys[i],
                              (long long)*dst[i], MAX_MODEL_COUNT);
    }
    if (m->n_head_kv == 0)
        m->n_head_kv = m->n_head;
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Plans                                                                      */
/* ------------------------------------------------------------------------- */

void ggufq_plan_free(ggufq_plan *plan)
{
    if (!plan)
        return;
    if (plan->names)
        for (int64_t i = 0; i < plan->n; i++)
            free(plan->names[i]);
    free(plan->names);
    if (plan->imatrix_names)
        for (int64_t i = 0; i < plan->n; i++)
            free(plan->imatrix_names[i]);
    free(plan->imatrix_names);
    free(plan->entries);
    free(plan->shard);
    free(plan->index);
    gq_plan_source_free(plan->source);
    free(plan);
}

void gq_plan_source_free(gq_plan_source *src)
{
    if (!src)
        return;
    gq_imatrix_free(&src->imatrix);
    gq_shards_close(&src->shards);
    free(src->kv);
    free(src->imatrix_path);
    free(src->prune_layers);
    free(src);
}

int64_t ggufq_plan_count(const ggufq_plan *plan) { return plan ? plan->n : GGUFQ_E_INVALID_ARG; }

const ggufq_plan_entry *ggufq_plan_at(const ggufq_plan *plan, int64_t i)
{
    return plan && i >= 0 && i < plan->n ? &plan->entries[i] : NULL;
}

uint32_t ggufq_plan_file_type(const ggufq_plan *plan) { return plan ? plan->file_type : 0; }
bool     ggufq_plan_pure(const ggufq_plan *plan) { return plan && plan->pure; }

static int collect_refs(const gq_shards *s, tensor_ref **out, int64_t *n_out, ggufq_error *err)
{
    int64_t n = 0;
    for (int i = 0; i < s->n; i++)
        n += ggufq_tensor_count(s->files[i]);
    tensor_ref *refs = calloc((size_t)(n ? n : 1), sizeof *refs);
    if (!refs)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    int64_t k = 0;
    for (int i = 0; i < s->n; i++)
        for (int64_t j = 0; j < ggufq_tensor_count(s->files[i]); j++, k++) {
            ggufq_tensor_info t;
            ggufq_tensor_at(s->files[i], j, &t);
            refs[k] = (tensor_ref){ i, j, t.offset, name_layer(t.name), t.name, NULL };
            /* Readable, but the output could not be loaded: refuse before writing. */
            const size_t len = strlen(t.name);
            if (len > GGUFQ_MAX_NAME_LEN) {
                int rc = gq_rq_fail(err, GGUFQ_E_BAD_NAME,
                                    "%s: tensor %lld '%.*s%s' has a %zu-byte name; ggml and llama.cpp "
                                    "load names of at most %u bytes, so no output is written",
                                    ggufq_file_name(s->files[i]), (long long)j, 80, t.name,
                                    len > 80 ? "..." : "", len, GGUFQ_MAX_NAME_LEN);
                free(refs);
                return rc;
            }
        }
    /* names must be unique over all shards (llama.cpp: "tensor is duplicated") */
    qsort(refs, (size_t)n, sizeof *refs, by_layer_then_name);
    for (int64_t i = 1; i < n; i++)
        if (strcmp(refs[i - 1].name, refs[i].name) == 0) {
            int rc = gq_rq_fail(err, GGUFQ_E_DUPLICATE_TENSOR, "%s: tensor '%s' is present twice",
                                ggufq_file_name(s->files[0]), refs[i].name);
            free(refs);
            return rc;
        }
    *out = refs;
    *n_out = n;
    return GGUFQ_OK;
}

static void free_refs(tensor_ref *refs, int64_t n)
{
    for (int64_t i = 0; refs && i < n; i++)
        free(refs[i].renamed);
    free(refs);
}

/*
 * --prune-layers: drop and rename the tensors (gq_prune_tensors), in llama.cpp's
 * order (refs is sorted by layer, then name); refs keeps the ones that stay.
 */
static int prune_refs(const gq_shards *s, const ggufq_requant_options *opts, tensor_ref *refs, int64_t *n,
                      int64_t *block_count_out, ggufq_error *err)
{
    const char **names = malloc((size_t)(*n ? *n : 1) * sizeof *names);
    char **renamed = calloc((size_t)(*n ? *n : 1), sizeof *renamed);
    int rc = names && renamed ? GGUFQ_OK : gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int64_t i = 0; rc == GGUFQ_OK && i < *n; i++)
        names[i] = refs[i].name;
    if (rc == GGUFQ_OK)
        rc = gq_prune_tensors(opts, ggufq_file_name(s->files[0]), names, *n, renamed, block_count_out, err);
    int64_t k = 0;
    for (int64_t i = 0; rc == GGUFQ_OK && i < *n; i++)
        if (renamed[i] != names[i]) {   /* else dropped */
            refs[k] = refs[i];
            refs[k++].renamed = renamed[i];
        }
    if (rc == GGUFQ_OK)
        *n = k;
    free(names);
    free(renamed);
    return rc;
}

static int alloc_plan(int64_t n, ggufq_plan **out)
{
    ggufq_plan *p = calloc(1, sizeof *p);
    size_t m = (size_t)(n ? n : 1);
    if (p) {
        p->entries = calloc(m, sizeof *p->entries);
        p->shard = calloc(m, sizeof *p->shard);
        p->index = calloc(m, sizeof *p->index);
        p->names = calloc(m, sizeof *p->names);
    }
    if (!p || !p->entries || !p->shard || !p->index || !p->names) {
        ggufq_plan_free(p);
        return GGUFQ_E_NOMEM;
    }
    *out = p;
    return GGUFQ_OK;
}

/* The plan's own records of each tensor (name, shard, index) and the policy's input;
 * the entries are gq_plan_build's to fill. */
static int fill_inputs(const gq_shards *s, tensor_ref *refs, ggufq_plan *p, gq_plan_input *in)
{
    for (int64_t i = 0; i < p->n; i++) {
        ggufq_tensor_info t;
        ggufq_tensor_at(s->files[refs[i].shard], refs[i].index, &t);
        p->names[i] = refs[i].renamed ? refs[i].renamed : strdup(t.name);
        refs[i].renamed = NULL;   /* the plan owns it now */
        if (!p->names[i])
            return GGUFQ_E_NOMEM;
        if (p->imatrix_names && !(p->imatrix_names[i] = strdup(t.name)))
            return GGUFQ_E_NOMEM;
        p->shard[i] = refs[i].shard;
        p->index[i] = refs[i].index;
        in[i].name = p->names[i];
        in[i].type = t.type;
        in[i].n_dims = t.n_dims;
        memcpy(in[i].dims, t.dims, sizeof in[i].dims);
        p->n_weights += (uint64_t)t.n_elements;
        p->in_total += t.size;
    }
    return GGUFQ_OK;
}

/* Rows of a tensor (dims[1] * dims[2] * dims[3]): 0 when a dimension is 0,
 * however large the others (the reader bounds the product only when none is). */
static uint64_t rows_of(const int64_t *dims)
{
    uint64_t rows = 1;
    for (int d = 1; d < GGUFQ_MAX_DIMS; d++)
        if (dims[d] == 0)
            return 0;
    for (int d = 1; d < GGUFQ_MAX_DIMS; d++)
        rows *= (uint64_t)dims[d];
    return rows;
}

/* The imatrix entry of n values fits rows of ne0 of ne2 experts (no overflow for huge empty tensors). */
static bool imatrix_fits(int64_t n, int64_t ne0, int64_t ne2)
{
    return ne2 != 0 && ne0 <= INT64_MAX / ne2 && n == ne0 * ne2;
}

/*
 * gq_plan_build sized every entry; the converted ones are checked here against
 * their types' block sizes and 2^64 bytes (with the file named), and counted.
 */
static int check_sizes(ggufq_plan *p, const gq_shards *s, ggufq_error *err)
{
    for (int64_t i = 0; i < p->n; i++) {
        const ggufq_plan_entry *e = &p->entries[i];
        const char *file = ggufq_file_name(s->files[p->shard[i]]);
        if (e->out_type != e->in_type) {
            int64_t ne0 = e->dims[0];
            uint64_t rows = ne0 > 0 ? rows_of(e->dims) : 0;
            size_t row = ggufq_row_size(e->out_type, ne0);
            const char *tn = ggufq_type_name(e->out_type);
            if (!ggufq_type_is_valid(e->out_type) || (row == 0 && rows > 0))
                return gq_fail(err, GGUFQ_E_BAD_SHAPE, file, GGUFQ_NO_OFFSET,
                               "tensor '%s': rows of %lld weights cannot be stored as %s",
                               e->name, (long long)ne0, tn ? tn : "?");
            if (rows > 0 && (uint64_t)row > UINT64_MAX / rows)
                return gq_fail(err, GGUFQ_E_OVERFLOW, file, GGUFQ_NO_OFFSET,
                               "tensor '%s': %llu rows of %s take more than 2^64 bytes", e->name,
                               (unsigned long long)rows, tn);
        }
        p->out_total += e->out_bytes;
    }
    return GGUFQ_OK;
}

/*
 * Which tensors get an imatrix row of the right size; and the refusals the run
 * would meet picking them (llama.cpp finds them as it goes), found here, once,
 * so that nothing is written and a dry run refuses the same way:
 * an entry of the wrong size (not for token_embd), or no entry for a tensor
 * whose type needs one.
 */
int gq_plan_mark_imatrix(ggufq_plan *p, const gq_imatrix *im, const char *im_name, ggufq_error *err)
{
    bool have = im && im->n > 0;
    for (int64_t i = 0; i < p->n; i++) {
        ggufq_plan_entry *e = &p->entries[i];
        const gq_imatrix_entry *m = have ? gq_imatrix_find(im, gq_plan_imatrix_name(p, i)) : NULL;
        bool converted = e->out_type != e->in_type;
        e->uses_imatrix = converted && m && imatrix_fits(m->n, e->dims[0], e->dims[2]);
        if (!converted || !have || e->uses_imatrix)
            continue;
        bool token_embd = strcmp(e->name, "token_embd.weight") == 0 ||
                          strcmp(e->name, "per_layer_token_embd.weight") == 0;
        int64_t ne0 = e->dims[0], ne2 = e->dims[2];
        bool fits = ne2 != 0 && ne0 <= INT64_MAX / ne2;
        if (m && fits && !token_embd)
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: imatrix size %lld is different from tensor size %lld for %s",
                              im_name, (long long)m->n, (long long)(ne0 * ne2), e->name);
        if (m && !token_embd)
            return gq_rq_fail(err, GGUFQ_E_FORMAT,
                              "%s: imatrix size %lld is different from tensor size %lld x %lld for %s",
                              im_name, (long long)m->n, (long long)ne0, (long long)ne2, e->name);
        if (gq_tensor_requires_imatrix(e->name, e->out_type, (int)p->file_type))
            return gq_rq_fail(err, GGUFQ_E_NEEDS_IMATRIX,
                              "%s: missing importance matrix for tensor %s in a very low-bit quantization (%s)",
                              im_name, e->name, ggufq_type_name(e->out_type));
    }
    return GGUFQ_OK;
}

/* Put "<file>: " before a message about one of the file's tensors. */
static void name_file_in_message(ggufq_error *err, const char *file)
{
    if (!err || !file)
        return;
    size_t n = strlen(file);
    if (strncmp(err->message, file, n) == 0 && err->message[n] == ':')
        return;
    char msg[sizeof err->message];
    memcpy(msg, err->message, sizeof msg);
    uint64_t offset = err->offset;
    gq_fail(err, err->status, file, GGUFQ_NO_OFFSET, "%s", msg);
    err->offset = offset;
}

/*
 * llama.cpp refuses to convert a tensor that is already quantized unless
 * allow_requantize: it checks ggml_is_quantized of the input type for each
 * tensor it converts (its output type differs; f16, bf16 and f32 inputs are
 * not quantized), so kept and copied tensors never count. Checked on the
 * whole plan, so nothing is written, and a dry run refuses the same way.
 */
static int check_requantize(const ggufq_plan *p, const ggufq_requant_options *opts, const char *file,
                            ggufq_error *err)
{
    if (opts->allow_requantize)
        return GGUFQ_OK;
    for (int64_t i = 0; i < p->n; i++) {
        const ggufq_plan_entry *e = &p->entries[i];
        if (e->out_type != e->in_type && ggufq_type_is_quantized(e->in_type))
            return gq_fail(err, GGUFQ_E_INVALID_ARG, file, GGUFQ_NO_OFFSET,
                           "requantizing from type %s is disabled (tensor %s would become %s): "
                           "quantizing already quantized weights again loses quality; "
                           "--allow-requantize does it anyway", ggufq_type_name(e->in_type), e->name,
                           ggufq_type_name(e->out_type));
    }
    return GGUFQ_OK;
}

/*
 * The file type written with COPY: llama.cpp writes the input's (the model
 * loader's ftype): general.file_type when it is there, else its guess from the
 * most common tensor type — counted in name order, the first type to reach the
 * highest count — marked as guessed (| 1024, LLAMA_FTYPE_GUESSED).
 */
typedef struct named_type { const char *name; ggufq_type type; } named_type;

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const named_type *)a)->name, ((const named_type *)b)->name);
}

static int copy_file_type(const ggufq_file *f, const gq_plan_input *in, int64_t n, uint32_t *out)
{
    ggufq_value v;
    uint64_t ft;
    if (ggufq_get(f, "general.file_type", &v) == GGUFQ_OK && v.type == GGUFQ_VT_UINT32 &&
        ggufq_value_uint(&v, &ft) == GGUFQ_OK) {
        *out = (uint32_t)ft;
        return GGUFQ_OK;
    }
    named_type *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return GGUFQ_E_NOMEM;
    for (int64_t i = 0; i < n; i++)
        sorted[i] = (named_type){ in[i].name, in[i].type };
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_name);   /* names are unique */
    int64_t count[GGUFQ_TYPE_COUNT] = { 0 }, best = 0;
    ggufq_type type_max = GGUFQ_TYPE_F32;
    for (int64_t i = 0; i < n; i++) {
        ggufq_type t = sorted[i].type;
        if ((int)t >= 0 && (int)t < GGUFQ_TYPE_COUNT && ++count[t] > best) {
            best = count[t];
            type_max = t;
        }
    }
    free(sorted);
    *out = (uint32_t)gq_ftype_guess(type_max) | GQ_FTYPE_GUESSED;
    return GGUFQ_OK;
}

int gq_plan_target(const char *target, int *ftype, ggufq_type *default_type, bool *is_recipe,
                   ggufq_error *err)
{
    int rc = gq_resolve_target(target, ftype, default_type, is_recipe);
    if (rc < 0)
        return gq_rq_fail(err, rc, "'%s' is not a llama-quantize type (a name such as Q4_K_M or "
                          "COPY, or a file type number such as 15) nor a ggml type",
                          target ? target : "(null)");
    return GGUFQ_OK;
}

int gq_plan_make(const gq_shards *s, const ggufq_requant_options *opts, bool has_imatrix,
                 ggufq_plan **out, ggufq_error *err)
{
    int ftype = 0;
    ggufq_type default_type;
    bool is_recipe = false;
    int rc = gq_plan_target(opts->target, &ftype, &default_type, &is_recipe, err);
    if (rc < 0)
        return rc;
    tensor_ref *refs = NULL;
    int64_t n = 0;
    gq_model_info model;
    char arch[128];
    int64_t block_count_out = 0;
    if ((rc = collect_refs(s, &refs, &n, err)) < 0)
        return rc;
    if (opts->n_prune_layers > 0) {
        if ((rc = model_info(s->files[0], &model, arch, sizeof arch, err)) < 0 ||
            (rc = gq_prune_check_model(opts, ggufq_file_name(s->files[0]), arch, model.n_layer, err)) < 0 ||
            (rc = prune_refs(s, opts, refs, &n, &block_count_out, err)) < 0) {
            free_refs(refs, n);
            return rc;
        }
    }
    if (opts->keep_split)
        qsort(refs, (size_t)n, sizeof *refs, by_shard_then_offset);
    ggufq_plan *p = NULL;
    gq_plan_input *in = calloc((size_t)(n ? n : 1), sizeof *in);
    if (!in || alloc_plan(n, &p) < 0 ||
        (opts->n_prune_layers > 0 && !(p->imatrix_names = calloc((size_t)(n ? n : 1), sizeof *p->imatrix_names)))) {
        free(in);
        free_refs(refs, n);
        ggufq_plan_free(p);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    p->n = n;
    p->file_type = (uint32_t)ftype;
    p->pure = opts->pure || !is_recipe;
    if (opts->n_prune_layers > 0) {
        snprintf(p->arch, sizeof p->arch, "%s", arch);
        p->block_count_in = model.n_layer;
        p->block_count_out = block_count_out;
    }
    rc = fill_inputs(s, refs, p, in);
    free_refs(refs, n);
    if (rc == GGUFQ_OK && gq_target_is_copy(opts->target))
        rc = copy_file_type(s->files[0], in, n, &p->file_type);
    if (rc < 0) {
        rc = gq_rq_fail(err, rc, "out of memory");
    } else {
        rc = model_info(s->files[0], &model, arch, sizeof arch, err);
        if (rc == GGUFQ_OK)
            rc = gq_plan_build(&model, in, n, opts, ftype, default_type, has_imatrix, p->entries, err);
        /* about a tensor of the input (the others are about options) */
        if (rc == GGUFQ_E_NEEDS_IMATRIX || rc == GGUFQ_E_BAD_SIZE || rc == GGUFQ_E_FORMAT)
            name_file_in_message(err, ggufq_file_name(s->files[0]));
        if (rc == GGUFQ_OK)
            rc = check_requantize(p, opts, ggufq_file_name(s->files[0]), err);
        if (rc == GGUFQ_OK)
            rc = check_sizes(p, s, err);
    }
    free(in);
    if (rc < 0) {
        ggufq_plan_free(p);
        return rc;
    }
    *out = p;
    return GGUFQ_OK;
}
