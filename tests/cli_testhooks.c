/*
 * cli_testhooks.c — the test hooks of `ggufq-testhooks`, a build of the CLI
 * for the CLI tests only (never installed). The installed `ggufq` and
 * libggufq read none of these variables.
 *
 *   GGUFQ_TEST_PAUSE_BEFORE_DATA=<ms>   cli_test_pause() sleeps (src/cli/sigbus.h)
 *   GGUFQ_FAULT_WRITE_AT=<byte>[:<errno>] | fsync[:<errno>]
 *       every writer of the process fails at that output byte (counted in each
 *       output file), as gq_writer_inject_failure() does, or its fsync fails;
 *       <errno> is ENOSPC (the default), EIO, EDQUOT, EFBIG, EROFS or a number.
 *       A malformed value is ignored.
 *
 * They let the CLI tests (tests/cli/failures.sh ...) fail or pause a real run
 * at a known point without a full disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli_util.h"
#include "cli/sigbus.h"
#include "gguf/writer_internal.h"

static int errno_named(const char *name)
{
    static const struct { const char *name; int value; } names[] = {
        { "ENOSPC", ENOSPC }, { "EIO", EIO }, { "EDQUOT", EDQUOT }, { "EFBIG", EFBIG }, { "EROFS", EROFS },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0)
            return names[i].value;
    char *end;
    long n = strtol(name, &end, 10);
    return *end == '\0' && n > 0 && n <= 4095 ? (int)n : 0;
}

__attribute__((constructor)) static void read_env_fault(void)
{
    const char *v = getenv("GGUFQ_FAULT_WRITE_AT");
    if (v == NULL || *v == '\0')
        return;
    bool fsync_fault = strncmp(v, "fsync", 5) == 0;
    char *end = (char *)v + 5;
    unsigned long long at = 0;
    if (!fsync_fault) {
        errno = 0;
        at = strtoull(v, &end, 10);
        if (end == v || errno != 0)
            return;
    }
    int e = ENOSPC;
    if (*end == ':')
        e = errno_named(end + 1);
    else if (*end != '\0')
        return;
    if (e == 0)
        return;
    if (fsync_fault)
        gq_writer_inject_fsync_failure(e);
    else
        gq_writer_inject_failure((uint64_t)at, e);
}

void cli_test_pause(const char *input, uint64_t input_size)
{
    const char *v = getenv("GGUFQ_TEST_PAUSE_BEFORE_DATA");
    long ms;
    if (!v || !cli_parse_int(v, 1, 600000, &ms))
        return;
    fputs("ggufq: test pause (GGUFQ_TEST_PAUSE_BEFORE_DATA)\n", stderr);   /* the tests wait for it */
    struct stat st;
    for (long left = ms; left > 0 && !cli_signal_caught; left -= 10) {
        if (input && stat(input, &st) == 0 && (uint64_t)st.st_size != input_size)
            break;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
}
