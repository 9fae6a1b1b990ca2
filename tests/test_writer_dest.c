/*
 * test_writer_dest.c — where the writer's bytes go (src/gguf/writer_file.c):
 * symbolic links are written through (the link stays), FIFOs and character
 * devices are streamed into, directories, sockets and block devices are
 * refused untouched; a replaced file keeps its permission bits; no input is
 * ever the destination; the temporary file has no name until the end (a
 * killed process leaves nothing); RLIMIT_FSIZE is an error, never SIGXFSZ;
 * and the staged finish (prepare, stage, commit) the requant layer uses.
 *
 * Device nodes are private copies made with mknod in the test's directory
 * (root only): the system's /dev/null is never used as an output.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf/writer_internal.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static char g_dir[4096];

static void use_tmpdir(const char *name)
{
    snprintf(g_dir, sizeof g_dir, "%s", tu_tmpdir(name));
}

/* "<g_dir>/<name>" in one of 64 rotating static buffers (a test holds up to a dozen). */
static const char *in_dir(const char *name)
{
    static char bufs[64][4200];
    static int next;
    char *b = bufs[next++ & 63];
    snprintf(b, sizeof bufs[0], "%s/%s", g_dir, name);
    return b;
}

/* The names in g_dir other than . and .., sorted, each followed by a space. */
static const char *listing(void)
{
    static char out[4096];
    char names[64][256];
    int n = 0;
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && n < 64)
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    for (int i = 1; i < n; i++)   /* insertion sort: a handful of names */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
        }
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(out, names[i], sizeof out - strlen(out) - 2);
        strcat(out, " ");
    }
    return out;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static bool has_text(const char *path, const char *text)
{
    size_t n = 0;
    char *p = tu_read_file(path, &n);
    bool same = p != NULL && n == strlen(text) && memcmp(p, text, n) == 0;
    free(p);
    return same;
}

static mode_t lmode(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode;
}

/* The tensor bytes of every test file. */
static uint8_t g_data[3u << 16];

