/*
 * cmd_requant.c — `ggufq requant IN TYPE OUT [options]`: a thin layer over
 * ggufq_requant_plan / ggufq_plan_run, planned once (argument parsing, the --dry-run table,
 * progress on stderr, the summary).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_progress.h"
#include "cmd_measure.h"
#include "cmd_requant_auto.h"
#include "sigbus.h"

#define MAX_LIST 256
#define MAX_PRUNE 1024                        /* --prune-layers entries (layers of a model) */
#define MAX_TYPE_FILE_BYTES ((off_t)16 << 20) /* a --tensor-type-file larger than this is refused */

typedef struct requant_args {
    const char *in, *target, *out;
    ggufq_requant_options o;
    const char **tensor_types;   /* --tensor-type and --tensor-type-file rules, in order (owned_texts) */
    size_t tensor_types_cap;
    const char *include[MAX_LIST], *exclude[MAX_LIST], *kv[MAX_LIST];
    int32_t prune[MAX_PRUNE];
    size_t n_prune;
    int progress;
    bool quiet;
    bool stats;                  /* --stats: measure OUT against IN after writing it */
    auto_args au;                /* TYPE auto: the budget options (cmd_requant_auto.c) */
    bool is_auto;
} requant_args;

/*
 * The rules list and the --tensor-type-file texts it points into live as long
 * as the command: they are freed at exit.
 */
static struct { void **p; size_t n, cap; } owned_texts;

static void free_owned_texts(void)
{
    for (size_t i = 0; i < owned_texts.n; i++)
        free(owned_texts.p[i]);
    free(owned_texts.p);
    owned_texts.p = NULL;
    owned_texts.n = owned_texts.cap = 0;
}

/* Keep p until exit (or free it now and return false when even that fails). */
static bool own(void *p)
{
    if (owned_texts.n == owned_texts.cap) {
        size_t cap = owned_texts.cap ? 2 * owned_texts.cap : 8;
        void **q = realloc(owned_texts.p, cap * sizeof *q);
        if (!q) {
            free(p);
            return false;
        }
        if (!owned_texts.p)
            atexit(free_owned_texts);
        owned_texts.p = q;
        owned_texts.cap = cap;
    }
    owned_texts.p[owned_texts.n++] = p;
    return true;
}

typedef struct progress_state {
    cli_progress display;
    bool    paused;     /* the test pause hook ran */
    const char *in;     /* the input and its size, for the pause hook */
    uint64_t in_size;
} progress_state;

/* Options taking a value. */
static const char *const value_opts[] = {
    "--threads", "--imatrix", "--output-tensor-type", "--token-embedding-type", "--tensor-type",
    "--tensor-type-file", "--prune-layers", "--include-weights", "--exclude-weights", "--override-kv",
    "--progress", NULL
};

static bool takes_value(const char *opt)
{
    if (auto_takes_value(opt))
        return true;
    for (int i = 0; value_opts[i]; i++)
        if (strcmp(opt, value_opts[i]) == 0)
            return true;
    return false;
}

static int parse_type_opt(const char *opt, const char *val, int *out)
{
    int t = ggufq_type_from_name(val);
    if (t < 0)
        return cli_usage_error("requant", "%s: unknown ggml type '%s'", opt, val);
    *out = t;
    return CLI_EXIT_OK;
}

static int add_list(const char **list, size_t *n, const char *opt, const char *val)
{
    if (*n >= MAX_LIST)
        return cli_usage_error("requant", "too many %s options (at most %d)", opt, MAX_LIST);
    list[(*n)++] = val;
    return CLI_EXIT_OK;
}

/* Append a REGEX=TYPE rule (the list grows: a --tensor-type-file may hold thousands). */
static int add_tensor_type(requant_args *a, const char *rule)
{
    if (a->o.n_tensor_types == a->tensor_types_cap) {
        size_t cap = a->tensor_types_cap ? 2 * a->tensor_types_cap : 64;
        const char **p = malloc(cap * sizeof *p);
        if (!p || !own((void *)p)) {
            cli_error("out of memory");
            return CLI_EXIT_FAIL;
        }
        if (a->o.n_tensor_types)
            memcpy(p, a->tensor_types, a->o.n_tensor_types * sizeof *p);
        a->tensor_types = p;   /* the old list is freed at exit with the rest */
        a->tensor_types_cap = cap;
    }
    a->tensor_types[a->o.n_tensor_types++] = rule;
    return CLI_EXIT_OK;
}

