/*
 * sigbus.c — an input file that shrinks while ggufq reads it must not kill
 * the program with SIGBUS.
 *
 * The library maps input files read-only and checks every size against the
 * file's size at open time. If another process truncates the file afterwards,
 * the pages past the new end vanish from the mapping and the next read of one
 * of them raises SIGBUS in whichever thread touched it: the main thread, or a
 * worker thread inside a kernel. No size check can close that race, so the CLI
 * (never the library: a library must not own process-wide signal handlers)
 * installs a SIGBUS handler.
 *
 * The handler does not jump anywhere: siglongjmp cannot leave a worker thread,
 * and jumping out of library code would skip the writer's cleanup. Instead it
 * maps anonymous zero pages over the lost part of the mapping (from the faulting
 * page to the end of that mapping, found in /proc/self/maps; one page at a time
 * if /proc is not mounted), records which file and offset faulted, and returns.
 * The faulting read is retried and sees zeros; the computation goes on with
 * harmless data (zero scales, zero lengths) to the next checkpoint of the
 * command — every chunk in dequant, every progress callback in requant, the end
 * of info — which sees cli_input_fault(), stops, aborts the writer (the library
 * removes the temporary file) and reports the file and offset. Nothing derived
 * from the zeros is ever renamed into place: every checkpoint runs before the
 * writer's finish.
 *
 * Only open, read, close, mmap, sigaction, raise and lock-free atomics run in
 * the handler (mmap is not on POSIX's async-signal-safe list, but on Linux it
 * is a plain system call with no user-space lock).
 *
 * Not recovered (the process still dies of SIGBUS, as without the handler):
 * faults in anonymous or executable mappings, non-address faults (alignment,
 * machine check), SIGBUS sent with kill(2), and a failed mmap in the handler.
 * Those are bugs or hardware errors, not a file that changed.
 *
 * The CLI also ignores SIGXFSZ (cli_sigbus_install): a file grown past
 * RLIMIT_FSIZE is a write error with a message, not a silent death.
 *
 * One corner is not covered: `requant --keep-split` of a model without tensors
 * whose metadata pages vanish. No progress callback runs after the fault, so
 * the library finishes the shards; the CLI then fails, but only knows (and
 * removes) OUT, not the other shards' names.
 */
#include "sigbus.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli_util.h"

#define MAP_PATH_CAP 4096

static uintptr_t page_size = 4096;

/* Set by the first fault recovered; fault_* are written once, before fault_ready. */
static atomic_int fault_claimed;
static atomic_int fault_ready;
static char       fault_path[MAP_PATH_CAP];   /* the mapped file, "" if unknown */
static uint64_t   fault_offset;               /* file offset of the faulting byte */
static bool       fault_offset_known;
static unsigned   fault_major, fault_minor;
static uint64_t   fault_inode;

/* One line of /proc/self/maps. */
typedef struct map_line {
    uint64_t    start, end, offset, inode;
    unsigned    major, minor;
    char        perms[5];
    const char *path;     /* inside the line buffer; "" for anonymous mappings */
} map_line;

static const char *parse_hex(const char *p, uint64_t *v)
{
    uint64_t x = 0;
    const char *s = p;
    for (;; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
        else break;
        x = x << 4 | d;
    }
    *v = x;
    return p == s ? NULL : p;
}

/* "start-end perms offset major:minor inode   path" */
static bool parse_map_line(const char *p, map_line *m)
{
    uint64_t major, minor;
    if (!(p = parse_hex(p, &m->start)) || *p++ != '-' || !(p = parse_hex(p, &m->end)) || *p++ != ' ')
        return false;
    for (int i = 0; i < 4; i++) {
        if (*p == '\0')
            return false;
        m->perms[i] = *p++;
    }
    m->perms[4] = '\0';
    if (*p++ != ' ' || !(p = parse_hex(p, &m->offset)) || *p++ != ' ' || !(p = parse_hex(p, &major)) ||
        *p++ != ':' || !(p = parse_hex(p, &minor)) || *p++ != ' ')
        return false;
    m->major = (unsigned)major;
    m->minor = (unsigned)minor;
    m->inode = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        m->inode = m->inode * 10 + (uint64_t)(*p - '0');
    while (*p == ' ')
        p++;
    m->path = p;
    return true;
}

/*
 * The mapping holding addr, read from /proc/self/maps with async-signal-safe
 * calls only; its path is copied to path (cap bytes). 1 found, 0 not, -1 unreadable.
 */
