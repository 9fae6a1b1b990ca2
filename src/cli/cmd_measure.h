/*
 * cmd_measure.h — `ggufq diff` and `ggufq stats`: the commands and the
 * formatting they share (each command's record and help is in its file).
 */
#ifndef GGUFQ_CLI_CMD_MEASURE_H
#define GGUFQ_CLI_CMD_MEASURE_H

#include "cli_util.h"

int cmd_diff(int argc, char **argv);
int cmd_stats(int argc, char **argv);


/*
 * Print a comparison as `ggufq diff` does (text, or one JSON object): for a
 * command that wants to show what it just changed (e.g. a requant --stats:
 * ggufq_diff_files(IN, OUT) then this).
 */
void measure_print_diff(const char *path_a, const char *path_b, const ggufq_file *a, const ggufq_file *b,
                        const ggufq_diff *d, bool json);
/*
 * `requant --stats`: OUT measured against IN as `ggufq diff` does (imatrix_path:
 * NULL or the file for wmse), printed after a requant; json: as the event
 * {"event":"stats","diff":{...}}. Returns an exit status (errors printed).
 */
int measure_print_after_requant(const char *in_path, const char *out_path, const char *imatrix_path,
                                int nthreads, bool json);
/* The JSON object alone (no newline after it): to embed it, e.g. in a progress event. */
void measure_print_diff_json(const char *path_a, const char *path_b, const ggufq_file *a, const ggufq_file *b,
                             const ggufq_diff *d);

/* A JSON number: shortest float64 decimal that reads back; NaN and infinities as null. */
void measure_json_double(double v);
/* A metric for a table cell ("%.3e"-like, or "nan", "inf", "0"). */
void measure_cell(char *buf, size_t size, double v);
/* A metadata value, shortened for a table or a JSON string ("uint32 15",
 * "string \"llama\"", "array[string] (32000)"). */
void measure_value_text(strbuf *sb, const ggufq_value *v);
/* Both values of a changed key, told apart: strings alike for their first
 * characters shown from just before they differ, arrays of one type and
 * count marked "(elements differ)". */
void measure_value_pair(strbuf *sa, strbuf *sb, const ggufq_value *a, const ggufq_value *b);
/* "[8, 32000]" */
void measure_shape_text(strbuf *sb, uint32_t n_dims, const int64_t *dims);

/*
 * Split "--opt=VAL" / "--opt VAL": *opt (a copy in name[]) and *val; advances *i
 * when the value is the next argument. false: no value (a usage error).
 */
bool measure_option_value(int argc, char **argv, int *i, char *name, size_t name_size, const char **opt,
                          const char **val);

#endif