/* The library's verdict on one rule (its format, type and regular expression); NULL if good. */
static const char *rule_error(const char *rule, ggufq_error *err)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = "q8_0";
    o.tensor_types = &rule;
    o.n_tensor_types = 1;
    return ggufq_requant_options_check(&o, err) == GGUFQ_OK ? NULL : err->message;
}

/* A regular file of at most MAX_TYPE_FILE_BYTES, read whole and NUL-terminated into *out (malloc'd). */
static int read_type_file(const char *path, char **out, size_t *size)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int rc = cli_usage_error("requant", "--tensor-type-file %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > MAX_TYPE_FILE_BYTES) {
        cli_usage_error("requant", "--tensor-type-file %s: %s", path, !S_ISREG(st.st_mode)
                        ? "not a regular file" : "larger than 16 MiB: not a list of tensor types");
        close(fd);
        return CLI_EXIT_USAGE;
    }
    char *text = malloc((size_t)st.st_size + 1);
    int rc = CLI_EXIT_OK;
    if (!text) {
        cli_error("out of memory reading %s", path);
        rc = CLI_EXIT_FAIL;
    }
    size_t n = 0;
    while (text && n <= (size_t)st.st_size) {   /* reads one byte more, to see a file that grew */
        ssize_t r = read(fd, text + n, (size_t)st.st_size + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0) {
                rc = cli_usage_error("requant", "--tensor-type-file %s: %s", path, strerror(errno));
                free(text);
                text = NULL;
            }
            break;
        }
        n += (size_t)r;
        if (n > (size_t)st.st_size) {   /* grown while read: take what stat said */
            n = (size_t)st.st_size;
            break;
        }
    }
    close(fd);
    if (!text)
        return rc;
    text[n] = '\0';
    *out = text;
    *size = n;
    return CLI_EXIT_OK;
}

/*
 * --tensor-type-file: llama-quantize reads the file with `file >> word`:
 * REGEX=TYPE rules separated by any white space (spaces, tabs, newlines;
 * blank lines are nothing), each as a --tensor-type at this point of the
 * command line. ggufq also takes a word starting with '#' as a comment up to
 * the end of its line (llama-quantize would refuse such a file). A bad rule
 * is a usage error naming the file and line.
 */
static int read_tensor_type_file(requant_args *a, const char *path)
{
    size_t size = 0;
    char *text = NULL;
    int rc = read_type_file(path, &text, &size);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (!own(text)) {
        cli_error("out of memory");
        return CLI_EXIT_FAIL;
    }
    long line = 1;
    for (size_t i = 0; i < size;) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\0')
            return cli_usage_error("requant", "%s:%ld: a NUL byte: not a list of tensor types", path, line);
        if (isspace(c)) {
            line += c == '\n';
            i++;
            continue;
        }
        if (c == '#') {   /* a comment, to the end of the line */
            while (i < size && text[i] != '\n')
                i++;
            continue;
        }
        const char *rule = text + i;
        while (i < size && text[i] != '\0' && !isspace((unsigned char)text[i]))
            i++;
        if (i < size && text[i] == '\0')
            return cli_usage_error("requant", "%s:%ld: a NUL byte: not a list of tensor types", path, line);
        char end = text[i];
        text[i] = '\0';   /* the rule is the word; text[size] is already NUL */
        ggufq_error err;
        const char *why = rule_error(rule, &err);
        if (why)
            return cli_usage_error("requant", "%s:%ld: %s", path, line, why);
        if ((rc = add_tensor_type(a, rule)) != CLI_EXIT_OK)
            return rc;
        if (i < size) {
            line += end == '\n';
            i++;
        }
    }
    return CLI_EXIT_OK;
}

/*
 * --prune-layers L0,L1,...: block numbers separated by commas (spaces around
 * a number are allowed). Repeated options add up; the list is sorted and
 * repeats dropped at the end, as llama-quantize does.
 */
static int add_prune_layers(requant_args *a, const char *val)
{
    const char *p = val;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char num[16];
        while (len > 0 && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)p[len - 1]))
            len--;
        long n = -1;
        bool digits = len > 0 && len < sizeof num;
        for (size_t i = 0; digits && i < len; i++)
            digits = isdigit((unsigned char)p[i]) != 0;
        if (digits) {
            memcpy(num, p, len);
            num[len] = '\0';
        }
        if (!digits || !cli_parse_int(num, 0, INT32_MAX, &n))
            return cli_usage_error("requant", "--prune-layers: '%.*s' is not a layer number (expected "
                                   "L0,L1,... such as 3,7,11)", (int)len, p);
        if (a->n_prune == MAX_PRUNE)
            return cli_usage_error("requant", "--prune-layers: more than %d layers", MAX_PRUNE);
        a->prune[a->n_prune++] = (int32_t)n;
        if (!comma)
            return CLI_EXIT_OK;
        p = comma + 1;
    }
}

