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

/* Path of a file under tests/ (e.g. "data/llama-2-tiny-random.gguf"); static buffer. */
const char *tu_path(const char *rel);

/* Read a whole file into malloc'd memory; NULL on failure. */
void *tu_read_file(const char *path, size_t *size);

/* Directory holding the peer's libggml-base.so, or NULL if absent (message printed once). */
const char *tu_peer_dir(void);
/* dlopen a peer library by file name ("libggml-base.so"); NULL if absent. */
void *tu_peer_open(const char *lib);

/* A fresh empty directory for this test's output files (under the build dir); static buffer. */
const char *tu_tmpdir(const char *test_name);

/* Deterministic PRNG (splitmix64) for reproducible random inputs. */
typedef struct tu_rng { uint64_t s; } tu_rng;
uint64_t tu_rand_u64(tu_rng *r);
float    tu_rand_uniform(tu_rng *r);           /* [0, 1) */
float    tu_rand_gauss(tu_rng *r);

#endif
