/*
 * kvover.c — --override-kv KEY=TYPE:VALUE, parsed as llama.cpp's
 * string_parse_kv_override does (key and string values of at most 127
 * bytes; bool is exactly "true" or "false"), except that numbers must be
 * well formed here (llama.cpp's atol/atof turn "abc" into 0 silently).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "requant/requant_internal.h"

static bool parse_i64(const char *s, int64_t *out)
{
    if (*s == '\0')
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double *out)
{
    if (*s == '\0')
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || (errno == ERANGE && isinf(v)))
        return false;
    *out = v;
    return true;
}

int gq_kv_override_parse(const char *spec, gq_kv_override *out, ggufq_error *err)
{
    memset(out, 0, sizeof *out);
    const char *sep = spec ? strchr(spec, '=') : NULL;
    if (!sep || sep == spec || sep - spec >= (ptrdiff_t)sizeof out->key)
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "--override-kv '%s': expected KEY=TYPE:VALUE with a key of 1 to 127 bytes",
                          spec ? spec : "(null)");
    memcpy(out->key, spec, (size_t)(sep - spec));
    const char *v = sep + 1;
    if (strncmp(v, "int:", 4) == 0) {
        out->tag = GQ_KV_INT;
        if (!parse_i64(v + 4, &out->val_i64))
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--override-kv '%s': '%s' is not an integer",
                              spec, v + 4);
    } else if (strncmp(v, "float:", 6) == 0) {
        out->tag = GQ_KV_FLOAT;
        if (!parse_f64(v + 6, &out->val_f64))
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--override-kv '%s': '%s' is not a number",
                              spec, v + 6);
    } else if (strncmp(v, "bool:", 5) == 0) {
        out->tag = GQ_KV_BOOL;
        if (strcmp(v + 5, "true") == 0)
            out->val_bool = true;
        else if (strcmp(v + 5, "false") == 0)
            out->val_bool = false;
        else
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG, "--override-kv '%s': bool must be true or false",
                              spec);
    } else if (strncmp(v, "str:", 4) == 0) {
        out->tag = GQ_KV_STR;
        if (strlen(v + 4) > 127)
            return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                              "--override-kv '%s': string values cannot exceed 127 bytes", spec);
        strcpy(out->val_str, v + 4);
    } else {
        return gq_rq_fail(err, GGUFQ_E_INVALID_ARG,
                          "--override-kv '%s': TYPE must be int, float, bool or str", spec);
    }
    return GGUFQ_OK;
}