static int cmp_int32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

static void sort_prune_layers(requant_args *a)
{
    qsort(a->prune, a->n_prune, sizeof a->prune[0], cmp_int32);
    size_t k = 0;
    for (size_t i = 0; i < a->n_prune; i++)
        if (k == 0 || a->prune[i] != a->prune[k - 1])
            a->prune[k++] = a->prune[i];
    a->n_prune = k;
}

static int apply_value(requant_args *a, const char *opt, const char *val)
{
    ggufq_requant_options *o = &a->o;
    if (auto_takes_value(opt))
        return auto_apply_value(&a->au, opt, val);
    if (strcmp(opt, "--threads") == 0) {
        long n;
        if (!cli_parse_int(val, 0, 1024, &n))
            return cli_usage_error("requant", "--threads must be a number from 0 (all cores) to 1024, not '%s'",
                                   val);
        o->nthreads = (int)n;
    } else if (strcmp(opt, "--imatrix") == 0) {
        o->imatrix_path = val;
    } else if (strcmp(opt, "--output-tensor-type") == 0) {
        return parse_type_opt(opt, val, &o->output_tensor_type);
    } else if (strcmp(opt, "--token-embedding-type") == 0) {
        return parse_type_opt(opt, val, &o->token_embedding_type);
    } else if (strcmp(opt, "--tensor-type") == 0) {
        const char *eq = strchr(val, '=');
        if (!eq || eq == val || ggufq_type_from_name(eq + 1) < 0)
            return cli_usage_error("requant", "--tensor-type expects REGEX=TYPE with a ggml type, not '%s'", val);
        return add_tensor_type(a, val);
    } else if (strcmp(opt, "--tensor-type-file") == 0) {
        return read_tensor_type_file(a, val);
    } else if (strcmp(opt, "--prune-layers") == 0) {
        return add_prune_layers(a, val);
    } else if (strcmp(opt, "--include-weights") == 0) {
        return add_list(a->include, &o->n_include_weights, opt, val);
    } else if (strcmp(opt, "--exclude-weights") == 0) {
        return add_list(a->exclude, &o->n_exclude_weights, opt, val);
    } else if (strcmp(opt, "--override-kv") == 0) {
        return add_list(a->kv, &o->n_kv_overrides, opt, val);
    } else if (strcmp(opt, "--progress") == 0) {
        if (strcmp(val, "bar") == 0) a->progress = PROGRESS_BAR;
        else if (strcmp(val, "json") == 0) a->progress = PROGRESS_JSON;
        else if (strcmp(val, "none") == 0) a->progress = PROGRESS_NONE;
        else return cli_usage_error("requant", "--progress must be bar, json or none, not '%s'", val);
    }
    return CLI_EXIT_OK;
}

static int apply_flag(requant_args *a, const char *opt)
{
    ggufq_requant_options *o = &a->o;
    if (strcmp(opt, "--leave-output-tensor") == 0) o->leave_output_tensor = true;
    else if (strcmp(opt, "--pure") == 0) o->pure = true;
    else if (strcmp(opt, "--keep-split") == 0) o->keep_split = true;
    else if (strcmp(opt, "--dry-run") == 0) o->dry_run = true;
    else if (strcmp(opt, "--quiet") == 0 || strcmp(opt, "-q") == 0) a->quiet = true;
    else if (strcmp(opt, "--allow-requantize") == 0) o->allow_requantize = true;
    else if (strcmp(opt, "--stats") == 0) a->stats = true;
    else return cli_usage_error("requant", "unknown option '%s'", opt);
    return CLI_EXIT_OK;
}

/* CLI_EXIT_OK, a usage error's status, or -1 after printing the help. */
/*
 * IN TYPE OUT (ggufq's order), or llama-quantize's IN OUT TYPE [NTHREADS] when
 * that is unambiguous: the middle argument is no TYPE and the last one is. A
 * TYPE that is neither is a usage error, with the library's message.
 */
