/*
 * cli_progress.h — the progress display of `requant` and `dequant`
 * (--progress bar|json|none).
 *
 *  - bar: on stderr. On a terminal one line redrawn in place (\r), fitted to
 *    the terminal's width (TIOCGWINSZ, else $COLUMNS, else 80; read again at
 *    each redraw), ended by a newline when the run ends or before an error
 *    message; below 30 columns only the percentage. Elsewhere (a file, a pipe)
 *    one plain line per update, without control characters.
 *  - json: one object per line on stdout, each with an "event": "start",
 *    "tensor" (per tensor, and every 0.5 s within one), then "summary" on
 *    success or "error" on failure as the last line. Human messages stay on
 *    stderr; with json, stdout carries nothing else.
 *  - none: nothing.
 * The default (PROGRESS_AUTO) is a bar when stderr is a terminal and --quiet
 * is not given; --quiet silences a bar, not an explicit --progress json.
 */
#ifndef GGUFQ_CLI_PROGRESS_H
#define GGUFQ_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufq.h"

enum cli_progress_mode { PROGRESS_AUTO, PROGRESS_BAR, PROGRESS_JSON, PROGRESS_NONE };

/* "bar", "json" or "none" as a mode; -1 for anything else. */
int cli_progress_mode_named(const char *name);

typedef struct cli_progress {
    const char *command;     /* "requant", "dequant": named in every JSON line */
    int         mode;        /* resolved: PROGRESS_BAR, PROGRESS_JSON or PROGRESS_NONE */
    bool        tty;         /* stderr is a terminal: the bar is redrawn in place */
    double      t0;          /* when cli_progress_init ran (monotonic seconds) */
    double      last_print;
    int64_t     last_tensor;
} cli_progress;

/*
 * Resolve `mode` (PROGRESS_AUTO: a bar if stderr is a terminal and not quiet;
 * quiet silences all but json) and start the clock. Only one display may be
 * shown at a time: its bar line is ended before any cli_error message.
 */
void cli_progress_init(cli_progress *p, const char *command, int mode, bool quiet);
bool cli_progress_is_json(const cli_progress *p);
/* Seconds since cli_progress_init. */
double cli_progress_elapsed(const cli_progress *p);

/* JSON "start": the files, the tensor count and input tensor bytes, the threads. */
void cli_progress_start(cli_progress *p, const char *in, const char *out, const char *target,
                        int64_t tensor_count, uint64_t bytes_total, int threads);
/* An update (the library's, or the CLI's own for dequant); shown at most every 0.1 s
 * on a terminal (every 5 s into a file, 0.5 s as JSON), and always for a new tensor
 * and the last update. */
void cli_progress_update(cli_progress *p, const ggufq_progress *g);
/* End the bar's line (a newline after it); call when the run returns, whatever the outcome. */
void cli_progress_end(cli_progress *p);

typedef struct cli_run_totals {
    const char *out;
    const char *target;      /* the TYPE as given, or the type name */
    int64_t     file_type;   /* general.file_type written */
    int64_t     tensors, converted, copied;
    uint64_t    bytes_in, bytes_out;   /* tensor data */
    uint64_t    weights;
    double      seconds;
    int         threads;
} cli_run_totals;

/* JSON "summary", the last line of a successful run (nothing in other modes). */
void cli_progress_summary(cli_progress *p, const cli_run_totals *s);
/*
 * JSON "error", the last line of a failed run (nothing in other modes): the
 * library status, the process exit status and the message already printed on
 * stderr (cli_last_error), else the status's description.
 */
void cli_progress_fail(cli_progress *p, int status, int exit_status);

#endif
