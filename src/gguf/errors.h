/*
 * errors.h — building ggufq_error messages ("<file>: offset <n>: <what>").
 * Shared by the GGUF reader and writer; no dependency on either.
 */
#ifndef GGUFQ_GGUF_ERRORS_H
#define GGUFQ_GGUF_ERRORS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

#if defined(__GNUC__)
#  define GQ_PRINTF_LIKE(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))
#else
#  define GQ_PRINTF_LIKE(fmt_idx, first_arg)
#endif

/*
 * Fill err (if not NULL) with status, offset and the message
 * "<file>: offset <offset>: <fmt...>" — or "<file>: <fmt...>" when offset is
 * GGUFQ_NO_OFFSET, or just "<fmt...>" when file is NULL. The whole message is
 * escaped with gq_escape_text (it quotes file text), then truncated to fit.
 * Returns status, so callers can write `return gq_fail(...)`. Every message
 * of the library is made here (or by gq_vfail).
 */
int gq_fail(ggufq_error *err, int status, const char *file, uint64_t offset,
            const char *fmt, ...) GQ_PRINTF_LIKE(5, 6);
int gq_vfail(ggufq_error *err, int status, const char *file, uint64_t offset,
             const char *fmt, va_list ap) GQ_PRINTF_LIKE(5, 0);

/*
 * src[0..len) made safe to print into dst (cap bytes, always NUL-terminated;
 * cut at a whole character or escape): control characters (C0, DEL, C1) become
 * \n, \t, \r or \xNN (C1: both bytes of its UTF-8 form), bytes that are not
 * valid UTF-8 become \xNN. Backslashes are kept, so escaping escaped text
 * changes nothing. Returns the length written.
 */
size_t gq_escape_text(char *dst, size_t cap, const char *src, size_t len);

/*
 * Thread-safe strerror: the text of errno value e, in buf (n bytes) or in
 * static storage. Handles both the GNU (char *) and the XSI (int) strerror_r.
 */
const char *gq_errno_text(int e, char *buf, size_t n);

/* Reset err (if not NULL) to "no error": status GGUFQ_OK, no offset, empty message. */
void gq_error_clear(ggufq_error *err);

#endif
