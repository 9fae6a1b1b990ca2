/*
 * writer_file.c — where the writer's bytes go and how they get their name:
 * every byte written passes through gq_writer_raw_write here (with the
 * failure-injection hooks and the I/O error messages); writer.c calls this
 * file, never the reverse.
 *
 * The destination is the caller's path with symbolic links followed: a link
 * stays a link, the file it leads to is what gets replaced. What is there
 * decides how it is written:
 *
 *   nothing, or a regular file: a temporary file in the destination's
 *     directory, fsynced and renamed over it at the end, so readers see the
 *     old file or the new one, never part of one. On Linux the temporary file
 *     is made with O_TMPFILE and has no name until the very end (linkat to a
 *     temporary name, then rename): a process killed while writing leaves
 *     nothing behind. Where O_TMPFILE is not supported it is a named
 *     ".<name>.tmp-XXXXXX" from the start. A replaced file keeps its
 *     permission bits (0777 part); a new one gets 0666 less the umask.
 *   a FIFO or a character device (/dev/null, a pipe into another program):
 *     the bytes are written straight into it, in order (the writer never
 *     seeks). This is the one case where a failed run has already sent part
 *     of its output.
 *   anything else (a directory, a socket, a block device): refused, and
 *     nothing is touched.
 *
 * No input of the run may be the destination (by path, symbolic or hard
 * link: the same device and inode); that is checked when the writer is
 * created and again just before the rename.
 *
 * RLIMIT_FSIZE: a write(2) that starts at or past the limit raises SIGXFSZ,
 * which kills the process unless it is handled or ignored. A library must not
 * change signal dispositions, so the writer never starts a write past the
 * limit: it writes up to it and then fails with EFBIG ("File too large") like
 * any other write error, whatever the process does with SIGXFSZ.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "writer_internal.h"

#define GQ_TMP_TRIES      100
#define GQ_MAX_SYMLINKS   40    /* Linux's MAXSYMLINKS */

static char *dup_n(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c != NULL) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* ------------------------------------------------------------------------- */
/* Failure injection (see writer_internal.h)                                 */
/* ------------------------------------------------------------------------- */

static uint64_t inject_at;
static int      inject_errno;
static size_t   inject_max_chunk;
static bool     inject_eintr;

void gq_writer_inject_failure(uint64_t at_byte, int err_no)
{
    inject_at = at_byte;
    inject_errno = err_no;
}

void gq_writer_inject_short_writes(size_t max_chunk, bool eintr)
{
    inject_max_chunk = max_chunk;
    inject_eintr = eintr;
}

static int inject_fsync_errno;

void gq_writer_inject_fsync_failure(int err_no)
{
    inject_fsync_errno = err_no;
}

/* ------------------------------------------------------------------------- */
/* Errors                                                                    */
/* ------------------------------------------------------------------------- */

static int status_of_errno(int e)
{
    return (e == ENOSPC || e == EDQUOT) ? GGUFQ_E_NO_SPACE : GGUFQ_E_IO;
}

/* " at offset N (tensor 'x')": the output byte a write failed at and what it belongs to. */
static void describe_position(const ggufq_writer *w, char *buf, size_t n)
{
    uint64_t pos = w->file_pos;
    int len = snprintf(buf, n, " at offset %llu", (unsigned long long)pos);
    if (len < 0 || (size_t)len >= n)
        return;
    if (w->state == GQ_W_META || pos < w->data_start) {
        snprintf(buf + len, n - (size_t)len, " (header)");
        return;
    }
    for (size_t i = 0; i < w->n_tensors; i++) {   /* offsets ascend; padding counts as its tensor's */
        const gq_wtensor *t = &w->tensors[i];
        uint64_t end = i + 1 < w->n_tensors ? w->data_start + w->tensors[i + 1].offset : UINT64_MAX;
        if (t->size > 0 && pos < end) {
            snprintf(buf + len, n - (size_t)len, " (tensor '%s')", t->name.s);
            return;
        }
    }
}

