/*
 * imatrix.c — importance matrices as llama-quantize loads them.
 *
 * GGUF imatrix (llama-imatrix's current output): keys imatrix.datasets
 * (array of strings), imatrix.chunk_count, imatrix.chunk_size; for each
 * weight W two F32 tensors, "W.in_sum2" [ne0, n_mat] and "W.counts"
 * [1, n_mat]. Values are in_sum2 / count per matrix (1 where count is 0).
 *
 * Legacy .dat: int32 n_entries, then per entry int32 name length, the name,
 * int32 ncall, int32 nval, nval floats (values are sums / ncall when
 * ncall > 0); optionally int32 chunk count, int32 length, dataset name.
 *
 * Entries are then filtered like llama-quantize: --exclude-weights drops
 * every entry whose name contains one of the strings, --include-weights keeps
 * only entries whose name contains one of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/errors.h"
#include "gguf/hashmap.h"
#include "requant/requant_internal.h"

typedef struct reader { const uint8_t *p; size_t len, pos; } reader;

static bool rd_i32(reader *r, int32_t *v)
{
    if (r->len - r->pos < 4)
        return false;
    uint32_t u = (uint32_t)r->p[r->pos] | ((uint32_t)r->p[r->pos + 1] << 8) |
                 ((uint32_t)r->p[r->pos + 2] << 16) | ((uint32_t)r->p[r->pos + 3] << 24);
    memcpy(v, &u, 4);
    r->pos += 4;
    return true;
}

static int add_entry(gq_imatrix *im, size_t *cap, const char *name, size_t name_len,
                     float *values, int64_t n)
{
    if (im->n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        gq_imatrix_entry *e = realloc(im->e, nc * sizeof *e);
        if (!e)
            return GGUFQ_E_NOMEM;
        im->e = e;
        *cap = nc;
    }
    char *nm = malloc(name_len + 1);
    if (!nm)
        return GGUFQ_E_NOMEM;
    memcpy(nm, name, name_len);
    nm[name_len] = '\0';
    im->e[im->n].name = nm;
    im->e[im->n].values = values;
    im->e[im->n].n = n;
    im->n++;
    return GGUFQ_OK;
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/*
 * The whole imatrix file, through one descriptor. Only a regular file will do:
 * a FIFO would block (at open already, without O_NONBLOCK) and /dev/zero never
 * ends. Reads stop at the size fstat gave, so every later allocation is
 * bounded by the file's size.
 */
static int read_imatrix_file(const char *path, uint8_t **data, size_t *size, ggufq_error *err)
{
    char eb[128];
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot open the imatrix file: %s", path,
                          gq_errno_text(e, eb, sizeof eb));
    }
    struct stat st;
    int rc = GGUFQ_OK;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot stat the imatrix file: %s", path,
                        gq_errno_text(e, eb, sizeof eb));
    } else if (!S_ISREG(st.st_mode)) {
        rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: the imatrix must be a regular file, not %s", path,
                        file_kind(st.st_mode));
    } else if ((uint64_t)st.st_size >= SIZE_MAX) {
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "%s: the imatrix file is too large to read", path);
    }
    size_t cap = rc == GGUFQ_OK ? (size_t)st.st_size : 0, got = 0;
    uint8_t *buf = rc == GGUFQ_OK ? malloc(cap ? cap : 1) : NULL;
    if (rc == GGUFQ_OK && !buf)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "%s: out of memory for the %zu-byte imatrix file", path, cap);
    while (rc == GGUFQ_OK && got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: offset %zu: cannot read the imatrix file: %s", path, got,
                            gq_errno_text(e, eb, sizeof eb));
        } else if (n == 0) {
            break;   /* it shrank meanwhile: parse what there is (the format checks its lengths) */
        } else {
            got += (size_t)n;
        }
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *data = buf;
    *size = got;
    return GGUFQ_OK;
}

