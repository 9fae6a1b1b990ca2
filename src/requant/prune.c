/*
 * prune.c — dropping whole blocks (llama-quantize --prune-layers).
 *
 * llama.cpp (src/llama-quant.cpp, remap_layer) walks the tensors in its
 * processing order (layer, then name) and, for the first "blk.<digits>." in
 * each name: drops the tensor when the block is pruned; keeps the number of a
 * block below the first pruned one; gives every later block the next free
 * number, in the order the blocks are met. <arch>.block_count becomes that
 * next free number (set after the --override-kv keys, so it moves to the end
 * of the metadata). Its imatrix lookups use the input's block numbers.
 *
 * One difference, on purpose: llama.cpp leaves the per-layer metadata arrays
 * (<arch>.attention.head_count_kv of hybrid models, per-layer
 * feed_forward_length, sliding-window patterns ...) at the old block count,
 * so its output does not load (llama.cpp issue #27976). Here every numeric
 * or bool array under "<arch>." whose length is the old block count loses
 * the entries of the pruned blocks, keeping its element type and its place.
 * <arch>.rope.dimension_sections (four entries, never per layer) is left.
 *
 * Refused (llama.cpp accepts them and writes something odd): a list that is
 * not strictly increasing (its renumbering assumes a sorted list), negative
 * numbers, blocks the model does not have, and pruning every block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/requant_internal.h"

int gq_prune_check_list(const ggufq_requant_options *opts, ggufq_error *err)
{
    if (opts->n_prune_layers == 0)
        return GGUFQ_OK;
    if (!opts->prune_layers)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--prune-layers: %zu layers announced but no list given",
                          opts->n_prune_layers);
    for (size_t i = 0; i < opts->n_prune_layers; i++) {
        int32_t l = opts->prune_layers[i];
        if (l < 0)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--prune-layers: %d is not a layer number", (int)l);
        if (i > 0 && l <= opts->prune_layers[i - 1])
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                              "--prune-layers: layers must be listed in increasing order, each once "
                              "(%d after %d)", (int)l, (int)opts->prune_layers[i - 1]);
    }
    return GGUFQ_OK;
}

int gq_prune_check_model(const ggufq_requant_options *opts, const char *file, const char *arch,
                         int64_t block_count, ggufq_error *err)
{
    if (opts->n_prune_layers == 0)
        return GGUFQ_OK;
    if (!arch[0] || block_count <= 0)
        return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: --prune-layers: the model has no %s%sblock_count",
                          file, arch, arch[0] ? "." : "<arch>.");
    int32_t last = opts->prune_layers[opts->n_prune_layers - 1];
    if (last >= block_count)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "--prune-layers: %s has %lld layer%s (0 to %lld), there is no layer %d", file,
                          (long long)block_count, block_count == 1 ? "" : "s", (long long)block_count - 1,
                          (int)last);
    if ((int64_t)opts->n_prune_layers == block_count)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "--prune-layers: that is every layer of %s (%lld); at least one must stay", file,
                          (long long)block_count);
    return GGUFQ_OK;
}

/* llama.cpp's remap_layer state: block numbers met so far and what they became. */
typedef struct prune_state {
    const int32_t *layers;     /* opts->prune_layers: strictly increasing (checked) */
    size_t         n_layers;
    int64_t       *old_ids, *new_ids;   /* new_ids[k] < 0: block old_ids[k] is dropped */
    size_t         n_mapped, cap;
    int64_t        next_id;    /* the next free block number: the new block count at the end */
} prune_state;

static bool is_pruned(const prune_state *p, int64_t blk)
{
    for (size_t i = 0; i < p->n_layers; i++)
        if (p->layers[i] == blk)
            return true;
    return false;
}

/* The first "blk.<digits>." of name (std::regex_search of llama.cpp's pattern): digits start and length. */
static bool find_block(const char *name, size_t *at, size_t *len)
{
    for (const char *s = strstr(name, "blk."); s; s = strstr(s + 1, "blk.")) {
        const char *d = s + 4, *e = d;
        while (*e >= '0' && *e <= '9')
            e++;
        if (e > d && *e == '.') {
            *at = (size_t)(d - name);
            *len = (size_t)(e - d);
            return true;
        }
    }
    return false;
}

/*
 * The name a tensor gets (remap_layer), called for every tensor in llama.cpp's
 * processing order: *renamed is NULL (unchanged), name itself (the tensor is
 * dropped), or a malloc'd new name.
 */