/* An I/O error on the output: the writer cannot continue. */
int gq_writer_io_fail(ggufq_writer *w, int e, const char *what)
{
    char eb[128], at[128] = "", file[4200];
    if (strcmp(what, "writing") == 0)
        describe_position(w, at, sizeof at);
    if (w->dest == GQ_DEST_STREAM)
        file[0] = '\0';   /* the message already starts with the path */
    else if (w->tmp_path != NULL)
        snprintf(file, sizeof file, " temporary file %s", w->tmp_path);
    else
        snprintf(file, sizeof file, " temporary file in %s", w->dir_path);
    int st = gq_writer_fail(w, status_of_errno(e), "%s%s failed%s: %s",
                            what, file, at, gq_errno_text(e, eb, sizeof eb));
    w->state = GQ_W_FAILED;
    w->failed_status = st;
    return st;
}

/* ------------------------------------------------------------------------- */
/* Raw output: every byte written goes through here                          */
/* ------------------------------------------------------------------------- */

/* write(2) all of p, retrying partial writes and EINTR; honours the injection hooks. */
int gq_writer_raw_write(ggufq_writer *w, const uint8_t *p, size_t n)
{
    static atomic_uint eintr_toggle;
    while (n > 0) {
        size_t chunk = n;
        if (inject_max_chunk != 0 && chunk > inject_max_chunk)
            chunk = inject_max_chunk;
        if (inject_errno != 0 && inject_at >= w->file_pos && inject_at - w->file_pos < chunk) {
            if (inject_at == w->file_pos)
                return gq_writer_io_fail(w, inject_errno, "writing");
            chunk = (size_t)(inject_at - w->file_pos);
        }
        /* never start a write past RLIMIT_FSIZE: the kernel would raise SIGXFSZ (see open_dest) */
        if (w->file_pos >= w->fsize_limit)
            return gq_writer_io_fail(w, EFBIG, "writing");
        if (w->fsize_limit - w->file_pos < chunk)
            chunk = (size_t)(w->fsize_limit - w->file_pos);
        ssize_t r;
        if (inject_eintr && (atomic_fetch_add(&eintr_toggle, 1) & 1)) {
            r = -1;
            errno = EINTR;
        } else {
            r = write(w->fd, p, chunk);
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return gq_writer_io_fail(w, errno, "writing");
        }
        if (r == 0)  /* not expected from a file, pipe or device; do not spin */
            return gq_writer_io_fail(w, EIO, "writing");
        p += r;
        n -= (size_t)r;
        w->file_pos += (uint64_t)r;
    }
    return GGUFQ_OK;
}

int gq_writer_flush(ggufq_writer *w)
{
    int st = gq_writer_raw_write(w, w->buf, w->buf_len);
    w->buf_len = 0;
    return st;
}

/* ------------------------------------------------------------------------- */
/* The destination                                                           */
/* ------------------------------------------------------------------------- */

/* The target of symbolic link `link` (read with readlink), relative to link's directory. */
static char *link_target(const char *link, int *e)
{
    size_t cap = 256;
    for (;;) {
        char *buf = malloc(cap);
        if (buf == NULL) {
            *e = ENOMEM;
            return NULL;
        }
        ssize_t n = readlink(link, buf, cap);
        if (n < 0 || n == 0) {
            *e = n < 0 ? errno : ENOENT;
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            const char *slash = strrchr(link, '/');
            if (buf[0] == '/' || slash == NULL)
                return buf;
            size_t dir_len = (size_t)(slash - link) + 1;
            char *joined = malloc(dir_len + (size_t)n + 1);
            if (joined != NULL) {
                memcpy(joined, link, dir_len);
                memcpy(joined + dir_len, buf, (size_t)n + 1);
            }
            free(buf);
            if (joined == NULL)
                *e = ENOMEM;
            return joined;
        }
        free(buf);
        cap *= 2;
    }
}

