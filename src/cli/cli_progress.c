/*
 * cli_progress.c — the progress bar on stderr and the JSON event lines on
 * stdout of `requant` and `dequant` (see cli_progress.h).
 */
#include "cli_progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "json.h"

#define BAR_MAX     30   /* cells of the bar when the terminal is wide */
#define BAR_MIN     10   /* fewer and the bar is left out */
#define NAME_MAX_W  32   /* columns of the tensor name column */
#define NAME_MIN_W   8
#define NAME_RATE_W 16   /* the speed and ETA are shown only if the name keeps this many */
#define NARROW      30   /* below this many columns: the percentage alone */

/* A bar line is on the terminal without its newline. Process-wide (one display at a
 * time), so cli_error can end it whenever it runs, even after the command returned. */
static bool bar_line_open;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int cli_progress_mode_named(const char *name)
{
    if (strcmp(name, "bar") == 0)
        return PROGRESS_BAR;
    if (strcmp(name, "json") == 0)
        return PROGRESS_JSON;
    if (strcmp(name, "none") == 0)
        return PROGRESS_NONE;
    return -1;
}

/* An error message must start on a line of its own, not after a half-drawn bar. */
static void end_bar_line(void)
{
    if (bar_line_open) {
        fputc('\n', stderr);
        bar_line_open = false;
    }
}

void cli_progress_init(cli_progress *p, const char *command, int mode, bool quiet)
{
    memset(p, 0, sizeof *p);
    p->command = command;
    p->tty = isatty(STDERR_FILENO) != 0;
    if (mode == PROGRESS_AUTO)
        mode = !quiet && p->tty ? PROGRESS_BAR : PROGRESS_NONE;
    if (quiet && mode != PROGRESS_JSON)
        mode = PROGRESS_NONE;
    p->mode = mode;
    p->t0 = now_seconds();
    p->last_tensor = -1;
    cli_set_before_error(end_bar_line);
}

bool cli_progress_is_json(const cli_progress *p)
{
    return p->mode == PROGRESS_JSON;
}

double cli_progress_elapsed(const cli_progress *p)
{
    return now_seconds() - p->t0;
}

/* ---- the bar ------------------------------------------------------------------ */

/* The terminal's width: stderr's window size, else $COLUMNS, else 80. */
static int terminal_columns(bool tty)
{
    struct winsize ws;
    if (tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long n;
    if (env && cli_parse_int(env, 1, 100000, &n))
        return (int)n;
    return 80;
}

/* Byte length of the first n characters of the UTF-8 text s (len bytes). */
static size_t chars_prefix(const char *s, size_t len, size_t n)
{
    size_t i = 0;
    for (size_t c = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c++ == n)
            break;
    }
    return i;
}

/*
 * The tensor name escaped as every name the CLI prints (cli_text_escaped),
 * in exactly `width` columns: padded, or its middle replaced by "…" (the
 * start says the layer, the end the tensor's role: both matter).
 */
static void fit_name(strbuf *line, const char *name, size_t width, bool pad)
{
    strbuf esc = { 0 };
    cli_text_escaped(&esc, name ? name : "", name ? strlen(name) : 0, SIZE_MAX, false);
    size_t w = cli_display_width(sb_str(&esc), esc.len);
    if (w <= width) {
        sb_append(line, sb_str(&esc), esc.len);
        for (; pad && w < width; w++)
            sb_putc(line, ' ');
    } else if (width > 0) {
        size_t head = (width - 1) / 2, tail = width - 1 - head;
        sb_append(line, sb_str(&esc), chars_prefix(sb_str(&esc), esc.len, head));
        sb_puts(line, "\xE2\x80\xA6");   /* U+2026 HORIZONTAL ELLIPSIS: one column */
        size_t from = chars_prefix(sb_str(&esc), esc.len, w - tail);
        sb_append(line, sb_str(&esc) + from, esc.len - from);
    }
    sb_free(&esc);
}