static int load_legacy(const char *path, const uint8_t *data, size_t size, gq_imatrix *im, ggufq_error *err)
{
    reader r = { data, size, 0 };
    size_t cap = 0;
    int32_t n_entries;
    int rc = GGUFQ_OK;
    if (!rd_i32(&r, &n_entries) || n_entries < 1) {
        rc = gq_fail(err, GGUFQ_E_FORMAT, path, 0,
                     "no data in the imatrix file (no entry count, or not positive)");
        goto out;
    }
    for (int32_t i = 0; i < n_entries; i++) {
        int32_t len, ncall, nval;
        size_t at = r.pos;
        if (!rd_i32(&r, &len) || len < 0 || (size_t)len > r.len - r.pos) {
            rc = gq_fail(err, GGUFQ_E_FORMAT, path, at, "entry %d: bad name length", (int)i);
            goto out;
        }
        const char *name = (const char *)r.p + r.pos;
        r.pos += (size_t)len;
        at = r.pos;
        if (!rd_i32(&r, &ncall) || !rd_i32(&r, &nval) || nval < 1 ||
            (size_t)nval > (r.len - r.pos) / 4) {
            rc = gq_fail(err, GGUFQ_E_FORMAT, path, at, "entry %d (%.*s): bad value count", (int)i,
                             (int)strnlen(name, (size_t)len), name);
            goto out;
        }
        float *v = malloc((size_t)nval * sizeof *v);
        if (!v) { rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory"); goto out; }
        memcpy(v, r.p + r.pos, (size_t)nval * 4);
        r.pos += (size_t)nval * 4;
        if (ncall > 0)
            for (int32_t k = 0; k < nval; k++)
                v[k] /= (float)ncall;
        /* the name stops at its first NUL, as the C string llama.cpp builds */
        size_t nl = strnlen(name, (size_t)len);
        if ((rc = add_entry(im, &cap, name, nl, v, nval)) < 0) {
            free(v);
            rc = gq_rq_fail(err, rc, "out of memory");
            goto out;
        }
    }
    int32_t chunks, dlen;
    if (r.pos < r.len && rd_i32(&r, &chunks)) {
        im->chunks = chunks;
        if (rd_i32(&r, &dlen) && dlen > 0 && (size_t)dlen <= r.len - r.pos)
            im->dataset = strndup((const char *)r.p + r.pos, (size_t)dlen);
    } else {
        im->chunks = 0;
    }
out:
    return rc;
}

/* name without suffix, if it ends with it */
static bool strip_suffix(const char *name, const char *suffix, size_t *base_len)
{
    size_t n = strlen(name), s = strlen(suffix);
    if (n <= s || strcmp(name + n - s, suffix) != 0)
        return false;
    *base_len = n - s;
    return true;
}

static int load_gguf(const char *path, ggufq_file *f, gq_imatrix *im, ggufq_error *err)
{
    ggufq_value v;
    if (ggufq_get(f, "imatrix.datasets", &v) < 0 || ggufq_get(f, "imatrix.chunk_count", &v) < 0 ||
        ggufq_get(f, "imatrix.chunk_size", &v) < 0)
        return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: missing imatrix metadata (imatrix.datasets, "
                          "imatrix.chunk_count, imatrix.chunk_size)", path);
    uint64_t chunks = 0;
    if (ggufq_get(f, "imatrix.chunk_count", &v) == GGUFQ_OK && ggufq_value_uint(&v, &chunks) == GGUFQ_OK)
        im->chunks = (int64_t)chunks;
    ggufq_value ds, first;
    ggufq_str s;
    if (ggufq_get(f, "imatrix.datasets", &ds) == GGUFQ_OK && ds.type == GGUFQ_VT_ARRAY && ds.count > 0 &&
        ggufq_array_get(&ds, 0, &first) == GGUFQ_OK && ggufq_value_str(&first, &s) == GGUFQ_OK)
        im->dataset = strndup(s.ptr, (size_t)s.len);
    int64_t nt = ggufq_tensor_count(f);
    size_t cap = 0;
    for (int64_t i = 0; i < nt; i++) {
        ggufq_tensor_info sums, counts;
        size_t base;
        if (ggufq_tensor_at(f, i, &sums) < 0 || !strip_suffix(sums.name, ".in_sum2", &base))
            continue;
        char cname[GGUFQ_MAX_NAME_LEN + 16];
        if (base + sizeof ".counts" > sizeof cname)
            continue;
        snprintf(cname, sizeof cname, "%.*s.counts", (int)base, sums.name);
        int64_t ci = ggufq_find_tensor(f, cname);
        if (ci < 0 || ggufq_tensor_at(f, ci, &counts) < 0)
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: mismatched sums and counts for %.*s",
                              path, (int)base, sums.name);
        int64_t ne0 = sums.dims[0], ne1 = sums.n_elements / (ne0 ? ne0 : 1);
        if (sums.type != GGUFQ_TYPE_F32 || counts.type != GGUFQ_TYPE_F32 || counts.n_elements != ne1)
            return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: %s: expected F32 sums [ne0, n] and counts [1, n]",
                              path, sums.name);
        float *vals = malloc((size_t)(sums.n_elements ? sums.n_elements : 1) * sizeof *vals);
        if (!vals)
            return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
        const uint8_t *sp = sums.data, *cp = counts.data;
        for (int64_t j = 0; j < ne1; j++) {
            float c;
            memcpy(&c, cp + 4 * j, 4);
            for (int64_t k = 0; k < ne0; k++) {
                float x;
                memcpy(&x, sp + 4 * (j * ne0 + k), 4);
                vals[j * ne0 + k] = c > 0.0f ? x / c : 1.0f;
            }
        }
        if (add_entry(im, &cap, sums.name, base, vals, sums.n_elements) < 0) {
            free(vals);
            return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
        }
    }
    if (im->n == 0)
        return gq_rq_fail(err, GGUFQ_E_FORMAT, "%s: no imatrix data in the file", path);
    return GGUFQ_OK;
}