/* w->target: w->path with every symbolic link of its last component followed. */
static int resolve_target(ggufq_writer *w)
{
    char *cur = dup_n(w->path, strlen(w->path));
    if (cur == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory");
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            break;   /* not a link (or nothing there): the destination */
        int e = ELOOP;
        char *next = hops < GQ_MAX_SYMLINKS ? link_target(cur, &e) : NULL;
        if (next == NULL) {
            char eb[128];
            int rc = gq_writer_fail(w, e == ENOMEM ? GGUFQ_E_NOMEM : GGUFQ_E_IO,
                                    "cannot follow the symbolic link %s: %s", cur,
                                    gq_errno_text(e, eb, sizeof eb));
            free(cur);
            return rc;
        }
        free(cur);
        cur = next;
    }
    w->target = cur;
    return GGUFQ_OK;
}

/* " (<target>, where the symbolic link leads)" when the destination is not path itself. */
static void via_link(const ggufq_writer *w, char *buf, size_t n)
{
    buf[0] = '\0';
    if (strcmp(w->target, w->path) != 0)
        snprintf(buf, n, " (%s, where the symbolic link leads)", w->target);
}

/* w->dir_path and the base name of the target; the directory must exist. */
static int split_target(ggufq_writer *w, const char **base)
{
    const char *slash = strrchr(w->target, '/');
    *base = slash ? slash + 1 : w->target;
    if (**base == '\0')
        return gq_writer_fail(w, GGUFQ_E_IO, "output path names a directory");
    if (slash == NULL)
        w->dir_path = dup_n(".", 1);
    else
        w->dir_path = dup_n(w->target, slash == w->target ? 1 : (size_t)(slash - w->target));
    if (w->dir_path == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory");

    char eb[128];
    struct stat st;
    if (stat(w->dir_path, &st) != 0)
        return gq_writer_fail(w, GGUFQ_E_IO, "output directory %s %s", w->dir_path,
                              errno == ENOENT ? "does not exist" : gq_errno_text(errno, eb, sizeof eb));
    if (!S_ISDIR(st.st_mode))
        return gq_writer_fail(w, GGUFQ_E_IO, "%s is not a directory", w->dir_path);
    return GGUFQ_OK;
}

/* Decide w->dest from what is at the target now; refuse what cannot be written. */
static int classify_target(ggufq_writer *w)
{
    char eb[128], via[4200];
    struct stat st;
    if (stat(w->target, &st) != 0) {
        if (errno == ENOENT)
            return GGUFQ_OK;   /* a new file */
        return gq_writer_fail(w, GGUFQ_E_IO, "cannot examine %s: %s", w->target,
                              gq_errno_text(errno, eb, sizeof eb));
    }
    if (S_ISREG(st.st_mode))
        return GGUFQ_OK;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        w->dest = GQ_DEST_STREAM;
        return GGUFQ_OK;
    }
    const char *what = S_ISDIR(st.st_mode)  ? "a directory"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
    via_link(w, via, sizeof via);
    return gq_writer_fail(w, GGUFQ_E_IO,
                          "output path is %s%s: refusing to write there (OUT may be a regular file, "
                          "a FIFO or a character device)", what, via);
}

/* ------------------------------------------------------------------------- */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------- */