static int start_small(const char *path, const ggufq_writer_options *opts, const char *const *inputs,
                       size_t n_inputs, size_t n, ggufq_writer **w, ggufq_error *e)
{
    for (size_t i = 0; i < sizeof g_data; i++)
        g_data[i] = (uint8_t)(i * 7 + 3);
    int st = gq_writer_create_guarded(path, opts, inputs, n_inputs, w, e);
    if (st != GGUFQ_OK)
        return st;
    const int64_t dims[1] = { (int64_t)n };
    assert_int_equal(ggufq_writer_set_string(*w, "general.architecture", "llama", 5), GGUFQ_OK);
    assert_int_equal(ggufq_writer_add_tensor(*w, "t", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    return ggufq_writer_write(*w, g_data, n);
}

/* A small GGUF file with n tensor bytes written to path; the status of create/write/finish. */
static int write_small(const char *path, size_t n, ggufq_error *e)
{
    ggufq_writer *w = NULL;
    int st = start_small(path, NULL, NULL, 0, n, &w, e);
    if (w == NULL)
        return st;
    if (st != GGUFQ_OK) {
        *e = *ggufq_writer_error(w);
        ggufq_writer_abort(w);
        return st;
    }
    return ggufq_writer_finish(w, e);
}

static void write_ok(const char *path)
{
    ggufq_error e;
    int st = write_small(path, 1000, &e);
    if (st != GGUFQ_OK)
        fprintf(stderr, "write %s: %s\n", path, e.message);
    assert_int_equal(st, GGUFQ_OK);
}

/* The bytes write_ok produces, from a file written in g_dir. */
static uint8_t *g_ref;
static size_t   g_ref_size;

static void make_ref(void)
{
    write_ok(in_dir("ref.gguf"));
    free(g_ref);
    g_ref = tu_read_file(in_dir("ref.gguf"), &g_ref_size);
    assert_non_null(g_ref);
}

static bool is_ref(const char *path)
{
    size_t n = 0;
    uint8_t *p = tu_read_file(path, &n);
    bool same = p != NULL && n == g_ref_size && memcmp(p, g_ref, n) == 0;
    free(p);
    return same;
}

static void expect_refused(const char *path, int status, const char *text)
{
    ggufq_error e;
    ggufq_writer *w = NULL;
    int st = write_small(path, 1000, &e);
    if (st != status || strstr(e.message, text) == NULL)
        fprintf(stderr, "%s: status %d, message '%s'; expected %d and '%s'\n", path, st, e.message,
                status, text);
    assert_int_equal(st, status);
    assert_null(w);
    assert_non_null(strstr(e.message, path));
    assert_non_null(strstr(e.message, text));
}

/* ------------------------------------------------------------------------- */
/* Symbolic links: written through, the link stays                           */
/* ------------------------------------------------------------------------- */

static void assert_link(const char *link, const char *to)
{
    char buf[4200];
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, to);
}

static void test_symlinks(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_links");
    make_ref();
    put(in_dir("real.gguf"), "old");
    assert_int_equal(symlink("real.gguf", in_dir("link.gguf")), 0);
    write_ok(in_dir("link.gguf"));
    assert_true(S_ISLNK(lmode(in_dir("link.gguf"))));
    assert_link(in_dir("link.gguf"), "real.gguf");
    assert_true(is_ref(in_dir("real.gguf")));

    /* a chain of links, and a link whose relative target is read from the link's directory */
    put(in_dir("real.gguf"), "old");
    assert_int_equal(symlink("link.gguf", in_dir("chain.gguf")), 0);
    write_ok(in_dir("chain.gguf"));
    assert_true(S_ISLNK(lmode(in_dir("chain.gguf"))) && S_ISLNK(lmode(in_dir("link.gguf"))));
    assert_true(is_ref(in_dir("real.gguf")));
    assert_int_equal(mkdir(in_dir("sub"), 0777), 0);
    assert_int_equal(symlink("../real2.gguf", in_dir("sub/up.gguf")), 0);
    write_ok(in_dir("sub/up.gguf"));
    assert_true(S_ISLNK(lmode(in_dir("sub/up.gguf"))));
    assert_true(is_ref(in_dir("real2.gguf")));   /* a link to nothing: the file is made there */
    assert_string_equal(listing(), "chain.gguf link.gguf real.gguf real2.gguf ref.gguf sub ");

    /* a loop, and links to what cannot be written: refused, nothing changes */
    assert_int_equal(symlink("loop2", in_dir("loop1")), 0);
    assert_int_equal(symlink("loop1", in_dir("loop2")), 0);
    expect_refused(in_dir("loop1"), GGUFQ_E_IO, "symbolic link");
    assert_int_equal(symlink("sub", in_dir("dirlink")), 0);
    expect_refused(in_dir("dirlink"), GGUFQ_E_IO, "a directory");
    assert_string_equal(listing(),
                        "chain.gguf dirlink link.gguf loop1 loop2 real.gguf real2.gguf ref.gguf sub ");
}

/* ------------------------------------------------------------------------- */
/* FIFOs and character devices: streamed into                                */
/* ------------------------------------------------------------------------- */

typedef struct fifo_reader {
    const char *path;
    size_t      stop_after;   /* close after this many bytes (0: read to the end) */
    uint8_t    *got;
    size_t      n;
} fifo_reader;

static void *read_fifo(void *arg)
{
    fifo_reader *r = arg;
    int fd = open(r->path, O_RDONLY);
    if (fd < 0)
        return NULL;
    r->got = malloc(1u << 22);
    for (;;) {
        ssize_t k = read(fd, r->got + r->n, 4096);
        if (k <= 0)
            break;
        r->n += (size_t)k;
        if (r->stop_after != 0 && r->n >= r->stop_after)
            break;
    }
    close(fd);
    return NULL;
}

static void test_fifo(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_fifo");
    make_ref();
    const char *fifo = in_dir("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    fifo_reader r = { fifo, 0, NULL, 0 };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    ggufq_error e;
    int st = write_small(fifo, 1000, &e);
    if (!S_ISFIFO(lmode(fifo)))   /* replaced: the reader waits on the old FIFO forever */
        pthread_cancel(t);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(S_ISFIFO(lmode(fifo)));
    assert_int_equal(st, GGUFQ_OK);
    assert_int_equal(r.n, g_ref_size);
    assert_memory_equal(r.got, g_ref, g_ref_size);
    free(r.got);
    assert_true(S_ISFIFO(lmode(fifo)));
    assert_string_equal(listing(), "fifo ref.gguf ");

    /* the reader goes away: EPIPE is a write error (this program ignores SIGPIPE, as the CLI does) */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    fifo_reader early = { fifo, 1, NULL, 0 };
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &early), 0);
    st = write_small(fifo, sizeof g_data, &e);
    assert_int_equal(pthread_join(t, NULL), 0);
    free(early.got);
    signal(SIGPIPE, old);
    assert_int_equal(st, GGUFQ_E_IO);
    assert_non_null(strstr(e.message, fifo));
    assert_non_null(strstr(e.message, "Broken pipe"));
    assert_true(S_ISFIFO(lmode(fifo)));
    assert_string_equal(listing(), "fifo ref.gguf ");
}