static bool is_target(const char *s, ggufq_error *err)
{
    ggufq_requant_options o;
    ggufq_requant_options_init(&o);
    o.target = s;
    return ggufq_requant_options_check(&o, err) == GGUFQ_OK;
}

static int order_positionals(requant_args *a, const char *const pos[4], int n_pos)
{
    ggufq_error err;
    const bool middle_is_type = is_target(pos[1], &err);
    const bool last_is_type = n_pos >= 3 && is_target(pos[2], NULL);
    a->in = pos[0];
    if (middle_is_type && n_pos <= 3) {
        a->target = pos[1];
        a->out = pos[2];
        return CLI_EXIT_OK;
    }
    if (!middle_is_type && last_is_type) {   /* llama-quantize: IN OUT TYPE [NTHREADS] */
        a->out = pos[1];
        a->target = pos[2];
        if (n_pos == 4) {
            long n;
            if (!cli_parse_int(pos[3], 0, 1024, &n))
                return cli_usage_error("requant", "NTHREADS must be a number from 0 (all cores) to 1024, "
                                       "not '%s'", pos[3]);
            a->o.nthreads = (int)n;
        }
        return CLI_EXIT_OK;
    }
    if (n_pos == 4)
        return cli_usage_error("requant", "too many arguments ('%s'): IN TYPE OUT, or llama-quantize's "
                               "IN OUT TYPE [NTHREADS]", pos[3]);
    return cli_usage_error("requant", "%s (usage: IN TYPE OUT, or llama-quantize's IN OUT TYPE)",
                           err.message);
}

static int parse_args(int argc, char **argv, requant_args *a)
{
    const char *pos[4] = { NULL, NULL, NULL, NULL };
    int n_pos = 0;
    bool options_done = false;
    ggufq_requant_options_init(&a->o);
    a->o.allow_requantize = false;   /* llama-quantize's default: quantized inputs need --allow-requantize */
    a->progress = PROGRESS_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (n_pos == 4)
                return cli_usage_error("requant", "too many arguments ('%s')", arg);
            pos[n_pos++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) { options_done = true; continue; }
        if (cli_is_help_option(arg)) { cli_help("requant"); return -1; }
        char name[32];
        const char *val = NULL, *opt = arg;
        const char *eq = strchr(arg, '=');
        if (eq && (size_t)(eq - arg) < sizeof name) {
            memcpy(name, arg, (size_t)(eq - arg));
            name[eq - arg] = '\0';
            opt = name;
            val = eq + 1;
        }
        int rc;
        if (takes_value(opt)) {
            if (!val) {
                if (i + 1 >= argc)
                    return cli_usage_error("requant", "option '%s' needs a value", opt);
                val = argv[++i];
            }
            rc = apply_value(a, opt, val);
        } else {
            if (val)
                return cli_usage_error("requant", "option '%s' takes no value", opt);
            rc = apply_flag(a, opt);
        }
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (n_pos < 2 || (n_pos < 3 && !a->o.dry_run))
        return cli_usage_error("requant", n_pos == 0 ? "IN, TYPE and OUT are required"
                                          : n_pos == 1 ? "TYPE and OUT are required" : "OUT is required");
    if (a->o.n_include_weights && a->o.n_exclude_weights)
        return cli_usage_error("requant", "--include-weights and --exclude-weights cannot be used together");
    a->is_auto = auto_is_target(pos[1]);   /* IN auto OUT: a budget plan (cmd_requant_auto.c) */
    if (!a->is_auto && a->au.given)
        return cli_usage_error("requant", "%s needs TYPE auto (IN auto OUT)", a->au.given);
    if (a->is_auto && n_pos > 3)
        return cli_usage_error("requant", "too many arguments ('%s'): IN auto OUT", pos[3]);
    if (a->stats && (a->o.dry_run || a->o.keep_split || a->is_auto))
        return cli_usage_error("requant", "--stats measures the file written against IN: not with %s",
                               a->o.dry_run ? "--dry-run (ggufq stats IN --types ... measures before "
                                              "writing)" : a->o.keep_split ? "--keep-split" : "auto");
    int rc = a->is_auto ? CLI_EXIT_OK : order_positionals(a, pos, n_pos);
    if (a->is_auto) {
        a->in = pos[0];
        a->target = "q8_0";   /* checked below like any run; the budget plan sets its own */
        a->out = pos[2];
    }
    if (rc != CLI_EXIT_OK)
        return rc;
    a->o.target = a->target;
    a->o.tensor_types = a->tensor_types;
    sort_prune_layers(a);
    a->o.prune_layers = a->n_prune ? a->prune : NULL;
    a->o.n_prune_layers = a->n_prune;
    a->o.include_weights = a->include;
    a->o.exclude_weights = a->exclude;
    a->o.kv_overrides = a->kv;
    /* what the library refuses before opening a file is a usage error too (exit 2) */
    ggufq_error err;
    if (ggufq_requant_options_check(&a->o, &err) != GGUFQ_OK)
        return cli_usage_error("requant", "%s", err.message);
    return CLI_EXIT_OK;
}

