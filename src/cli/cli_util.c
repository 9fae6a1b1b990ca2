/*
 * cli_util.c — buffered stdout, growable strings, error reporting, parsing.
 */
#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- */
/* Buffered standard output                                                  */
/* ------------------------------------------------------------------------- */

/*
 * Our own buffer rather than stdio's, so that the errno of a failed write is
 * known for sure (EPIPE from a closed pipe is silent, anything else reported).
 */
#define OUT_BUF_SIZE 65536

static char   out_buf[OUT_BUF_SIZE];
static size_t out_len;
static int    out_errno;   /* errno of the first failed write, 0 if none */

void out_init(void)
{
    signal(SIGPIPE, SIG_IGN);
}

static void out_flush_buffer(void)
{
    size_t done = 0;
    while (done < out_len && out_errno == 0) {
        ssize_t n = write(STDOUT_FILENO, out_buf + done, out_len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            out_errno = errno;
        } else if (n == 0) {
            out_errno = EIO;
        } else {
            done += (size_t)n;
        }
    }
    out_len = 0;
}

void out_write(const void *data, size_t size)
{
    const char *p = data;
    while (size > 0 && out_errno == 0) {
        if (out_len == OUT_BUF_SIZE)
            out_flush_buffer();
        size_t room = OUT_BUF_SIZE - out_len;
        size_t n = size < room ? size : room;
        memcpy(out_buf + out_len, p, n);
        out_len += n;
        p += n;
        size -= n;
    }
}

void out_puts(const char *s)
{
    out_write(s, strlen(s));
}

void out_putc(char c)
{
    out_write(&c, 1);
}

void out_printf(const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        out_write(small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        out_errno = ENOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out_write(big, (size_t)n);
    free(big);
}

void out_pad(size_t used, size_t width)
{
    static const char spaces[] = "                                ";
    while (used < width) {
        size_t n = width - used;
        if (n > sizeof spaces - 1)
            n = sizeof spaces - 1;
        out_write(spaces, n);
        used += n;
    }
}

void out_flush(void)
{
    out_flush_buffer();
}

bool out_broken(void)
{
    return out_errno != 0;
}

int out_finish(int status)
{
    out_flush_buffer();
    if (out_errno == 0 || out_errno == EPIPE)
        return status;
    cli_error("error writing to standard output: %s", strerror(out_errno));
    return CLI_EXIT_FAIL;
}

/* ------------------------------------------------------------------------- */
/* Growable string                                                           */
/* ------------------------------------------------------------------------- */

static bool sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->ptr, cap);
    if (!p) {
        sb->oom = true;
        return false;
    }
    sb->ptr = p;
    sb->cap = cap;
    return true;
}

void sb_append(strbuf *sb, const char *s, size_t n)
{
    if (!sb_reserve(sb, n))
        return;
    memcpy(sb->ptr + sb->len, s, n);
    sb->len += n;
    sb->ptr[sb->len] = '\0';
}

void sb_puts(strbuf *sb, const char *s)
{
    sb_append(sb, s, strlen(s));
}