static int add_input(ggufq_writer *w, const char *path)
{
    gq_winput *in = &w->inputs[w->n_inputs];
    in->path = dup_n(path, strlen(path));
    if (in->path == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory");
    struct stat st;
    in->known = stat(path, &st) == 0;
    in->dev = in->known ? (uint64_t)st.st_dev : 0;
    in->ino = in->known ? (uint64_t)st.st_ino : 0;
    w->n_inputs++;
    return GGUFQ_OK;
}

static int record_inputs(ggufq_writer *w, const ggufq_writer_options *opts,
                         const char *const *inputs, size_t n_inputs)
{
    const char *opt_in = opts != NULL && opts->input != NULL ? ggufq_file_name(opts->input) : NULL;
    size_t n = n_inputs + (opt_in != NULL);
    if (n == 0)
        return GGUFQ_OK;
    w->inputs = calloc(n, sizeof *w->inputs);
    if (w->inputs == NULL)
        return gq_writer_fail(w, GGUFQ_E_NOMEM, "out of memory");
    int st = opt_in != NULL ? add_input(w, opt_in) : GGUFQ_OK;
    for (size_t i = 0; st == GGUFQ_OK && i < n_inputs; i++)
        if (inputs[i] != NULL)
            st = add_input(w, inputs[i]);
    return st;
}

/* Refuse a destination that is one of the inputs: as recorded at create, or as the path is now. */
static int check_not_input(ggufq_writer *w)
{
    struct stat out, now;
    if (w->n_inputs == 0 || stat(w->target, &out) != 0)
        return GGUFQ_OK;   /* nothing there (yet): it cannot be an input */
    for (size_t i = 0; i < w->n_inputs; i++) {
        const gq_winput *in = &w->inputs[i];
        bool same = in->known && in->dev == (uint64_t)out.st_dev && in->ino == (uint64_t)out.st_ino;
        if (!same && stat(in->path, &now) == 0)
            same = now.st_dev == out.st_dev && now.st_ino == out.st_ino;
        if (same)
            return gq_writer_fail(w, GGUFQ_E_SAME_FILE,
                                  "refusing to overwrite the input file %s (same file)", in->path);
    }
    return GGUFQ_OK;
}

/* ------------------------------------------------------------------------- */
/* Temporary names                                                           */
/* ------------------------------------------------------------------------- */

/* FNV-1a of the seed's bytes: scrambles the clock/pid seed of temporary names. */
static uint64_t scramble(uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++)
        h = (h ^ (uint8_t)(seed >> (8 * i))) * 0x100000001b3ull;
    return h;
}

/* Makes the file w->tmp_path names; 0 or an errno (EEXIST: try another name). */
typedef int (*make_name_fn)(ggufq_writer *w);

/*
 * Try "<dir>/.<base>.tmp-XXXXXX" names until make() succeeds or fails with
 * anything but EEXIST. On success w->tmp_path is the name; returns 0 or errno.
 */
static int with_temp_name(ggufq_writer *w, make_name_fn make)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static atomic_uint counter;  /* distinct names for writers created at the same instant */
    const char *slash = strrchr(w->target, '/');
    const char *base = slash ? slash + 1 : w->target;
    size_t base_len = strlen(base);
    if (base_len > 200)  /* keep the temporary name under NAME_MAX */
        base_len = 200;
    size_t cap = strlen(w->dir_path) + base_len + 32;
    w->tmp_path = malloc(cap);
    if (w->tmp_path == NULL)
        return ENOMEM;

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                    ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)w;
    int e = EEXIST;
    for (int attempt = 0; attempt < GQ_TMP_TRIES && e == EEXIST; attempt++) {
        uint64_t r = scramble(seed) + atomic_fetch_add(&counter, 1);
        seed = r;
        char sfx[7];
        for (int i = 0; i < 6; i++, r /= 62)
            sfx[i] = digits[r % 62];
        sfx[6] = '\0';
        snprintf(w->tmp_path, cap, "%s/.%.*s.tmp-%s", w->dir_path, (int)base_len, base, sfx);
        e = make(w);
    }
    if (e != 0) {
        free(w->tmp_path);
        w->tmp_path = NULL;
    }
    return e;
}

/*
 * open() with mode 0666 lets the kernel apply the umask (and default ACLs),
 * unlike mkstemp's fixed 0600.
 */
