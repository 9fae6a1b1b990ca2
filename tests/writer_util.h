/*
 * writer_util.h — helpers shared by the writer tests (test_writer.c,
 * test_writer_errors.c). Every check fails the running cmocka test.
 */
#ifndef GGUFQ_TESTS_WRITER_UTIL_H
#define GGUFQ_TESTS_WRITER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"

#define WT_FIXTURE "data/llama-2-tiny-random.gguf"

/* A small GGUF encoding builder for set_encoded. */
typedef struct wt_enc {
    uint8_t b[8192];
    size_t  n;
} wt_enc;

extern char wt_dir[4096];

void wt_use_tmpdir(const char *name);

/* "<wt_dir>/<name>" in one of a few rotating static buffers. */
const char *wt_in_dir(const char *name);

/* Entries in wt_dir (temporary files start with '.', so count everything). */
int wt_dir_entries(void);

bool wt_exists(const char *path);

void wt_write_bytes(const char *path, const void *data, size_t n);

void wt_assert_file_bytes(const char *path, const void *data, size_t n);

bool wt_files_equal(const char *a, const char *b);

ggufq_file *wt_open_ok(const char *path);

ggufq_writer *wt_create_ok(const char *path, const ggufq_writer_options *opts);

void wt_finish_ok(ggufq_writer *w);

/* Copy every kv and tensor of in_path to out_path, streaming data in `chunk`-byte pieces. */
int wt_copy_gguf(const char *in_path, const char *out_path,
                 const ggufq_writer_options *opts, size_t chunk);

/* Same keys, value types and encodings, tensors, shapes and bytes. */
void wt_assert_same_content(const char *a_path, const char *b_path);

/* Offsets are contiguous and aligned, data starts aligned, file ends padded. */
void wt_assert_layout(const char *path, uint64_t alignment);

void wt_enc_le(wt_enc *e, uint64_t v, size_t n);

void wt_enc_str(wt_enc *e, const char *s);

void wt_enc_array_header(wt_enc *e, ggufq_value_type elem, uint64_t count);

/* A file with metadata and two tensors (F32 [8 x 3], Q8_0 [64 x 2]) of known bytes. */
extern uint8_t wt_t0[8 * 3 * 4];

extern uint8_t wt_t1[2 * 2 * 34];

ggufq_writer *wt_small_writer(const char *path, const ggufq_writer_options *opts);

void wt_write_small_data(ggufq_writer *w);

#endif