/* ---- dry run -------------------------------------------------------------- */

static double bpw(uint64_t bytes, uint64_t weights)
{
    return weights ? (double)bytes * 8.0 / (double)weights : 0.0;
}

static uint64_t entry_weights(const ggufq_plan_entry *e)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < e->n_dims; d++)
        n *= (uint64_t)e->dims[d];
    return n;
}

static void print_plan(const ggufq_plan *plan)
{
    out_printf("%4s  %-36s %-20s %-8s %-8s %12s %12s %7s  %s\n", "#", "tensor", "shape", "from", "to",
               "in bytes", "out bytes", "bpw", "why");
    uint64_t in = 0, out = 0, weights = 0;
    int64_t n_q = 0;
    strbuf name = { 0 };
    for (int64_t i = 0; i < ggufq_plan_count(plan); i++) {
        const ggufq_plan_entry *e = ggufq_plan_at(plan, i);
        cli_text_name(&name, e->name);   /* a name from the file: escaped, as info shows it */
        char shape[64];
        int len = snprintf(shape, sizeof shape, "[%" PRId64, e->dims[0]);
        for (uint32_t d = 1; d < e->n_dims && len > 0 && (size_t)len < sizeof shape; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, ", %" PRId64, e->dims[d]);
        if (len > 0 && (size_t)len < sizeof shape - 1)
            snprintf(shape + len, sizeof shape - (size_t)len, "]");
        uint64_t w = entry_weights(e);
        out_printf("%4" PRId64 "  %s", i, sb_str(&name));
        out_pad(cli_display_width(name.ptr, name.len), 36);
        out_printf(" %-20s %-8s %-8s %12" PRIu64 " %12" PRIu64 " %7.3f  %s%s\n",
                   shape, ggufq_type_name(e->in_type), ggufq_type_name(e->out_type), e->in_bytes, e->out_bytes,
                   bpw(e->out_bytes, w), e->reason ? e->reason : "", e->uses_imatrix ? " (imatrix)" : "");
        in += e->in_bytes;
        out += e->out_bytes;
        weights += w;
        n_q += e->out_type != e->in_type;
    }
    sb_free(&name);
    char a[32], b[32];
    cli_format_bytes(a, sizeof a, in);
    cli_format_bytes(b, sizeof b, out);
    out_printf("\ntensors:     %" PRId64 " (%" PRId64 " converted, %" PRId64 " copied)\n",
               ggufq_plan_count(plan), n_q, ggufq_plan_count(plan) - n_q);
    out_printf("file type:   %u\n", ggufq_plan_file_type(plan));
    out_printf("input:       %" PRIu64 " bytes (%s), %.4f bits per weight\n", in, a, bpw(in, weights));
    out_printf("output:      %" PRIu64 " bytes (%s), %.4f bits per weight (tensor data)\n", out, b,
               bpw(out, weights));
}

/* ---- progress (shown by cli_progress.c) ---------------------------------------- */

static int on_progress(const ggufq_progress *p, void *user)
{
    progress_state *ps = user;
    if (!ps->paused) {   /* the output's temporary file exists now */
        ps->paused = true;
        cli_test_pause(ps->in, ps->in_size);
    }
    if (cli_signal_caught || cli_input_fault())
        return 1;
    cli_progress_update(&ps->display, p);
    return 0;
}

/* The plan's totals, for the JSON "start" and "summary" lines. */
static cli_run_totals plan_totals(const requant_args *a, const ggufq_plan *plan, int threads)
{
    cli_run_totals s = { a->out, a->target, ggufq_plan_file_type(plan), ggufq_plan_count(plan), 0, 0,
                     0, 0, 0, 0.0, threads };
    for (int64_t i = 0; i < ggufq_plan_count(plan); i++) {
        const ggufq_plan_entry *e = ggufq_plan_at(plan, i);
        s.bytes_in += e->in_bytes;
        s.bytes_out += e->out_bytes;
        s.weights += entry_weights(e);
        s.converted += e->out_type != e->in_type;
    }
    s.copied = s.tensors - s.converted;
    return s;
}