void sb_putc(strbuf *sb, char c)
{
    sb_append(sb, &c, 1);
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sb_append(sb, small, (size_t)n);
        return;
    }
    if (!sb_reserve(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->ptr + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

const char *sb_str(const strbuf *sb)
{
    return sb->ptr ? sb->ptr : "";
}

void sb_free(strbuf *sb)
{
    free(sb->ptr);
    sb->ptr = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
}

/* ------------------------------------------------------------------------- */
/* Text from files                                                           */
/* ------------------------------------------------------------------------- */

size_t utf8_sequence_length(const unsigned char *p, size_t avail, size_t *bad)
{
    unsigned char c = p[0];
    *bad = 1;
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;                    /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F;                    /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;                    /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (avail < 2 || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if (i >= avail || p[i] < 0x80 || p[i] > 0xBF) {
            *bad = i;                     /* a valid but incomplete prefix */
            return 0;
        }
    }
    return n;
}

/*
 * The escaping loop: control characters and invalid UTF-8 always; backslashes
 * (names: unambiguous) and '"' (quoted strings) on request. Without them the
 * escaping is idempotent, as the library's messages are (src/gguf/errors.c).
 */
static bool escape_into(strbuf *sb, const char *s, size_t len, size_t max_chars, bool backslash,
                        bool quoted)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t shown = 0, i = 0;
    while (i < len && shown < max_chars) {
        unsigned char c = p[i];
        size_t bad;
        size_t n = utf8_sequence_length(p + i, len - i, &bad);
        bool c1 = n == 2 && c == 0xC2 && p[i + 1] < 0xA0;   /* U+0080..U+009F */
        if (n > 0 && !c1 && c >= 0x20 && c != 0x7f && !(backslash && c == '\\') &&
            !(quoted && c == '"')) {
            sb_append(sb, s + i, n);
            i += n;
        } else if (c1) {
            sb_printf(sb, "\\x%02x\\x%02x", c, p[i + 1]);
            i += 2;
        } else {
            switch (c) {
            case '"':  sb_puts(sb, "\\\""); break;
            case '\\': sb_puts(sb, "\\\\"); break;
            case '\n': sb_puts(sb, "\\n"); break;
            case '\t': sb_puts(sb, "\\t"); break;
            case '\r': sb_puts(sb, "\\r"); break;
            default:   sb_printf(sb, "\\x%02x", c); break;
            }
            i += 1;
        }
        shown++;
    }
    return i < len;
}

bool cli_text_escaped(strbuf *sb, const char *s, size_t len, size_t max_chars, bool quoted)
{
    return escape_into(sb, s, len, max_chars, true, quoted);
}

void cli_text_name(strbuf *sb, const char *s)
{
    sb->len = 0;
    sb_puts(sb, "");
    cli_text_escaped(sb, s, strlen(s), SIZE_MAX, false);
}

size_t cli_display_width(const char *s, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            w++;
    return w;
}

/* ------------------------------------------------------------------------- */
/* Errors                                                                    */
/* ------------------------------------------------------------------------- */

static void (*before_error)(void);
static char last_error[4 * 1024 + 8];   /* a message of up to 1023 bytes, escaped */

void cli_set_before_error(void (*fn)(void))
{
    before_error = fn;
}

const char *cli_last_error(void)
{
    return last_error;
}

void cli_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Messages quote names from files: never a raw control byte on the terminal. */
    strbuf sb = { 0 };
    escape_into(&sb, msg, strlen(msg), SIZE_MAX, false, false);
    const char *text = sb.oom ? "(out of memory while reporting an error)" : sb_str(&sb);
    snprintf(last_error, sizeof last_error, "%s", text);
    if (before_error)
        before_error();
    fprintf(stderr, "ggufq: %s\n", text);
    sb_free(&sb);
}

void cli_report(int status, const ggufq_error *err, const char *what)
{
    if (err && err->message[0] != '\0')
        cli_error("%s", err->message);
    else if (what)
        cli_error("%s: %s", what, ggufq_strerror(status));
    else
        cli_error("%s", ggufq_strerror(status));
}

/* ------------------------------------------------------------------------- */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------- */

bool cli_parse_int(const char *s, long min, long max, long *out)
{
    if (!s || *s == '\0')
        return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

void cli_format_f32(char *buf, size_t size, float v)
{
    if (!isfinite(v)) {
        snprintf(buf, size, "%s", isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf"));
        return;
    }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, size, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

void cli_format_f64(char *buf, size_t size, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, size, "%s", isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf"));
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

void cli_format_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.2f %s", v, units[u]);
}

/* ------------------------------------------------------------------------- */
/* Signals                                                                   */
/* ------------------------------------------------------------------------- */

volatile sig_atomic_t cli_signal_caught;

static void on_signal(int sig)
{
    cli_signal_caught = sig;
}

int cli_failure_status(void)
{
    return cli_signal_caught ? 128 + (int)cli_signal_caught : CLI_EXIT_FAIL;
}

void cli_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}
