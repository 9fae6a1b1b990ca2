/*
 * golden_util.h — the golden files (tests/golden/<type>.gguf, see its README),
 * read with the library's public reader, for the kernel tests' own checks.
 * The standard checks of every file (quantize/dequantize == ggml) are
 * test_golden.c's; these helpers serve the checks it does not make.
 */
#ifndef GGUFQ_GOLDEN_UTIL_H
#define GGUFQ_GOLDEN_UTIL_H

#include "testutil.h"

typedef struct tu_golden {
    ggufq_file *f;
    ggufq_type  type;
    char        file[64];   /* "<type>.gguf", for messages */
} tu_golden;

/* Open the golden file of `type` (fails the test if it cannot be opened). */
void tu_golden_open(tu_golden *g, ggufq_type type);
void tu_golden_close(tu_golden *g);

/* The bytes of tensor `name` and its info in *info; NULL if the file has no such tensor. */
const void *tu_golden_tensor(const tu_golden *g, const char *name, ggufq_tensor_info *info);

/*
 * Fail unless the file of `type` holds exactly the tensors the README lists
 * for it (which depend on ggml's kernels, see pk_types), each of the right
 * type and shape, and names its type in golden.type.
 */
void tu_golden_check_layout(ggufq_type type);

#endif