/* ---- the command ------------------------------------------------------------ */

static void print_summary(const requant_args *a, const ggufq_plan *plan, double secs, int threads)
{
    uint64_t in = 0, out = 0, weights = 0;
    int64_t n_q = 0;
    for (int64_t i = 0; i < ggufq_plan_count(plan); i++) {
        const ggufq_plan_entry *e = ggufq_plan_at(plan, i);
        in += e->in_bytes;
        out += e->out_bytes;
        weights += entry_weights(e);
        n_q += e->out_type != e->in_type;
    }
    char ia[32], oa[32];
    cli_format_bytes(ia, sizeof ia, in);
    cli_format_bytes(oa, sizeof oa, out);
    /* the target as given, and what it resolved to when that reads differently ("15", "q4_K") */
    const char *name = ggufq_requant_target_name(a->target);
    if (!name || strcmp(name, a->target) == 0)
        out_printf("wrote %s (%s%s, file type %u)\n", a->out, a->target, a->o.pure ? ", pure" : "",
                   ggufq_plan_file_type(plan));
    else
        out_printf("wrote %s (%s from '%s'%s, file type %u)\n", a->out, name, a->target,
                   a->o.pure ? ", pure" : "", ggufq_plan_file_type(plan));
    out_printf("tensors:  %" PRId64 " (%" PRId64 " converted, %" PRId64 " copied)\n", ggufq_plan_count(plan), n_q,
               ggufq_plan_count(plan) - n_q);
    out_printf("input:    %s, %.4f bits per weight\n", ia, bpw(in, weights));
    out_printf("output:   %s, %.4f bits per weight\n", oa, bpw(out, weights));
    out_printf("time:     %.3f s (%.1f MB/s), %d thread%s\n", secs, secs > 0 ? (double)in / 1e6 / secs : 0.0,
               threads, threads == 1 ? "" : "s");
}

int cmd_requant(int argc, char **argv)
{
    requant_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.is_auto)
        return cmd_requant_auto(&a.au, a.in, a.out, &a.o, a.quiet, a.progress);
    ggufq_error err;
    ggufq_plan *plan = NULL;
    struct stat in_st;
    uint64_t in_size = stat(a.in, &in_st) == 0 ? (uint64_t)in_st.st_size : 0;
    progress_state ps = { .paused = false, .in = a.in, .in_size = in_size };
    cli_progress_init(&ps.display, "requant", a.o.dry_run ? PROGRESS_NONE : a.progress, a.quiet);
    int st = ggufq_requant_plan(a.in, &a.o, &plan, &err);
    if (st == GGUFQ_OK && cli_input_fault()) {   /* the plan read zeros for lost pages */
        ggufq_plan_free(plan);
        st = GGUFQ_E_IO;
    }
    if (st < 0) {
        if (cli_input_changed(a.in, in_size))
            cli_report_input_changed(a.in, NULL);
        else
            cli_report(st, &err, a.in);
        cli_progress_fail(&ps.display, st, CLI_EXIT_FAIL);
        return CLI_EXIT_FAIL;
    }
    if (a.o.dry_run) {
        print_plan(plan);
        ggufq_plan_free(plan);
        return CLI_EXIT_OK;
    }
    int threads = ggufq_thread_count(a.o.nthreads);
    cli_run_totals totals = plan_totals(&a, plan, threads);
    cli_progress_start(&ps.display, a.in, a.out, a.target, totals.tensors, totals.bytes_in, threads);
    cli_catch_signals();
    double t0 = cli_progress_elapsed(&ps.display);
    st = ggufq_plan_run(plan, a.out, on_progress, &ps, &err);   /* opened and planned once */
    double secs = cli_progress_elapsed(&ps.display) - t0;
    cli_progress_end(&ps.display);
    if (st == GGUFQ_OK && cli_input_fault()) {
        /* Only possible without a progress callback after the fault (no tensors): the
         * output holds zeros for lost metadata and must go. With --keep-split the
         * shard names are the library's: they are left (documented in sigbus.c).
         * Only a regular file at OUT itself is removed: never a FIFO or device
         * (written through), nor a symbolic link (the file it leads to was replaced). */
        struct stat out_st;
        if (!a.o.keep_split && lstat(a.out, &out_st) == 0 && S_ISREG(out_st.st_mode))
            unlink(a.out);
        st = GGUFQ_E_IO;
    }
    if (st < 0) {
        if (cli_input_changed(a.in, in_size))
            cli_report_input_changed(a.in, a.out);
        else if (st == GGUFQ_E_INTERRUPTED)
            cli_error("interrupted; %s not written", a.out);
        else
            cli_report(st, &err, a.in);
        ggufq_plan_free(plan);
        int exit_status = st == GGUFQ_E_INTERRUPTED ? cli_failure_status() : CLI_EXIT_FAIL;
        cli_progress_fail(&ps.display, st, exit_status);
        return exit_status;
    }
    totals.seconds = secs;
    if (cli_progress_is_json(&ps.display)) {   /* stdout is the JSON stream: the summary is its last line */
        if (a.stats)
            rc = measure_print_after_requant(a.in, a.out, a.o.imatrix_path, a.o.nthreads, true);
        cli_progress_summary(&ps.display, &totals);
    } else {
        if (!a.quiet)
            print_summary(&a, plan, secs, threads);
        if (a.stats)
            rc = measure_print_after_requant(a.in, a.out, a.o.imatrix_path, a.o.nthreads, false);
    }
    ggufq_plan_free(plan);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Help                                                                      */