/* mknod a private character device; false (and a message) if this process may not */
static bool make_chardev(const char *path, unsigned major_no, unsigned minor_no)
{
    if (geteuid() != 0 || mknod(path, S_IFCHR | 0666, makedev(major_no, minor_no)) != 0) {
        printf("skip: cannot mknod %s (needs root and CAP_MKNOD)\n", path);
        return false;
    }
    return true;
}

static void test_char_devices(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_chr");
    make_ref();
    const char *null_copy = in_dir("null");   /* a copy of /dev/null (1, 3) */
    if (!make_chardev(null_copy, 1, 3))
        return;
    write_ok(null_copy);
    struct stat st;
    assert_int_equal(lstat(null_copy, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(st.st_rdev, makedev(1, 3));
    assert_string_equal(listing(), "null ref.gguf ");

    const char *full_copy = in_dir("full");   /* a copy of /dev/full (1, 7): every write is ENOSPC */
    if (make_chardev(full_copy, 1, 7)) {
        ggufq_error e;
        assert_int_equal(write_small(full_copy, 1000, &e), GGUFQ_E_NO_SPACE);
        assert_non_null(strstr(e.message, full_copy));
        assert_non_null(strstr(e.message, "writing failed at offset 0 (header)"));
        assert_true(S_ISCHR(lmode(full_copy)));
        assert_string_equal(listing(), "full null ref.gguf ");
    }
}

/* ------------------------------------------------------------------------- */
/* Directories, sockets, block devices: refused, untouched                    */
/* ------------------------------------------------------------------------- */

static void test_refused_kinds(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_refused");
    assert_int_equal(mkdir(in_dir("dir"), 0777), 0);
    expect_refused(in_dir("dir"), GGUFQ_E_IO, "a directory");
    assert_true(S_ISDIR(lmode(in_dir("dir"))));

    const char *sock = in_dir("sock");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(sock) < sizeof sa.sun_path) {
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        expect_refused(sock, GGUFQ_E_IO, "a socket");
        assert_true(S_ISSOCK(lmode(sock)));
        close(fd);
    } else {
        printf("skip: socket path too long\n");
        put(sock, "");
    }
    const char *blk = in_dir("blk");
    if (geteuid() == 0 && mknod(blk, S_IFBLK | 0600, makedev(7, 254)) == 0) {   /* never opened */
        expect_refused(blk, GGUFQ_E_IO, "a block device");
        assert_true(S_ISBLK(lmode(blk)));
    } else {
        printf("skip: cannot mknod a block device\n");
        put(blk, "");
    }
    assert_string_equal(listing(), "blk dir sock ");
}

/* ------------------------------------------------------------------------- */
/* Permission bits                                                           */
/* ------------------------------------------------------------------------- */

static void test_modes(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_modes");
    make_ref();
    static const mode_t modes[] = { 0600, 0444, 0750, 0640, 0777 };
    mode_t old_mask = umask(022);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *p = in_dir("m.gguf");
        put(p, "old");
        assert_int_equal(chmod(p, modes[i]), 0);
        write_ok(p);
        assert_true(is_ref(p));
        assert_int_equal(lmode(p) & 07777, modes[i]);
    }
    /* through a symbolic link: the file it leads to keeps its mode */
    assert_int_equal(chmod(in_dir("m.gguf"), 0600), 0);
    assert_int_equal(symlink("m.gguf", in_dir("l.gguf")), 0);
    write_ok(in_dir("l.gguf"));
    assert_int_equal(lmode(in_dir("m.gguf")) & 07777, 0600);
    /* a new file: 0666 less the umask */
    umask(027);
    write_ok(in_dir("new.gguf"));
    assert_int_equal(lmode(in_dir("new.gguf")) & 07777, 0640);
    umask(old_mask);
    assert_string_equal(listing(), "l.gguf m.gguf new.gguf ref.gguf ");
}

/* ------------------------------------------------------------------------- */
/* Inputs are never the destination                                          */
/* ------------------------------------------------------------------------- */