static int create_named(ggufq_writer *w)
{
    w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return w->fd >= 0 ? 0 : errno;
}

/* Name the O_TMPFILE file w->fd. */
static int link_anonymous(ggufq_writer *w)
{
#if defined(__linux__) && defined(O_TMPFILE)
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", w->fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, w->tmp_path, AT_SYMLINK_FOLLOW) == 0)
        return 0;
    int e = errno;
    /* no /proc: AT_EMPTY_PATH works too for processes with CAP_DAC_READ_SEARCH */
    if (e == ENOENT && access("/proc/self/fd", F_OK) != 0 &&
        linkat(w->fd, "", AT_FDCWD, w->tmp_path, AT_EMPTY_PATH) == 0)
        return 0;
    return e;
#else
    (void)w;
    return ENOTSUP;
#endif
}

static int temp_fail(ggufq_writer *w, int e, const char *what)
{
    char eb[128];
    return gq_writer_fail(w, e == ENOMEM ? GGUFQ_E_NOMEM : status_of_errno(e), "cannot %s a temporary file in %s: %s",
                          what, w->dir_path, gq_errno_text(e, eb, sizeof eb));
}

/* The temporary file: nameless with O_TMPFILE where the file system has it, else named. */
static int create_temp(ggufq_writer *w)
{
#if defined(__linux__) && defined(O_TMPFILE)
    w->fd = open(w->dir_path, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (w->fd >= 0) {
        w->anonymous = true;
        return GGUFQ_OK;
    }
    int e = errno;
    /* EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP/EINVAL: a file system without it */
    if (e != EISDIR && e != EOPNOTSUPP && e != ENOTSUP && e != EINVAL)
        return temp_fail(w, e, "create");
#endif
    int e2 = with_temp_name(w, create_named);
    return e2 == 0 ? GGUFQ_OK : temp_fail(w, e2, "create");
}

/* A FIFO or character device: opened for writing as it is (a FIFO waits for its reader). */
static int open_stream(ggufq_writer *w)
{
    char eb[128];
    w->fd = open(w->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (w->fd < 0) {
        int e = errno;
        if (e == EINTR)
            return gq_writer_fail(w, GGUFQ_E_INTERRUPTED, "interrupted while opening %s", w->target);
        return gq_writer_fail(w, status_of_errno(e), "cannot open %s for writing: %s", w->target,
                              gq_errno_text(e, eb, sizeof eb));
    }
    struct stat st;
    if (fstat(w->fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
        return gq_writer_fail(w, GGUFQ_E_IO, "%s changed while it was opened", w->target);
    return GGUFQ_OK;
}

int gq_writer_open_dest(ggufq_writer *w, const ggufq_writer_options *opts,
                        const char *const *inputs, size_t n_inputs)
{
    w->fsize_limit = UINT64_MAX;
    const char *base;
    int st = record_inputs(w, opts, inputs, n_inputs);
    if (st == GGUFQ_OK) st = resolve_target(w);
    if (st == GGUFQ_OK) st = split_target(w, &base);
    if (st == GGUFQ_OK) st = classify_target(w);
    if (st == GGUFQ_OK) st = check_not_input(w);
    if (st != GGUFQ_OK)
        return st;
    if (w->dest == GQ_DEST_STREAM)
        return open_stream(w);
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        w->fsize_limit = (uint64_t)rl.rlim_cur;
    return create_temp(w);
}

/* ------------------------------------------------------------------------- */
/* Finishing                                                                 */
/* ------------------------------------------------------------------------- */

/* A replaced file keeps its permission bits. */
static int keep_mode(ggufq_writer *w)
{
    struct stat st;
    if (stat(w->target, &st) != 0 || !S_ISREG(st.st_mode))
        return GGUFQ_OK;   /* a new file: the umask decided */
    if (fchmod(w->fd, st.st_mode & 0777) != 0)
        return gq_writer_io_fail(w, errno, "setting the mode of");
    return GGUFQ_OK;
}

static int close_fd(ggufq_writer *w)
{
    int fd = w->fd;
    w->fd = -1;
    if (close(fd) != 0 && errno != EINTR)
        return gq_writer_io_fail(w, errno, "closing");
    return GGUFQ_OK;
}

int gq_writer_make_durable(ggufq_writer *w)
{
    int st = gq_writer_flush(w);
    if (st == GGUFQ_OK && w->dest == GQ_DEST_REPLACE) {
        st = keep_mode(w);
        int e = inject_fsync_errno;
        if (st == GGUFQ_OK && e == 0 && fsync(w->fd) != 0)
            e = errno;
        if (st == GGUFQ_OK && e != 0)
            st = gq_writer_io_fail(w, e, "syncing");
    }
    /* a named temporary file is closed now; a nameless one stays open to be linked */
    if (st == GGUFQ_OK && !w->anonymous)
        st = close_fd(w);
    if (st == GGUFQ_OK)
        w->state = GQ_W_PREPARED;
    return st;
}

int gq_writer_stage(ggufq_writer *w)
{
    if (w->state == GQ_W_FAILED)
        return w->failed_status;
    if (w->state != GQ_W_PREPARED)
        return gq_writer_fail(w, GGUFQ_E_STATE, "the file is not complete, or already named");
    if (w->anonymous) {
        int e = with_temp_name(w, link_anonymous);
        if (e != 0)
            return temp_fail(w, e, "name");
        w->anonymous = false;
        int st = close_fd(w);
        if (st != GGUFQ_OK)
            return st;
    }
    w->state = GQ_W_STAGED;
    return GGUFQ_OK;
}

static int sync_directory(ggufq_writer *w)
{
    int fd = open(w->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = 0;
    if (fd < 0)
        e = errno;
    else if (fsync(fd) != 0)
        e = errno;
    if (fd >= 0)
        close(fd);
    /* some file systems cannot fsync a directory: nothing more can be done there */
    if (e == 0 || e == EINVAL || e == ENOTSUP)
        return GGUFQ_OK;
    char eb[128];
    return gq_writer_fail(w, GGUFQ_E_IO, "file written, but syncing directory %s failed: %s",
                          w->dir_path, gq_errno_text(e, eb, sizeof eb));
}

int gq_writer_commit(ggufq_writer *w)
{
    if (w->state == GQ_W_FAILED)
        return w->failed_status;
    if (w->state != GQ_W_STAGED)
        return gq_writer_fail(w, GGUFQ_E_STATE, "the file is not staged");
    if (w->dest == GQ_DEST_STREAM) {
        w->state = GQ_W_DONE;
        return GGUFQ_OK;
    }
    int st = check_not_input(w);
    if (st != GGUFQ_OK)
        return st;
    if (rename(w->tmp_path, w->target) != 0) {
        char eb[128];
        return gq_writer_fail(w, GGUFQ_E_IO, "cannot rename %s into place: %s", w->tmp_path,
                              gq_errno_text(errno, eb, sizeof eb));
    }
    free(w->tmp_path);  /* it is the output now: never unlink it */
    w->tmp_path = NULL;
    w->state = GQ_W_DONE;
    return sync_directory(w);
}

void gq_writer_discard(ggufq_writer *w)
{
    if (w->fd >= 0) {   /* an O_TMPFILE file vanishes with its last descriptor */
        close(w->fd);
        w->fd = -1;
    }
    if (w->tmp_path != NULL) {
        unlink(w->tmp_path);
        free(w->tmp_path);
        w->tmp_path = NULL;
    }
}

void gq_writer_free_dest(ggufq_writer *w)
{
    for (size_t i = 0; i < w->n_inputs; i++)
        free(w->inputs[i].path);
    free(w->inputs);
    free(w->target);
    free(w->tmp_path);
    free(w->dir_path);
}
