/*
 * shards.c — split models, named as llama.cpp's llama_split_path names them
 * (<prefix>-00001-of-00003.gguf). Shard 1 carries split.count; every shard
 * carries split.no (0-based) and split.tensors.count (all shards' tensors).
 * Every shard must be a file ggml can load (no nested arrays).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requant/requant_internal.h"

bool gq_split_path(char *buf, size_t cap, const char *prefix, int no, int count)
{
    int n = snprintf(buf, cap, "%s-%05d-of-%05d.gguf", prefix, no + 1, count);
    return n > 0 && (size_t)n < cap;
}

/* Length of path without a trailing "-NNNNN-of-NNNNN.gguf", or 0 if it has none. */
static size_t split_suffix_start(const char *path)
{
    static const size_t suffix_len = sizeof "-00001-of-00001.gguf" - 1;
    size_t len = strlen(path);
    if (len <= suffix_len)
        return 0;
    const char *s = path + len - suffix_len;
    for (size_t i = 0; i < suffix_len; i++) {
        bool digit = (i >= 1 && i <= 5) || (i >= 10 && i <= 14);
        if (digit) {
            if (s[i] < '0' || s[i] > '9')
                return 0;
        } else if (s[i] != "-00000-of-00000.gguf"[i]) {
            return 0;
        }
    }
    return len - suffix_len;
}

char *gq_split_prefix(const char *path)
{
    size_t len = split_suffix_start(path);
    if (len == 0) {
        len = strlen(path);
        if (len > 5 && strcmp(path + len - 5, ".gguf") == 0)
            len -= 5;
    }
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, path, len);
        p[len] = '\0';
    }
    return p;
}

static int get_uint_key(const ggufq_file *f, const char *key, uint64_t *out, bool *present)
{
    ggufq_value v;
    *present = false;
    if (ggufq_get(f, key, &v) != GGUFQ_OK)
        return GGUFQ_OK;
    *present = true;
    return ggufq_value_uint(&v, out);
}

void gq_shards_close(gq_shards *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        ggufq_close(s->files[i]);
    free(s->files);
    s->files = NULL;
    s->n = 0;
}

/*
 * ggml's GGUF reader refuses an array whose elements are arrays (valid GGUF,
 * but "invalid GGUF type 9" to it), so llama.cpp cannot quantize such a file
 * and an output carrying the key would not load: refuse it, naming the key.
 */
static int check_no_nested_arrays(const ggufq_file *f, ggufq_error *err)
{
    for (int64_t i = 0; i < ggufq_kv_count(f); i++) {
        ggufq_value v;
        if (ggufq_kv_value(f, i, &v) != GGUFQ_OK || v.type != GGUFQ_VT_ARRAY ||
            v.elem_type != GGUFQ_VT_ARRAY)
            continue;
        const char *key = ggufq_kv_key(f, i);
        return gq_rq_fail(err, GGUFQ_E_NESTING,
                          "%s: key '%.200s%s' is an array of arrays: valid GGUF, but ggml's GGUF reader "
                          "refuses nested arrays (llama.cpp cannot quantize this file, nor load an "
                          "output with this key)",
                          ggufq_file_name(f), key, strlen(key) > 200 ? "..." : "");
    }
    return GGUFQ_OK;
}

/* Open shard i (1-based name) of count with prefix; checks its split.no. */
static int open_shard(gq_shards *s, const char *prefix, int i, int count, ggufq_error *err)
{
    char path[4096];
    if (!gq_split_path(path, sizeof path, prefix, i, count))
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "%s: shard path too long", prefix);
    int rc = ggufq_open(path, NULL, &s->files[i], err);
    if (rc < 0)
        return rc;
    s->n = i + 1;
    if ((rc = check_no_nested_arrays(s->files[i], err)) < 0)
        return rc;
    uint64_t no = 0;
    bool present;
    rc = get_uint_key(s->files[i], "split.no", &no, &present);
    if (rc < 0 || !present || no != (uint64_t)i)
        return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: split.no is not %d", path, i);
    return GGUFQ_OK;
}

int gq_shards_open(const char *path, gq_shards *s, ggufq_error *err)
{
    memset(s, 0, sizeof *s);
    s->files = calloc(1, sizeof *s->files);
    if (!s->files)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    int rc = ggufq_open(path, NULL, &s->files[0], err);
    if (rc < 0) {
        gq_shards_close(s);
        return rc;
    }
    s->n = 1;
    if ((rc = check_no_nested_arrays(s->files[0], err)) < 0) {
        gq_shards_close(s);
        return rc;
    }
    uint64_t count = 1, no = 0, total = 0;
    bool has_count, has_no, has_total;
    if ((rc = get_uint_key(s->files[0], "split.count", &count, &has_count)) < 0 ||
        (rc = get_uint_key(s->files[0], "split.no", &no, &has_no)) < 0 ||
        (rc = get_uint_key(s->files[0], "split.tensors.count", &total, &has_total)) < 0) {
        gq_shards_close(s);
        return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: split.* keys of the wrong type", path);
    }
    if (!has_count || count <= 1)
        return GGUFQ_OK;
    if (count > GQ_MAX_SHARDS || no != 0) {
        gq_shards_close(s);
        return gq_rq_fail(err, GGUFQ_E_FORMAT, no != 0 ? "%s: not the first shard of a split model (split.no %llu)"
                                                       : "%s: split.count %llu is too large",
                          path, (unsigned long long)(no != 0 ? no : count));
    }
    size_t pre_len = split_suffix_start(path);
    if (pre_len == 0) {
        gq_shards_close(s);
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "%s: split.count is %llu but the name is not <prefix>-00001-of-%05llu.gguf",
                          path, (unsigned long long)count, (unsigned long long)count);
    }
    char *prefix = strndup(path, pre_len);
    ggufq_file **files = prefix ? realloc(s->files, (size_t)count * sizeof *files) : NULL;
    if (!files) {
        free(prefix);
        gq_shards_close(s);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    s->files = files;
    for (int i = 1; i < (int)count && rc == GGUFQ_OK; i++)
        rc = open_shard(s, prefix, i, (int)count, err);
    free(prefix);
    if (rc == GGUFQ_OK && has_total) {
        uint64_t n = 0;
        for (int i = 0; i < s->n; i++)
            n += (uint64_t)ggufq_tensor_count(s->files[i]);
        if (n != total)
            rc = gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: split.tensors.count is %llu but the shards hold %llu tensors",
                            path, (unsigned long long)total, (unsigned long long)n);
    }
    if (rc < 0)
        gq_shards_close(s);
    return rc;
}
