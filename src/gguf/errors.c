/*
 * errors.c — every ggufq_error of the library is filled here (gq_fail,
 * gq_vfail; the other layers' helpers are forwarding macros), and the public
 * status strings (ggufq_strerror).
 *
 * Messages quote text from files (keys, tensor names, values) and paths; a
 * hostile file must not be able to drive the terminal that prints them. So
 * every message is escaped here, once, as a whole: control characters (C0,
 * DEL, and C1 U+0080..U+009F, which some terminals obey too) become \n, \t,
 * \r or \xNN, and each byte that is not part of valid UTF-8 becomes \xNN.
 * Backslashes are left as they are: the escaping is then idempotent, so a
 * message that embeds another (already escaped) one is not escaped twice.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L   /* strerror_r under a strict -std=c11 */
#endif
#include "errors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* Length of the valid UTF-8 sequence at p (at most avail bytes), or 0 if there is none. */
static size_t utf8_length(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;   /* no overlong forms */
        hi = c == 0xED ? 0x9F : 0xBF;   /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;   /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

size_t gq_escape_text(char *dst, size_t cap, const char *src, size_t len)
{
    if (dst == NULL || cap == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_length(p + i, len - i);
        bool c1 = n == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0;
        char piece[12];
        const char *out = (const char *)p + i;
        size_t out_len = n;
        if (n == 0 || c1 || p[i] < 0x20 || p[i] == 0x7f) {
            switch (p[i]) {
            case '\n': out = "\\n"; break;
            case '\t': out = "\\t"; break;
            case '\r': out = "\\r"; break;
            default:
                if (c1)
                    snprintf(piece, sizeof piece, "\\x%02x\\x%02x", p[i], p[i + 1]);
                else
                    snprintf(piece, sizeof piece, "\\x%02x", p[i]);
                out = piece;
                break;
            }
            out_len = strlen(out);
            n = c1 ? 2 : 1;
        }
        if (out_len >= cap - o)   /* cut at a whole character or escape */
            break;
        memcpy(dst + o, out, out_len);
        o += out_len;
        i += n;
    }
    dst[o] = '\0';
    return o;
}

int gq_vfail(ggufq_error *err, int status, const char *file, uint64_t offset,
             const char *fmt, va_list ap)
{
    if (err == NULL)
        return status;
    err->status = status;
    err->offset = offset;

    /* The raw message may be longer than the result: escaping only grows it. */
    char raw[2 * sizeof err->message];
    size_t cap = sizeof raw;
    int n = 0;
    if (file != NULL && offset != GGUFQ_NO_OFFSET)
        n = snprintf(raw, cap, "%s: offset %" PRIu64 ": ", file, offset);
    else if (file != NULL)
        n = snprintf(raw, cap, "%s: ", file);
    else
        raw[0] = '\0';
    if (n < 0)
        n = 0;
    /* A very long file name leaves no room: keep what fits. */
    if ((size_t)n < cap)
        vsnprintf(raw + n, cap - (size_t)n, fmt, ap);
    gq_escape_text(err->message, sizeof err->message, raw, strlen(raw));
    return status;
}

int gq_fail(ggufq_error *err, int status, const char *file, uint64_t offset,
            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gq_vfail(err, status, file, offset, fmt, ap);
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

const char *ggufq_strerror(int status)
{
    switch ((ggufq_status)status) {
    case GGUFQ_OK:                 return "success";
    case GGUFQ_E_INVALID_ARG:      return "invalid argument";
    case GGUFQ_E_NOMEM:            return "out of memory";
    case GGUFQ_E_IO:               return "I/O error";
    case GGUFQ_E_NOT_IMPLEMENTED:  return "not implemented for this type";
    case GGUFQ_E_UNKNOWN_TYPE:     return "unknown tensor type";
    case GGUFQ_E_BAD_SIZE:         return "size is not a multiple of the block size";
    case GGUFQ_E_NEEDS_IMATRIX:    return "this type needs an importance matrix";
    case GGUFQ_E_ISA_UNSUPPORTED:  return "instruction set not supported by this CPU/OS";
    case GGUFQ_E_FORMAT:           return "malformed GGUF file";
    case GGUFQ_E_BAD_MAGIC:        return "not a GGUF file (bad magic)";
    case GGUFQ_E_BAD_VERSION:      return "unsupported GGUF version";
    case GGUFQ_E_BIG_ENDIAN:       return "big-endian GGUF files are not supported";
    case GGUFQ_E_TRUNCATED:        return "truncated file";
    case GGUFQ_E_BAD_KEY:          return "invalid metadata key";
    case GGUFQ_E_BAD_VALUE_TYPE:   return "invalid metadata value type";
    case GGUFQ_E_BAD_BOOL:         return "invalid bool value";
    case GGUFQ_E_NESTING:          return "arrays nested too deeply";
    case GGUFQ_E_DUPLICATE_KEY:    return "duplicate metadata key";
    case GGUFQ_E_DUPLICATE_TENSOR: return "duplicate tensor name";
    case GGUFQ_E_BAD_ALIGNMENT:    return "invalid general.alignment";
    case GGUFQ_E_BAD_DIMS:         return "invalid tensor dimensions";
    case GGUFQ_E_OVERFLOW:         return "size overflows 64 bits";
    case GGUFQ_E_BAD_SHAPE:        return "row length is not a multiple of the block size";
    case GGUFQ_E_BAD_OFFSET:       return "invalid tensor data offset";
    case GGUFQ_E_BAD_NAME:         return "invalid tensor name";
    case GGUFQ_E_NOT_FOUND:        return "not found";
    case GGUFQ_E_TYPE_MISMATCH:    return "value has a different type";
    case GGUFQ_E_LIMIT:            return "resource limit exceeded";
    case GGUFQ_E_SAME_FILE:        return "refusing to overwrite the input file";
    case GGUFQ_E_NO_SPACE:         return "no space left on device";
    case GGUFQ_E_INTERRUPTED:      return "interrupted";
    case GGUFQ_E_NONFINITE:        return "input contains NaN or Inf";
    case GGUFQ_E_STATE:            return "call not valid in the current state";
    }
    return "unknown status";
}