static int find_mapping(uintptr_t addr, map_line *m, char *path, size_t cap)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[2048], line[MAP_PATH_CAP + 128];
    size_t len = 0;
    int found = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n && !found; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line - 1)
                    line[len++] = buf[i];
                continue;
            }
            line[len] = '\0';
            len = 0;
            if (parse_map_line(line, m) && addr >= m->start && addr < m->end) {
                size_t k = 0;
                for (; m->path[k] != '\0' && k < cap - 1; k++)
                    path[k] = m->path[k];
                path[k] = '\0';
                /* a file deleted since it was mapped */
                static const char deleted[] = " (deleted)";
                if (k >= sizeof deleted - 1 && memcmp(path + k - (sizeof deleted - 1), deleted,
                                                      sizeof deleted - 1) == 0)
                    path[k - (sizeof deleted - 1)] = '\0';
                found = 1;
            }
        }
        if (found)
            break;
    }
    close(fd);
    return found;
}

/* Let the fault kill the process as it would have without us. */
static void die_of_sigbus(const siginfo_t *si)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, NULL);
    if (si->si_code <= 0)   /* sent by kill/raise: no instruction will fault again */
        raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)uctx;
    int saved_errno = errno;
    if ((si->si_code != BUS_ADRERR && si->si_code != BUS_OBJERR) || si->si_addr == NULL) {
        die_of_sigbus(si);
        errno = saved_errno;
        return;
    }
    uintptr_t addr = (uintptr_t)si->si_addr;
    uintptr_t page = addr & ~(page_size - 1);
    uintptr_t end = page + page_size;
    map_line m;
    char path[MAP_PATH_CAP];
    path[0] = '\0';
    int found = find_mapping(addr, &m, path, sizeof path);
    if (found == 1) {
        if (m.inode == 0 || m.perms[2] == 'x') {   /* not a data file's mapping */
            die_of_sigbus(si);
            errno = saved_errno;
            return;
        }
        end = (uintptr_t)m.end;
    }
    void *z = mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (z == MAP_FAILED) {
        die_of_sigbus(si);
        errno = saved_errno;
        return;
    }
    if (atomic_exchange(&fault_claimed, 1) == 0) {
        if (found == 1) {
            memcpy(fault_path, path, sizeof fault_path);
            fault_offset = m.offset + (addr - (uintptr_t)m.start);
            fault_offset_known = true;
            fault_major = m.major;
            fault_minor = m.minor;
            fault_inode = m.inode;
        }
        atomic_store_explicit(&fault_ready, 1, memory_order_release);
    }
    errno = saved_errno;
}

void cli_sigbus_install(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = (uintptr_t)ps;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    /* An output past `ulimit -f`: write(2) then fails with EFBIG, reported like any
     * write error (the library also stops at the limit on its own; writer_file.c). */
    signal(SIGXFSZ, SIG_IGN);
}

bool cli_input_fault(void)
{
    return atomic_load(&fault_claimed) != 0;
}

bool cli_input_changed(const char *path, uint64_t mapped_size)
{
    if (cli_input_fault())
        return true;
    struct stat st;
    return mapped_size > 0 && path && stat(path, &st) == 0 && (uint64_t)st.st_size < mapped_size;
}

void cli_report_input_changed(const char *path, const char *out)
{
    char tail[1024] = "";
    if (out)
        snprintf(tail, sizeof tail, "; %s not written", out);
    struct stat st;
    bool have_st = path && stat(path, &st) == 0;
    if (!cli_input_fault() || !atomic_load_explicit(&fault_ready, memory_order_acquire) ||
        !fault_offset_known) {
        if (have_st)
            cli_error("%s: the file changed size while being read (now %llu bytes)%s", path,
                      (unsigned long long)st.st_size, tail);
        else
            cli_error("%s: the file changed size while being read (SIGBUS)%s", path ? path : "input", tail);
        return;
    }
    /* Name the file as the user did when the faulting mapping is that file. */
    bool same = have_st && st.st_ino == fault_inode && major(st.st_dev) == fault_major &&
                minor(st.st_dev) == fault_minor;
    const char *name = same || fault_path[0] == '\0' ? path : fault_path;
    struct stat nst;
    bool shrunk = !(name && stat(name, &nst) == 0 && (uint64_t)nst.st_size > fault_offset);
    if (shrunk)
        cli_error("%s: offset %llu: the file changed size while being read (SIGBUS)%s", name,
                  (unsigned long long)fault_offset, tail);
    else
        cli_error("%s: offset %llu: the mapped file could not be read (I/O error, SIGBUS)%s", name,
                  (unsigned long long)fault_offset, tail);
}

/* The test build (ggufq-testhooks) has its own, in tests/cli_testhooks.c. */
#ifndef GGUFQ_TEST_HOOKS
void cli_test_pause(const char *input, uint64_t input_size)
{
    (void)input;
    (void)input_size;
}
#endif
