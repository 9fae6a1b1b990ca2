/*
 * testutil.h — helpers shared by the test programs (cmocka).
 */
#ifndef GGUFQ_TESTUTIL_H
#define GGUFQ_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ggufq.h"
#include "peer_kernels.h"
#include "tu_rng.h"

/* Path of a file under tests/ (e.g. "data/llama-2-tiny-random.gguf"); static buffer. */
const char *tu_path(const char *rel);

/* The whole file (malloc, NUL after the contents; *size excludes it), or NULL. */
void *tu_read_file(const char *path, size_t *size);

/* Directory holding the peer's libggml-base.so, or NULL if absent (message printed once). */
const char *tu_peer_dir(void);
/* dlopen a peer library by file name ("libggml-base.so"); NULL if absent. */
void *tu_peer_open(const char *lib);
/* ggml's kernels (peer_kernels.h), opened once per process; NULL if the peer is absent. */
const pk_peer *tu_peer(void);

/* Exact comparisons. Floats compare by bit pattern: NaN payloads and signed zeros count. */
int64_t tu_first_byte_diff(const void *a, const void *b, size_t n);   /* index, or -1 */
int64_t tu_first_float_diff(const float *a, const float *b, int64_t n);
/* Fail the test (naming `what`, the first difference and both values) unless equal. */
void tu_expect_same_bytes(const void *got, const void *want, size_t n, const char *what);
void tu_expect_same_floats(const float *got, const float *want, int64_t n, const char *what);

/* A fresh empty directory for this test's output files (under the build dir); static buffer. */
const char *tu_tmpdir(const char *test_name);
/* Entries of a directory other than . and .. (-1 if it cannot be read). */
int tu_count_files(const char *dir);

/* Deterministic PRNG for reproducible random inputs: tu_rng.h. */

#endif