/* ------------------------------------------------------------------------- */

const cli_command cmd_requant_command = {
    .name = "requant",
    .summary = "Requantize a GGUF file exactly as llama.cpp's llama-quantize does",
    .usage = "usage: ggufq requant IN TYPE OUT [options]\n"
             "       ggufq requant IN OUT TYPE [NTHREADS] [options]   (llama-quantize's order)\n"
             "       ggufq requant IN auto OUT --target-size SIZE | --target-bpw B [options]",
    .help =
      "The second form is taken when OUT is no TYPE and the last argument is.\n"
      "Write OUT, IN with every tensor that llama.cpp quantizes converted to\n"
      "TYPE, read as llama-quantize reads it: one of its names, in any case\n"
      "(Q4_K_M, Q5_K_S, Q3_K_M, IQ4_XS, Q2_K_S, Q6_K, Q8_0, F16 ...: llama.cpp's\n"
      "per-tensor mix; Q3_K, Q4_K and Q5_K are Q3_K_M, Q4_K_M and Q5_K_M), a\n"
      "file type number (15 is Q4_K_M, 7 Q8_0, 0 F32), or COPY (every tensor\n"
      "kept as it is, the file rewritten). A ggml type name that is none of\n"
      "these (mxfp4, nvfp4) is a bare type: every such tensor gets it. For one\n"
      "type everywhere use --pure (q4_K --pure: q4_K wherever it fits).\n"
      "'ggufq types' lists every TYPE name and number.\n"
      "Tensor types and bytes are those llama_model_quantize writes; so is the\n"
      "tensor order (sorted by layer, then name; with --keep-split, each shard\n"
      "in its input order). Inputs of any type (F32, F16, BF16, quantized) are\n"
      "decoded and encoded again; tensors that keep their type are copied byte\n"
      "for byte. Metadata is copied, with general.quantization_version = 2 and\n"
      "general.file_type = the recipe's llama.cpp file type (COPY: IN's).\n"
      "Given shard 1 of a split model (name-00001-of-0000N.gguf), every shard\n"
      "is read.\n"
      "OUT is written to a temporary file renamed into place at the end: on any\n"
      "failure, SIGINT or SIGTERM, OUT is left untouched. OUT may not be IN.\n"
      "\n"
      "Options (those with a value also as --option=VALUE):\n"
      "  --threads N                 Worker threads (default and 0: all cores, or\n"
      "                              OMP_NUM_THREADS when set)\n"
      "  --imatrix FILE              Importance matrix (GGUF or legacy .dat)\n"
      "  --include-weights NAME      Use the imatrix only for tensors whose name\n"
      "                              contains NAME (repeatable)\n"
      "  --exclude-weights NAME      Do not use it for those (repeatable)\n"
      "  --output-tensor-type T      Type of output.weight\n"
      "  --token-embedding-type T    Type of token_embd.weight\n"
      "  --tensor-type REGEX=T       Type of the tensors REGEX matches (repeatable;\n"
      "                              the first match wins)\n"
      "  --tensor-type-file FILE     REGEX=T rules separated by white space, read in\n"
      "                              place among the --tensor-type options ('#' starts\n"
      "                              a comment to the end of the line)\n"
      "  --prune-layers L0,L1,...    Drop these blocks (blk.N.*), renumber the others;\n"
      "                              block_count and per-layer metadata arrays follow\n"
      "  --leave-output-tensor       Keep output.weight as it is\n"
      "  --allow-requantize          Convert tensors that are already quantized\n"
      "                              (decoded first: quality is lost); without it\n"
      "                              such a run is refused, as llama-quantize does\n"
      "  --pure                      No recipe mix: every tensor gets TYPE's default\n"
      "                              type (llama-quantize --pure)\n"
      "  --override-kv KEY=TYPE:VAL  Set a metadata key (TYPE: int, float, bool, str)\n"
      "  --keep-split                Write the same shards as the input, named as\n"
      "                              llama-quantize names them: OUT less .gguf, then\n"
      "                              -00001-of-0000N.gguf (also when N is 1)\n"
      "  --dry-run                   Print the plan (types, sizes, bits per weight)\n"
      "                              and write nothing; OUT may be omitted. Refuses\n"
      "                              what the run would (same message and status),\n"
      "                              except what only the weights or OUT reveal\n"
      "  --progress bar|json|none    bar: on stderr, fitted to the terminal (the\n"
      "                              default when stderr is a terminal). json: one\n"
      "                              object a line on stdout with an \"event\":\n"
      "                              start, tensor, then summary (the text\n"
      "                              summary's numbers) or error last; messages\n"
      "                              stay on stderr (see 'ggufq help dequant')\n"
      "  --stats                     After writing, measure OUT against IN as 'ggufq\n"
      "                              diff IN OUT' does (per tensor rmse, nmse, cosine,\n"
      "                              with --imatrix wmse): with --allow-requantize, the\n"
      "                              error the requantization added. Not with\n"
      "                              --dry-run, --keep-split or auto; a split IN is\n"
      "                              not compared. With --progress json: an event\n"
      "                              {\"event\":\"stats\",\"diff\":{...}} before the summary\n"
      "  -q, --quiet                 No bar, no summary (--progress json stays)\n"
      "\n"
      "TYPE auto: a budget plan. Every tensor requant converts is measured at\n"
      "every candidate type (as 'ggufq stats'), then one type per tensor is\n"
      "chosen for the lowest total error within the budget: the squared error,\n"
      "weighted with --imatrix by each column's importance; a tensor it has no\n"
      "entry for counts as token_embd per looked-up row (its squared error over\n"
      "its rows), else with the mean importance of the entries of its width.\n"
      "Tensors never converted and those set by\n"
      "--tensor-type, --output-tensor-type, --token-embedding-type or\n"
      "--leave-output-tensor are fixed points. The file holds the plan's base\n"
      "type as general.file_type and quantize.budget.* keys.\n"
      "  --target-size SIZE          Size of OUT: bytes, or with k M G (powers of\n"
      "                              1000) or Ki Mi Gi (of 1024): 4.5G, 700Mi\n"
      "  --target-bpw B              Bits per weight: 8 * tensor bytes / weights\n"
      "  --candidates T1,T2,...      Types to choose from (default: q2_K q3_K q4_K\n"
      "                              q5_K q6_K q8_0 iq4_xs f16; with --imatrix also\n"
      "                              iq3_s, and iq2_xs iq3_xxs if it covers every tensor)\n"
      "  --plan-out FILE             Write the plan as a --tensor-type-file\n"
      "                              (llama-quantize's format; replay it with\n"
      "                              --pure on the base type the summary names)\n"
      "  --stats-cache FILE          Reuse measurements across runs (as 'ggufq stats')\n"
      "  --dry-run also prints the plan's totals against llama.cpp's nearest recipe.\n"
      "  e.g. requant m-f16.gguf auto m.gguf --target-bpw 4.5 --imatrix imatrix.gguf\n"
      "  --                          Ends the options: the arguments after it may\n"
      "                              start with '-'\n"
      "  -h, --help                  Show this help\n"
      "\n"
      "Examples:\n"
      "  ggufq requant model-f16.gguf Q4_K_M model-Q4_K_M.gguf\n"
      "  ggufq requant model-f16.gguf model-Q4_K_M.gguf Q4_K_M 8   (llama-quantize's order)\n"
      "  ggufq requant model-f16.gguf IQ2_XS model-IQ2_XS.gguf --imatrix imatrix.gguf\n"
      "  ggufq requant model-f16.gguf Q4_K_M --dry-run --tensor-type 'attn_v=q8_0'\n",
    .run = cmd_requant,
};