/*
 * "[#####.....] 45.2%  5/12 blk.0.attn_q.weight      123.4 MB/s  ETA 0:03"
 * in at most columns - 1 columns (writing the last column makes some
 * terminals wrap). What does not fit goes, in this order: the bar's width
 * down to BAR_MIN, the name's width down to NAME_RATE_W, the speed and ETA,
 * the bar, the name; below NARROW columns all but the percentage.
 */
static void format_bar(strbuf *line, const ggufq_progress *g, int columns, bool final)
{
    double frac = g->bytes_total ? (double)g->bytes_done / (double)g->bytes_total : 1.0;
    double mbs = g->elapsed_seconds > 0 ? (double)g->bytes_done / 1e6 / g->elapsed_seconds : 0.0;
    double eta = frac > 0 && !final ? g->elapsed_seconds * (1.0 - frac) / frac : 0.0;
    if (mbs > 999999.0)   /* the first update of a run can come after a few microseconds */
        mbs = 999999.0;
    if (eta > 5999 * 60 + 59)
        eta = 5999 * 60 + 59;
    size_t avail = columns > 1 ? (size_t)columns - 1 : 1;
    char stats[64], rate[64];
    int count_w = snprintf(NULL, 0, "%" PRId64, g->tensor_count);
    int ns = snprintf(stats, sizeof stats, "%5.1f%% %*" PRId64 "/%" PRId64, frac * 100.0, count_w,
                      g->tensor_index + 1, g->tensor_count);
    int nr = snprintf(rate, sizeof rate, "  %6.1f MB/s  ETA %d:%02d", mbs, (int)(eta / 60), (int)eta % 60);
    if (columns < NARROW || ns < 0 || nr < 0 || (size_t)ns >= sizeof stats || (size_t)nr >= sizeof rate ||
        (size_t)ns > avail) {
        sb_printf(line, "%5.1f%%", frac * 100.0);
        return;
    }
    size_t room = avail - (size_t)ns;
    const size_t bar_min = BAR_MIN + 3, name_min = NAME_MIN_W + 1;   /* "[...] ", " name" */
    bool with_rate = room >= (size_t)nr + bar_min + 1 + NAME_RATE_W;
    if (with_rate)
        room -= (size_t)nr;
    size_t name_w = 0, bar_w = 0;
    if (room >= bar_min + name_min) {
        name_w = room - bar_min - 1 < NAME_MAX_W ? room - bar_min - 1 : NAME_MAX_W;
        bar_w = room - name_w - 1 - 3 < BAR_MAX ? room - name_w - 1 - 3 : BAR_MAX;
    } else if (room >= name_min) {
        name_w = room - 1 < NAME_MAX_W ? room - 1 : NAME_MAX_W;
    }
    if (bar_w > 0) {
        size_t fill = (size_t)(frac * (double)bar_w);
        sb_putc(line, '[');
        for (size_t i = 0; i < bar_w; i++)
            sb_putc(line, i < fill ? '#' : '.');
        sb_puts(line, "] ");
    }
    sb_append(line, stats, (size_t)ns);
    if (name_w > 0) {
        sb_putc(line, ' ');
        fit_name(line, g->tensor_name, name_w, with_rate);
    }
    if (with_rate)
        sb_append(line, rate, (size_t)nr);
}

/* On a terminal: redrawn in place (\r, the line, erase to its end); elsewhere a plain line. */
static void draw_bar(cli_progress *p, const ggufq_progress *g, bool final)
{
    strbuf line = { 0 };
    format_bar(&line, g, terminal_columns(p->tty), final);
    if (p->tty)
        fprintf(stderr, "\r%s\033[K", sb_str(&line));
    else
        fprintf(stderr, "%s\n", sb_str(&line));
    fflush(stderr);
    sb_free(&line);
    bar_line_open = p->tty;
}

void cli_progress_end(cli_progress *p)
{
    (void)p;
    end_bar_line();
}

/* ---- JSON lines on stdout --------------------------------------------------------- */