static bool contains_any(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] && strstr(name, list[i]))
            return true;
    return false;
}

static void drop_entry(gq_imatrix *im, size_t i)
{
    free(im->e[i].name);
    free(im->e[i].values);
    im->e[i] = im->e[--im->n];
}

static int by_name(const void *a, const void *b)
{
    const gq_imatrix_entry *x = a, *y = b;
    return strcmp(x->name, y->name);   /* names are unique after dedupe_keep_last */
}

void gq_imatrix_free(gq_imatrix *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->n; i++) {
        free(im->e[i].name);
        free(im->e[i].values);
    }
    free(im->e);
    free(im->dataset);
    memset(im, 0, sizeof *im);
}

typedef struct dedupe_ctx {
    const gq_imatrix_entry *e;
    uint64_t              *reads;
} dedupe_ctx;

static const char *entry_name(const void *ctx, uint64_t i, size_t *len)
{
    const dedupe_ctx *c = ctx;
    (*c->reads)++;
    *len = strlen(c->e[i].name);
    return c->e[i].name;
}

/* Later duplicates replace earlier ones (a map insert in llama.cpp), in O(n) through a hash map. */
static int dedupe_keep_last(gq_imatrix *im)
{
    gq_strmap map;
    memset(&map, 0, sizeof map);
    dedupe_ctx c = { im->e, &im->dedupe_name_reads };
    for (size_t i = 0; i < im->n; i++) {
        int64_t prev = gq_strmap_insert_grow(&map, im->e[i].name, strlen(im->e[i].name), i, entry_name, &c);
        if (prev == GQ_STRMAP_NOMEM) {
            gq_strmap_free(&map);
            return GGUFQ_E_NOMEM;
        }
        if (prev >= 0) {   /* the later entry takes the earlier one's place; the map still holds its name */
            free(im->e[prev].name);
            free(im->e[prev].values);
            im->e[prev] = im->e[i];
            im->e[i].name = NULL;
            im->e[i].values = NULL;
        }
    }
    gq_strmap_free(&map);
    size_t kept = 0;
    for (size_t i = 0; i < im->n; i++)
        if (im->e[i].name)
            im->e[kept++] = im->e[i];
    im->n = kept;
    return GGUFQ_OK;
}

int gq_imatrix_load(const char *path, const ggufq_requant_options *opts, gq_imatrix *im, ggufq_error *err)
{
    memset(im, 0, sizeof *im);
    im->chunks = -1;
    uint8_t *data = NULL;
    size_t size = 0;
    int rc = read_imatrix_file(path, &data, &size, err);
    if (rc < 0)
        return rc;
    if (size >= 4 && memcmp(data, "GGUF", 4) == 0) {
        ggufq_file *f = NULL;
        ggufq_error gerr;
        rc = ggufq_open_memory(data, size, path, NULL, &f, &gerr);
        if (rc < 0) {
            if (err)
                *err = gerr;
        } else {
            rc = load_gguf(path, f, im, err);
            ggufq_close(f);
        }
    } else {
        rc = load_legacy(path, data, size, im, err);
    }
    free(data);
    if (rc == GGUFQ_OK && im->n > 1 && dedupe_keep_last(im) < 0)
        rc = gq_rq_fail(err, GGUFQ_E_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; rc == GGUFQ_OK && i < im->n;) {
        bool drop = contains_any(im->e[i].name, opts->exclude_weights, opts->n_exclude_weights) ||
                    (opts->n_include_weights > 0 &&
                     !contains_any(im->e[i].name, opts->include_weights, opts->n_include_weights));
        if (drop)
            drop_entry(im, i);
        else
            i++;
    }
    for (size_t i = 0; rc == GGUFQ_OK && i < im->n; i++)
        for (int64_t k = 0; k < im->e[i].n; k++)
            if (!isfinite(im->e[i].values[k])) {
                rc = gq_rq_fail(err, GGUFQ_E_NONFINITE, "%s: imatrix entry %s contains a non-finite value (%g)",
                                path, im->e[i].name, (double)im->e[i].values[k]);
                break;
            }
    if (rc == GGUFQ_OK && im->n > 1)
        qsort(im->e, im->n, sizeof *im->e, by_name);
    if (rc < 0)
        gq_imatrix_free(im);
    return rc;
}

const gq_imatrix_entry *gq_imatrix_find(const gq_imatrix *im, const char *name)
{
    if (!im || im->n == 0)
        return NULL;
    gq_imatrix_entry key = { (char *)name, NULL, 0 };
    return bsearch(&key, im->e, im->n, sizeof *im->e, by_name);
}