static int create_guarded(const char *path, const char *const *inputs, size_t n, ggufq_error *e)
{
    ggufq_writer *w = NULL;
    int st = start_small(path, NULL, inputs, n, 1000, &w, e);
    if (w == NULL)
        return st;
    return ggufq_writer_finish(w, e);
}

static void test_inputs(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_inputs");
    make_ref();
    put(in_dir("a.dat"), "input a");
    put(in_dir("b.dat"), "input b");
    const char *inputs[2] = { in_dir("a.dat"), in_dir("b.dat") };
    assert_int_equal(link(inputs[1], in_dir("hard.gguf")), 0);
    assert_int_equal(symlink("b.dat", in_dir("soft.gguf")), 0);
    const char *outs[] = { inputs[0], inputs[1], in_dir("hard.gguf"), in_dir("soft.gguf") };
    const char *names[] = { "a.dat", "b.dat", "b.dat", "b.dat" };
    for (size_t i = 0; i < 4; i++) {
        ggufq_error e;
        assert_int_equal(create_guarded(outs[i], inputs, 2, &e), GGUFQ_E_SAME_FILE);
        assert_non_null(strstr(e.message, "refusing to overwrite the input file"));
        assert_non_null(strstr(e.message, names[i]));
    }
    /* the destination becomes an input between create and finish: refused before the rename */
    ggufq_writer *w = NULL;
    ggufq_error e;
    assert_int_equal(start_small(in_dir("late.gguf"), NULL, inputs, 2, 1000, &w, &e), GGUFQ_OK);
    assert_int_equal(link(inputs[0], in_dir("late.gguf")), 0);
    assert_int_equal(ggufq_writer_finish(w, &e), GGUFQ_E_SAME_FILE);
    assert_true(has_text(inputs[0], "input a") && has_text(inputs[1], "input b"));
    assert_string_equal(listing(), "a.dat b.dat hard.gguf late.gguf ref.gguf soft.gguf ");
    /* another path is fine */
    assert_int_equal(create_guarded(in_dir("other.gguf"), inputs, 2, &e), GGUFQ_OK);
    assert_true(is_ref(in_dir("other.gguf")));
}

/* ------------------------------------------------------------------------- */
/* The temporary file: no name until the end                                 */
/* ------------------------------------------------------------------------- */

static bool tmpfile_works(void)
{
#ifdef O_TMPFILE
    int fd = open(g_dir, O_TMPFILE | O_WRONLY, 0600);
    if (fd >= 0) {
        close(fd);
        return true;
    }
#endif
    printf("skip: no O_TMPFILE in %s (a named temporary file is used there)\n", g_dir);
    return false;
}