/* Each line reaches a reader as soon as it is written (stdout is our own buffer). */
static void json_end_line(void)
{
    out_putc('\n');
    out_flush();
}

static void json_begin(const cli_progress *p, const char *event)
{
    out_printf("{\"event\":\"%s\",\"command\":\"%s\"", event, p->command);
}

static void json_field_string(const char *key, const char *value)
{
    out_printf(",\"%s\":", key);
    json_write_string(value ? value : "", value ? strlen(value) : 0);
}

static double bits_per_weight(uint64_t bytes, uint64_t weights)
{
    return weights ? (double)bytes * 8.0 / (double)weights : 0.0;
}

void cli_progress_start(cli_progress *p, const char *in, const char *out, const char *target,
                        int64_t tensor_count, uint64_t bytes_total, int threads)
{
    if (p->mode != PROGRESS_JSON)
        return;
    json_begin(p, "start");
    json_field_string("input", in);
    json_field_string("output", out);
    json_field_string("target", target);
    out_printf(",\"tensors\":%" PRId64 ",\"bytes_total\":%" PRIu64 ",\"threads\":%d}", tensor_count, bytes_total,
               threads);
    json_end_line();
}

static void json_tensor(const ggufq_progress *g)
{
    out_puts("{\"event\":\"tensor\",\"tensor\":");
    json_write_string(g->tensor_name ? g->tensor_name : "", g->tensor_name ? strlen(g->tensor_name) : 0);
    out_printf(",\"index\":%" PRId64 ",\"count\":%" PRId64 ",\"bytes_done\":%" PRIu64 ",\"bytes_total\":%" PRIu64
               ",\"bytes_written\":%" PRIu64 ",\"elapsed\":%.3f}",
               g->tensor_index, g->tensor_count, g->bytes_done, g->bytes_total, g->bytes_written,
               g->elapsed_seconds);
    json_end_line();
}

void cli_progress_update(cli_progress *p, const ggufq_progress *g)
{
    if (p->mode != PROGRESS_BAR && p->mode != PROGRESS_JSON)
        return;
    bool new_tensor = g->tensor_index != p->last_tensor;
    bool last = g->bytes_done == g->bytes_total && g->tensor_index + 1 == g->tensor_count;
    double t = now_seconds();
    double every = p->mode == PROGRESS_JSON ? 0.5 : p->tty ? 0.1 : 5.0;
    p->last_tensor = g->tensor_index;
    if (!new_tensor && !last && t - p->last_print < every)
        return;
    p->last_print = t;
    if (p->mode == PROGRESS_JSON)
        json_tensor(g);
    else
        draw_bar(p, g, last);
}

void cli_progress_summary(cli_progress *p, const cli_run_totals *s)
{
    if (p->mode != PROGRESS_JSON)
        return;
    json_begin(p, "summary");
    json_field_string("output", s->out);
    json_field_string("target", s->target);
    out_printf(",\"file_type\":%" PRId64 ",\"tensors\":%" PRId64 ",\"converted\":%" PRId64 ",\"copied\":%" PRId64
               ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"weights\":%" PRIu64
               ",\"bpw_in\":%.4f,\"bpw_out\":%.4f,\"seconds\":%.3f,\"threads\":%d}",
               s->file_type, s->tensors, s->converted, s->copied, s->bytes_in, s->bytes_out, s->weights,
               bits_per_weight(s->bytes_in, s->weights), bits_per_weight(s->bytes_out, s->weights), s->seconds,
               s->threads);
    json_end_line();
}

void cli_progress_fail(cli_progress *p, int status, int exit_status)
{
    cli_progress_end(p);
    if (p->mode != PROGRESS_JSON)
        return;
    const char *message = cli_last_error();
    json_begin(p, "error");
    out_printf(",\"status\":%d", status);
    json_field_string("error", ggufq_strerror(status));
    out_printf(",\"exit_status\":%d", exit_status);
    json_field_string("message", message[0] ? message : ggufq_strerror(status));
    out_putc('}');
    json_end_line();
}
