/*
 * golden_util.c — reading the golden files through the public reader API.
 */
#include "golden_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void tu_golden_open(tu_golden *g, ggufq_type type)
{
    memset(g, 0, sizeof *g);
    g->type = type;
    snprintf(g->file, sizeof g->file, "%s.gguf", ggufq_type_name(type));
    char rel[96];
    snprintf(rel, sizeof rel, "golden/%s", g->file);
    ggufq_error err;
    if (ggufq_open(tu_path(rel), NULL, &g->f, &err) != GGUFQ_OK)
        fail_msg("cannot open golden file: %s", err.message);
}

void tu_golden_close(tu_golden *g)
{
    ggufq_close(g->f);
    g->f = NULL;
}

const void *tu_golden_tensor(const tu_golden *g, const char *name, ggufq_tensor_info *info)
{
    const int64_t i = ggufq_find_tensor(g->f, name);
    if (i < 0)
        return NULL;
    assert_int_equal(ggufq_tensor_at(g->f, i, info), GGUFQ_OK);
    return info->data;
}

/* Tensor `name` must be present (or absent) as expected, of `type` and `n` elements in rows of `row`. */
static int expect_tensor(const tu_golden *g, const char *name, bool present, ggufq_type type,
                         int64_t n, int64_t row)
{
    ggufq_tensor_info t;
    const bool found = tu_golden_tensor(g, name, &t) != NULL;
    if (found != present)
        fail_msg("%s: tensor %s is %s", g->file, name, found ? "present, expected none" : "missing");
    if (!found)
        return 0;
    if (t.type != type || t.n_elements != n || t.dims[0] != row)
        fail_msg("%s: tensor %s is %s with %" PRId64 " elements (row %" PRId64 "), expected %s "
                 "with %" PRId64 " (row %" PRId64 ")", g->file, name,
                 ggufq_type_name(t.type) ? ggufq_type_name(t.type) : "?", t.n_elements, t.dims[0],
                 ggufq_type_name(type), n, row);
    return 1;
}

void tu_golden_check_layout(ggufq_type type)
{
    const pk_type *pt = pk_type_of(type);
    assert_non_null(pt);
    tu_golden g;
    tu_golden_open(&g, type);

    ggufq_value v;
    ggufq_str s;
    assert_int_equal(ggufq_get(g.f, "golden.type", &v), GGUFQ_OK);
    assert_int_equal(ggufq_value_str(&v, &s), GGUFQ_OK);
    if (s.len != strlen(ggufq_type_name(type)) || memcmp(s.ptr, ggufq_type_name(type), s.len) != 0)
        fail_msg("%s: golden.type is \"%.*s\"", g.file, (int)s.len, s.ptr);

    ggufq_tensor_info in;
    if (!tu_golden_tensor(&g, "input", &in))
        fail_msg("%s: tensor input is missing", g.file);
    const int64_t row = in.dims[0], n = in.n_elements;
    const bool quant = !(pt->flags & PK_NEEDS_IMATRIX), with_imatrix = !(pt->flags & PK_NO_IMATRIX);
    const bool dequant = !(pt->flags & PK_NO_DEQUANT);
    int found = expect_tensor(&g, "input", true, GGUFQ_TYPE_F32, n, row);
    found += expect_tensor(&g, "imatrix", true, GGUFQ_TYPE_F32, row, row);
    found += expect_tensor(&g, "quant", quant, type, n, row);
    found += expect_tensor(&g, "dequant", quant && dequant, GGUFQ_TYPE_F32, n, row);
    found += expect_tensor(&g, "quant_imatrix", with_imatrix, type, n, row);
    found += expect_tensor(&g, "dequant_imatrix", with_imatrix, GGUFQ_TYPE_F32, n, row);
    found += expect_tensor(&g, "raw", dequant, type, n, row);
    found += expect_tensor(&g, "raw_dequant", dequant, GGUFQ_TYPE_F32, n, row);
    const bool special = dequant && pk_n_scales(pt) > 0;
    found += expect_tensor(&g, "raw_special", special, type, n, row);
    found += expect_tensor(&g, "raw_special_dequant", special, GGUFQ_TYPE_F32, n, row);
    if (ggufq_tensor_count(g.f) != found)
        fail_msg("%s: %" PRId64 " tensors, expected %d", g.file, ggufq_tensor_count(g.f), found);
    tu_golden_close(&g);
}
