/*
 * json.h — writing JSON to the program's buffered stdout.
 *
 * Conventions (documented in `ggufq help info`):
 *  - strings: UTF-8; '"', '\\' and control characters escaped (\n \t \r \b \f,
 *    others as \u00XX); each maximal invalid subsequence of bytes (as the
 *    Unicode standard defines it, and as Python's decoder does) becomes \uFFFD;
 *  - integers exactly (uint64 above 2^53 included);
 *  - float32 / float64: the shortest decimal that reads back as the same value;
 *    negative zero as -0.0; NaN and infinities as null.
 */
#ifndef GGUFQ_CLI_JSON_H
#define GGUFQ_CLI_JSON_H

#include <stddef.h>

#include "ggufq.h"

/* A quoted, escaped JSON string. */
void json_write_string(const char *s, size_t len);
/* The same, appended to sb (for lines written elsewhere than stdout). */
struct strbuf;
void json_string_sb(struct strbuf *sb, const char *s, size_t len);
/* A metadata value: number, bool, string, or (nested) array with all its elements. Status. */
int  json_write_value(const ggufq_value *v);

#endif
