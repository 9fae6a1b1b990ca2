/*
 * errors.c — ggufq_error message formatting.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L   /* strerror_r under a strict -std=c11 */
#endif
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

/* The two strerror_r flavours; _Generic below picks the one the C library has. */
static const char *gnu_text(char *text, char *buf, size_t n, int e)
{
    if (text == NULL)
        snprintf(buf, n, "error %d", e);
    return text != NULL ? text : buf;
}

static const char *xsi_text(int rc, char *buf, size_t n, int e)
{
    if (rc != 0)
        snprintf(buf, n, "error %d", e);
    return buf;
}

const char *gq_errno_text(int e, char *buf, size_t n)
{
    if (buf == NULL || n == 0)
        return "error";
    buf[0] = '\0';
    return _Generic(strerror_r(e, buf, n), char *: gnu_text, default: xsi_text)
        (strerror_r(e, buf, n), buf, n, e);
}