static int prune_rename(prune_state *p, const char *name, char **renamed, ggufq_error *err)
{
    *renamed = NULL;
    size_t at, len;
    if (!find_block(name, &at, &len))
        return GGUFQ_OK;
    int64_t blk = 0;
    for (size_t i = 0; i < len; i++) {
        blk = blk * 10 + (name[at + i] - '0');
        if (blk > INT32_MAX)   /* std::stoi throws: llama.cpp fails */
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "tensor %s: the block number does not fit in an int", name);
    }
    size_t k = 0;
    while (k < p->n_mapped && p->old_ids[k] != blk)
        k++;
    if (k == p->n_mapped) {
        if (p->n_mapped == p->cap) {
            size_t cap = p->cap ? 2 * p->cap : 64;
            int64_t *o = realloc(p->old_ids, cap * sizeof *o);
            if (o)
                p->old_ids = o;
            int64_t *nw = o ? realloc(p->new_ids, cap * sizeof *nw) : NULL;
            if (!nw)
                return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
            p->new_ids = nw;
            p->cap = cap;
        }
        p->old_ids[k] = blk;
        if (is_pruned(p, blk)) {
            p->new_ids[k] = -1;
        } else if (blk < p->layers[0]) {
            p->new_ids[k] = blk;
            p->next_id = blk + 1;
        } else {
            p->new_ids[k] = p->next_id++;
        }
        p->n_mapped++;
    }
    if (p->new_ids[k] < 0) {
        *renamed = (char *)name;   /* dropped: the caller tells by identity */
        return GGUFQ_OK;
    }
    char num[24];
    int nl = snprintf(num, sizeof num, "%lld", (long long)p->new_ids[k]);
    size_t total = strlen(name) - len + (size_t)nl;
    char *out = malloc(total + 1);
    if (!out)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    memcpy(out, name, at);
    memcpy(out + at, num, (size_t)nl);
    strcpy(out + at + (size_t)nl, name + at + len);
    *renamed = out;
    return GGUFQ_OK;
}

static void prune_free(prune_state *p)
{
    free(p->old_ids);
    free(p->new_ids);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int gq_prune_tensors(const ggufq_requant_options *opts, const char *file, const char *const *names, int64_t n,
                     char **renamed, int64_t *block_count_out, ggufq_error *err)
{
    prune_state pr = { opts->prune_layers, opts->n_prune_layers, NULL, NULL, 0, 0, 0 };
    int rc = GGUFQ_OK;
    int64_t k = 0;
    for (int64_t i = 0; i < n && rc == GGUFQ_OK; i++) {
        rc = prune_rename(&pr, names[i], &renamed[i], err);
    }
    *block_count_out = pr.next_id;
    prune_free(&pr);
    /* two tensors given the same name (blk.7.x and blk.007.x): refused, where llama.cpp aborts */
    const char **out = rc == GGUFQ_OK ? malloc((size_t)(n ? n : 1) * sizeof *out) : NULL;
    if (rc == GGUFQ_OK && !out)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    for (int64_t i = 0; out && i < n; i++)
        if (renamed[i] != names[i])
            out[k++] = renamed[i] ? renamed[i] : names[i];
    if (out)
        qsort(out, (size_t)k, sizeof *out, cmp_str);
    for (int64_t i = 1; out && i < k && rc == GGUFQ_OK; i++)
        if (strcmp(out[i - 1], out[i]) == 0)
            rc = gq_rq_fail(err, GGUFQ_E_DUPLICATE_TENSOR, "%s: --prune-layers: two tensors would be "
                            "named '%s'", file, out[i]);
    free(out);
    if (rc < 0)
        for (int64_t i = 0; i < n; i++)
            if (renamed[i] != names[i])
                free(renamed[i]);
    return rc;
}

/* Bytes of one element of a fixed-size GGUF type; 0 for strings and arrays. */
static size_t elem_size(ggufq_value_type t)
{
    switch (t) {
    case GGUFQ_VT_UINT8: case GGUFQ_VT_INT8: case GGUFQ_VT_BOOL:
        return 1;
    case GGUFQ_VT_UINT16: case GGUFQ_VT_INT16:
        return 2;
    case GGUFQ_VT_UINT32: case GGUFQ_VT_INT32: case GGUFQ_VT_FLOAT32:
        return 4;
    case GGUFQ_VT_UINT64: case GGUFQ_VT_INT64: case GGUFQ_VT_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

bool gq_prune_is_layer_array(const char *key, const ggufq_value *v, const char *arch, int64_t block_count)
{
    size_t al = strlen(arch);
    if (v->type != GGUFQ_VT_ARRAY || elem_size(v->elem_type) == 0 || block_count <= 0 ||
        v->count != (uint64_t)block_count || al == 0 || strncmp(key, arch, al) != 0 || key[al] != '.')
        return false;
    return strcmp(key + al, ".rope.dimension_sections") != 0;
}

int gq_prune_set_layer_array(ggufq_writer *w, const char *key, const ggufq_value *v,
                             const ggufq_requant_options *opts)
{
    /* GGUF encoding after the type tag: element type (u32), count (u64), elements (little-endian) */
    const size_t es = elem_size(v->elem_type), head = 12;
    const uint64_t kept = v->count - opts->n_prune_layers;
    if (v->p_size != head + v->count * es)
        return GGUFQ_E_FORMAT;   /* cannot happen for a value the reader accepted */
    uint8_t *buf = malloc(head + (size_t)kept * es);
    if (!buf)
        return GGUFQ_E_NOMEM;
    memcpy(buf, v->p_data, 4);
    for (int b = 0; b < 8; b++)
        buf[4 + b] = (uint8_t)(kept >> (8 * b));
    size_t o = head, j = 0;
    for (uint64_t i = 0; i < v->count; i++) {
        if (j < opts->n_prune_layers && (uint64_t)opts->prune_layers[j] == i) {
            j++;
            continue;
        }
        memcpy(buf + o, v->p_data + head + i * es, es);
        o += es;
    }
    int rc = ggufq_writer_set_encoded(w, key, GGUFQ_VT_ARRAY, buf, o);
    free(buf);
    return rc;
}