static void test_nameless_temp(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_tmpfile");
    make_ref();
    if (!tmpfile_works())
        return;
    put(in_dir("x.gguf"), "old");
    ggufq_writer *w = NULL;
    ggufq_error e;
    assert_int_equal(start_small(in_dir("x.gguf"), NULL, NULL, 0, 1000, &w, &e), GGUFQ_OK);
    assert_string_equal(listing(), "ref.gguf x.gguf ");
    assert_int_equal(gq_writer_prepare(w), GGUFQ_OK);
    assert_string_equal(listing(), "ref.gguf x.gguf ");
    assert_int_equal(gq_writer_stage(w), GGUFQ_OK);   /* now it has a temporary name */
    assert_int_equal(strncmp(listing(), ".x.gguf.tmp-", 12), 0);
    assert_true(has_text(in_dir("x.gguf"), "old"));
    assert_int_equal(gq_writer_commit(w), GGUFQ_OK);
    ggufq_writer_abort(w);   /* frees; the committed file stays */
    assert_string_equal(listing(), "ref.gguf x.gguf ");
    assert_true(is_ref(in_dir("x.gguf")));

    /* abort at each step removes everything */
    for (int steps = 0; steps < 3; steps++) {
        put(in_dir("x.gguf"), "old");
        assert_int_equal(start_small(in_dir("x.gguf"), NULL, NULL, 0, 1000, &w, &e), GGUFQ_OK);
        if (steps >= 1) assert_int_equal(gq_writer_prepare(w), GGUFQ_OK);
        if (steps >= 2) assert_int_equal(gq_writer_stage(w), GGUFQ_OK);
        ggufq_writer_abort(w);
        assert_string_equal(listing(), "ref.gguf x.gguf ");
        assert_true(has_text(in_dir("x.gguf"), "old"));
    }

    /* a process killed while writing leaves nothing (it cannot clean up) */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (start_small(in_dir("x.gguf"), NULL, NULL, 0, sizeof g_data, &w, &e) == GGUFQ_OK &&
            gq_writer_prepare(w) == GGUFQ_OK)
            raise(SIGKILL);
        _exit(3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_string_equal(listing(), "ref.gguf x.gguf ");
    assert_true(has_text(in_dir("x.gguf"), "old"));
}

/* ------------------------------------------------------------------------- */
/* RLIMIT_FSIZE: a write error, never SIGXFSZ                                */
/* ------------------------------------------------------------------------- */

static void test_file_size_limit(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_fsize");
    make_ref();
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < g_ref_size) {
        printf("skip: hard RLIMIT_FSIZE below %zu bytes\n", g_ref_size);
        return;
    }
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_DFL);   /* SIGXFSZ would kill this process */
    put(in_dir("out.gguf"), "old");
    struct rlimit lim = { (rlim_t)g_ref_size - 1, old.rlim_max };
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ggufq_error e;
    int st = write_small(in_dir("out.gguf"), 1000, &e);
    lim.rlim_cur = (rlim_t)g_ref_size;   /* exactly the file's size: fine */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int st_exact = write_small(in_dir("exact.gguf"), 1000, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(st, GGUFQ_E_IO);
    assert_int_equal(st_exact, GGUFQ_OK);
    assert_true(is_ref(in_dir("exact.gguf")));
    assert_true(has_text(in_dir("out.gguf"), "old"));
    assert_string_equal(listing(), "exact.gguf out.gguf ref.gguf ");

    lim.rlim_cur = 100;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    signal(SIGXFSZ, SIG_DFL);
    st = write_small(in_dir("small.gguf"), 1000, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(st, GGUFQ_E_IO);
    assert_non_null(strstr(e.message, in_dir("small.gguf")));
    assert_non_null(strstr(e.message, "failed at offset 100 (header)"));
    assert_non_null(strstr(e.message, "File too large"));
    assert_string_equal(listing(), "exact.gguf out.gguf ref.gguf ");
}

/* ------------------------------------------------------------------------- */
/* The staged finish                                                         */
/* ------------------------------------------------------------------------- */

static void test_staged_finish_order(void **state)
{
    (void)state;
    use_tmpdir("writer_dest_staged");
    make_ref();
    ggufq_writer *w = NULL;
    ggufq_error e;
    assert_int_equal(start_small(in_dir("s.gguf"), NULL, NULL, 0, 1000, &w, &e), GGUFQ_OK);
    assert_int_equal(gq_writer_stage(w), GGUFQ_E_STATE);
    assert_int_equal(gq_writer_commit(w), GGUFQ_E_STATE);
    assert_int_equal(gq_writer_prepare(w), GGUFQ_OK);
    assert_int_equal(gq_writer_prepare(w), GGUFQ_E_STATE);
    assert_int_equal(ggufq_writer_write(w, g_data, 0), GGUFQ_E_STATE);
    assert_int_equal(gq_writer_commit(w), GGUFQ_E_STATE);
    assert_int_equal(gq_writer_stage(w), GGUFQ_OK);
    assert_int_equal(gq_writer_stage(w), GGUFQ_E_STATE);
    assert_int_equal(gq_writer_commit(w), GGUFQ_OK);
    assert_int_equal(gq_writer_commit(w), GGUFQ_E_STATE);
    ggufq_writer_abort(w);
    assert_true(is_ref(in_dir("s.gguf")));
    /* an incomplete file fails prepare */
    assert_int_equal(ggufq_writer_create(in_dir("t.gguf"), NULL, &w, &e), GGUFQ_OK);
    const int64_t dims[1] = { 1000 };
    assert_int_equal(ggufq_writer_add_tensor(w, "t", GGUFQ_TYPE_I8, 1, dims), GGUFQ_OK);
    assert_int_equal(ggufq_writer_write(w, g_data, 10), GGUFQ_OK);
    assert_int_equal(gq_writer_prepare(w), GGUFQ_E_STATE);
    assert_non_null(strstr(ggufq_writer_error(w)->message, "got 10 of its 1000 bytes"));
    ggufq_writer_abort(w);
    assert_string_equal(listing(), "ref.gguf s.gguf ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlinks),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_char_devices),
        cmocka_unit_test(test_refused_kinds),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_nameless_temp),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_staged_finish_order),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_ref);
    return rc;
}
