/*
 * cli_util.h — shared plumbing of the ggufq program: buffered stdout that
 * survives a closed pipe, a growable string, error reporting, option parsing.
 *
 * The program includes only the public header from the library.
 */
#ifndef GGUFQ_CLI_UTIL_H
#define GGUFQ_CLI_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

#if defined(__GNUC__)
#  define CLI_PRINTF_LIKE(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))
#else
#  define CLI_PRINTF_LIKE(fmt_idx, first_arg)
#endif

/* Exit statuses of the program. */
enum {
    CLI_EXIT_OK    = 0,  /* success */
    CLI_EXIT_FAIL  = 1,  /* invalid input file or operation failed */
    CLI_EXIT_USAGE = 2   /* unknown command or bad options */
};

/* ---- buffered standard output ------------------------------------------ */

/*
 * All normal output goes through these. SIGPIPE is ignored; once a write to
 * stdout fails, further output is dropped and out_broken() turns true, so long
 * listings stop early. A closed pipe (EPIPE) is not an error for the program:
 * out_finish() then exits quietly with the command's own status.
 */
void out_init(void);
void out_write(const void *data, size_t size);
void out_puts(const char *s);
void out_putc(char c);
void out_printf(const char *fmt, ...) CLI_PRINTF_LIKE(1, 2);
/* Spaces up to `width` display columns after having printed `used`. */
void out_pad(size_t used, size_t width);
/* Write what is buffered now (a line a reader waits for); a failure is reported by out_finish. */
void out_flush(void);
bool out_broken(void);
/* Flush; returns status, or CLI_EXIT_FAIL after reporting a write error other than EPIPE. */
int  out_finish(int status);

/* ---- growable string --------------------------------------------------- */

typedef struct strbuf {
    char  *ptr;     /* NUL-terminated when not NULL */
    size_t len;
    size_t cap;
    bool   oom;     /* an allocation failed: contents are incomplete */
} strbuf;

void sb_append(strbuf *sb, const char *s, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_putc(strbuf *sb, char c);
void sb_printf(strbuf *sb, const char *fmt, ...) CLI_PRINTF_LIKE(2, 3);
/* The contents ("" when empty). */
const char *sb_str(const strbuf *sb);
void sb_free(strbuf *sb);

/* ---- text from files --------------------------------------------------- */

/*
 * Length of the valid UTF-8 sequence starting at p (1-4); or 0 if there is
 * none, with *bad set to the length of the maximal invalid subpart (1-3):
 * the bytes to replace by one U+FFFD.
 */
size_t utf8_sequence_length(const unsigned char *p, size_t avail, size_t *bad);
/*
 * Append s (len bytes) fit for a terminal, stopping after max_chars
 * characters: backslash and control characters escaped (\\, \n, \t, \r,
 * else \xNN; C1 controls U+0080..U+009F as the \xNN of both their bytes),
 * each byte that is not valid UTF-8 as \xNN, and '"' as \" when quoted.
 * Returns true if it stopped early. Every name or string from a file that
 * the program prints in text goes through this (JSON has its own escaping).
 */
bool cli_text_escaped(strbuf *sb, const char *s, size_t len, size_t max_chars, bool quoted);
/* sb = s escaped (cli_text_escaped), for a table cell. */
void cli_text_name(strbuf *sb, const char *s);
/* Columns taken on a terminal: characters, not bytes (wide characters aside). */
size_t cli_display_width(const char *s, size_t len);

/* ---- errors ------------------------------------------------------------ */

/*
 * "ggufq: <message>" on stderr, with control characters and invalid UTF-8
 * escaped as the library escapes its messages (backslashes kept, so a
 * library message passes unchanged).
 */
void cli_error(const char *fmt, ...) CLI_PRINTF_LIKE(1, 2);
/* The text of the last cli_error message, as printed after "ggufq: " ("" if none). */
const char *cli_last_error(void);
/* fn (NULL: none) runs before cli_error writes: a progress bar ends its line there. */
void cli_set_before_error(void (*fn)(void));
/*
 * Report a library failure: the error's message if it has one (it names the
 * file and offset), else "<what>: <ggufq_strerror(status)>".
 */
void cli_report(int status, const ggufq_error *err, const char *what);

/* ---- numbers ----------------------------------------------------------- */

/* Parse a decimal integer in [min, max]; false if s is not one. */
bool cli_parse_int(const char *s, long min, long max, long *out);

/* Shortest decimal ("%.<p>g") that reads back as the same float / double. */
void cli_format_f32(char *buf, size_t size, float v);
void cli_format_f64(char *buf, size_t size, double v);

/* "1.67 MiB": bytes with a binary unit. */
void cli_format_bytes(char *buf, size_t size, uint64_t bytes);

/* Set by the SIGINT/SIGTERM handler that cli_catch_signals() installs. */
extern volatile sig_atomic_t cli_signal_caught;
void cli_catch_signals(void);
/* The exit status of a failed run: 128 + the signal that ended it (130 for
 * SIGINT, 143 for SIGTERM, as a shell reports a process killed by it) once the
 * clean-up is done, else CLI_EXIT_FAIL. */
int cli_failure_status(void);

#endif
