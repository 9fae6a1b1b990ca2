/*
 * stats_cache.c — the --stats-cache file.
 *
 * Format: the line "ggufq stats cache 1 <library version>\n", then records
 * of RECORD_BYTES: the key (content hash, importance hashes, shape, input
 * type, candidate type) and the metrics, little-endian. A file of another
 * version is ignored (kernels may have changed) and rewritten; any other
 * non-empty file is refused, never replaced (it may be the model itself, an
 * imatrix, anything a mistyped path names). Lookups: the
 * records read are sorted by key and searched; records added in a run are
 * appended and written back at the end through a temporary file renamed
 * over the old one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "measure/stats_cache.h"
#include "requant/requant_internal.h"

#define KEY_WORDS 9                     /* hash, 2 importance hashes, 4 dims, in type, used type */
#define VAL_WORDS 11                    /* n, 9 doubles, flags */
#define RECORD_WORDS (KEY_WORDS + VAL_WORDS)

typedef struct record { uint64_t w[RECORD_WORDS]; } record;

struct gq_stats_cache {
    char   *path;
    record *r;
    size_t  n_sorted, n, cap;
};

#define CACHE_MAGIC "ggufq stats cache "   /* every version's header starts so */
#define HEADER_CAP 64

static void make_header(char h[HEADER_CAP])
{
    snprintf(h, HEADER_CAP, CACHE_MAGIC "1 %s\n", ggufq_version());
}

/*
 * What is at path may be replaced by a cache: nothing, an empty file, or a
 * regular file that starts as a stats cache does.
 */
static int check_replaceable(const char *path, ggufq_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? GGUFQ_OK
                               : gq_rq_fail(err, GGUFQ_E_IO, "%s: stats cache: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))   /* a FIFO would block, a device never end */
        return gq_rq_fail(err, GGUFQ_E_IO, "%s: the stats cache must be a regular file", path);
    if (st.st_size == 0)
        return GGUFQ_OK;
    FILE *in = fopen(path, "rb");
    if (!in)
        return gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot open the stats cache: %s", path, strerror(errno));
    char start[sizeof CACHE_MAGIC] = { 0 };
    size_t got = fread(start, 1, sizeof CACHE_MAGIC - 1, in);
    fclose(in);
    if (got != sizeof CACHE_MAGIC - 1 || memcmp(start, CACHE_MAGIC, sizeof CACHE_MAGIC - 1) != 0)
        return gq_rq_fail(err, GGUFQ_E_FORMAT,
                          "%s: not a ggufq stats cache: refusing to replace it (name a new file)", path);
    return GGUFQ_OK;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = mix(h, v);
    }
    uint64_t tail = 0;
    memcpy(&tail, p + i, n - i);
    return mix(mix(h, tail), (uint64_t)n);
}

uint64_t gq_stats_cache_hash(const ggufq_file *f, const ggufq_tensor_info *t)
{
    const size_t step = (size_t)1 << 22;
    uint64_t h = 0x243f6a8885a308d3ull;
    const uint8_t *p = t->data;
    for (uint64_t off = 0; off < t->size; off += step) {
        const size_t n = t->size - off < step ? (size_t)(t->size - off) : step;
        h = hash_bytes(h, p + off, n);
        ggufq_file_release(f, p + off, n);
    }
    return mix(h, t->size) | 1;   /* never 0 */
}

static uint64_t hash_weights(const gq_err_importance *w, int64_t ncols)
{
    if (!w || !w->w)
        return 0;
    const size_t n = (size_t)(ncols * w->n_slices) * sizeof(float);
    return mix(hash_bytes(0x13198a2e03707344ull, (const uint8_t *)w->w, n), (uint64_t)w->slice_rows) | 1;
}

static void make_key(uint64_t *k, uint64_t hash, const ggufq_tensor_info *t, ggufq_type used,
                     const gq_err_importance *qw, const gq_err_importance *mw)
{
    k[0] = hash;
    k[1] = hash_weights(qw, t->dims[0]);
    k[2] = hash_weights(mw, t->dims[0]);
    for (int d = 0; d < 4; d++)
        k[3 + d] = (uint64_t)t->dims[d];
    k[7] = (uint64_t)t->type;
    k[8] = (uint64_t)used;
}

static int cmp_key(const void *x, const void *y)
{
    const record *a = x, *b = y;
    for (int i = 0; i < KEY_WORDS; i++)
        if (a->w[i] != b->w[i])
            return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

int gq_stats_cache_open(const char *path, gq_stats_cache **out, ggufq_error *err)
{
    gq_stats_cache *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    }
    *out = c;
    /* Before opening it: a FIFO must not be opened at all (fopen would wait for a writer). */
    int rc = check_replaceable(path, err);
    if (rc != GGUFQ_OK)
        return rc;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return errno == ENOENT ? GGUFQ_OK
                               : gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot open the stats cache: %s", path,
                                            strerror(errno));
    char line[HEADER_CAP] = { 0 }, h[HEADER_CAP];
    make_header(h);
    if (fread(line, 1, strlen(h), fp) == strlen(h) && memcmp(line, h, strlen(h)) == 0) {
        uint8_t buf[RECORD_WORDS * 8];
        while (fread(buf, 1, sizeof buf, fp) == sizeof buf) {
            if (c->n == c->cap) {
                size_t nc = c->cap ? 2 * c->cap : 256;
                record *r = realloc(c->r, nc * sizeof *r);
                if (!r) {
                    fclose(fp);
                    return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
                }
                c->r = r;
                c->cap = nc;
            }
            for (int i = 0; i < RECORD_WORDS; i++) {
                uint64_t v = 0;
                for (int b = 7; b >= 0; b--)
                    v = v << 8 | buf[i * 8 + b];
                c->r[c->n].w[i] = v;
            }
            c->n++;
        }
    }
    fclose(fp);
    if (c->n)
        qsort(c->r, c->n, sizeof *c->r, cmp_key);
    c->n_sorted = c->n;
    return GGUFQ_OK;
}

