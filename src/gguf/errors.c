/*
 * errors.c — ggufq_error message formatting.
 */
#include "errors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gq_error_clear(ggufq_error *err)
{
    if (err == NULL)
        return;
    err->status = GGUFQ_OK;
    err->offset = GGUFQ_NO_OFFSET;
    err->message[0] = '\0';
}

int gq_fail(ggufq_error *err, int status, const char *file, uint64_t offset,
            const char *fmt, ...)
{
    if (err == NULL)
        return status;
    err->status = status;
    err->offset = offset;

    size_t cap = sizeof err->message;
    int n = 0;
    if (file != NULL && offset != GGUFQ_NO_OFFSET)
        n = snprintf(err->message, cap, "%s: offset %" PRIu64 ": ", file, offset);
    else if (file != NULL)
        n = snprintf(err->message, cap, "%s: ", file);
    else
        err->message[0] = '\0';
    if (n < 0)
        n = 0;
    /* A very long file name leaves no room: keep what fits, message stays NUL-terminated. */
    if ((size_t)n >= cap)
        return status;

    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}