bool gq_stats_cache_get(const gq_stats_cache *c, uint64_t hash, const ggufq_tensor_info *t, ggufq_type used,
                        const gq_err_importance *quant_w, const gq_err_importance *metric_w, ggufq_metrics *m)
{
    record key;
    memset(&key, 0, sizeof key);
    make_key(key.w, hash, t, used, quant_w, metric_w);
    const record *r = c->n_sorted ? bsearch(&key, c->r, c->n_sorted, sizeof *c->r, cmp_key) : NULL;
    if (!r)
        return false;
    const uint64_t *v = r->w + KEY_WORDS;
    memset(m, 0, sizeof *m);
    m->n = (int64_t)v[0];
    m->rmse = bitsd(v[1]);
    m->max_abs = bitsd(v[2]);
    m->nmse = bitsd(v[3]);
    m->cosine = bitsd(v[4]);
    m->wmse = bitsd(v[5]);
    m->sum_sq_diff = bitsd(v[6]);
    m->sum_sq_ref = bitsd(v[7]);
    m->sum_sq_x = bitsd(v[8]);
    m->sum_ref_x = bitsd(v[9]);
    m->identical = v[10] & 1;
    m->has_wmse = (v[10] >> 1) & 1;
    return true;
}

void gq_stats_cache_put(gq_stats_cache *c, uint64_t hash, const ggufq_tensor_info *t, ggufq_type used,
                        const gq_err_importance *quant_w, const gq_err_importance *metric_w,
                        const ggufq_metrics *m)
{
    if (c->n == c->cap) {   /* out of memory: the entry is just not cached */
        size_t nc = c->cap ? 2 * c->cap : 256;
        record *r = realloc(c->r, nc * sizeof *r);
        if (!r)
            return;
        c->r = r;
        c->cap = nc;
    }
    uint64_t *w = c->r[c->n++].w;
    make_key(w, hash, t, used, quant_w, metric_w);
    uint64_t *v = w + KEY_WORDS;
    v[0] = (uint64_t)m->n;
    v[1] = dbits(m->rmse);
    v[2] = dbits(m->max_abs);
    v[3] = dbits(m->nmse);
    v[4] = dbits(m->cosine);
    v[5] = dbits(m->wmse);
    v[6] = dbits(m->sum_sq_diff);
    v[7] = dbits(m->sum_sq_ref);
    v[8] = dbits(m->sum_sq_x);
    v[9] = dbits(m->sum_ref_x);
    v[10] = (uint64_t)m->identical | (uint64_t)m->has_wmse << 1;
}

static int write_all(gq_stats_cache *c, ggufq_error *err)
{
    const size_t plen = strlen(c->path);
    char *tmp = malloc(plen + 16);
    if (!tmp)
        return gq_rq_fail(err, GGUFQ_E_NOMEM, "out of memory");
    memcpy(tmp, c->path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot write the stats cache: %s", c->path, strerror(errno));
        free(tmp);
        return rc;
    }
    FILE *fp = fdopen(fd, "wb");
    bool ok = fp != NULL;
    char h[HEADER_CAP];
    make_header(h);
    if (ok)
        ok = fputs(h, fp) >= 0;
    for (size_t i = 0; ok && i < c->n; i++) {
        uint8_t buf[RECORD_WORDS * 8];
        for (int k = 0; k < RECORD_WORDS; k++)
            for (int b = 0; b < 8; b++)
                buf[k * 8 + b] = (uint8_t)(c->r[i].w[k] >> (8 * b));
        ok = fwrite(buf, 1, sizeof buf, fp) == sizeof buf;
    }
    int e = errno;
    if (fp) {
        ok = (fflush(fp) == 0 && fsync(fd) == 0) && ok;
        e = ok ? e : errno;
        ok = fclose(fp) == 0 && ok;
    } else {
        close(fd);
    }
    int rc = GGUFQ_OK;
    if (ok && (rc = check_replaceable(c->path, err)) != GGUFQ_OK) {   /* changed since the start */
        unlink(tmp);
        free(tmp);
        return rc;
    }
    if (ok && rename(tmp, c->path) != 0) {
        e = errno;
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        rc = gq_rq_fail(err, GGUFQ_E_IO, "%s: cannot write the stats cache: %s", c->path, strerror(e));
    }
    free(tmp);
    return rc;
}

int gq_stats_cache_close(gq_stats_cache *c, bool keep, ggufq_error *err)
{
    if (!c)
        return GGUFQ_OK;
    int rc = keep && c->n > c->n_sorted ? write_all(c, err) : GGUFQ_OK;
    free(c->r);
    free(c->path);
    free(c);
    return rc;
}
