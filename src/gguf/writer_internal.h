/*
 * writer_internal.h — internals of the GGUF writer (writer.c, writer_kv.c)
 * and its failure-injection hooks for tests. Not public API.
 */
#ifndef GGUFQ_GGUF_WRITER_INTERNAL_H
#define GGUFQ_GGUF_WRITER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"
#include "hashmap.h"

/* ------------------------------------------------------------------------- */
/* Failure injection (tests only)                                            */
/* ------------------------------------------------------------------------- */
/*
 * These hooks change process-wide state read by every writer without locking:
 * set them only while no other thread is writing. They cost one branch per
 * write(2) call when disabled, and cannot make a writer misbehave other than
 * failing exactly as a real kernel error would.
 */

/*
 * Make writing the byte at file offset `at_byte` (0 = the first byte of the
 * magic) fail with errno `err_no`: the bytes before it are really written
 * (like a disk that fills up mid-write), then write(2) "returns" -1/err_no.
 * Applies to every writer until called again with err_no 0 (disabled).
 */
void gq_writer_inject_failure(uint64_t at_byte, int err_no);

/* Make the fsync(2) of the temporary file fail with err_no (0 disables). */
void gq_writer_inject_fsync_failure(int err_no);

/*
 * Exercise the partial-write loop: each write(2) call passes at most
 * max_chunk bytes (0: no limit), and if eintr is true every other call
 * "fails" with EINTR before writing anything.
 */
void gq_writer_inject_short_writes(size_t max_chunk, bool eintr);

/* ------------------------------------------------------------------------- */
/* Shared between writer.c and writer_kv.c                                   */
/* ------------------------------------------------------------------------- */

/* A key or tensor name; first member of the entry structs so one index serves both. */
typedef struct gq_wname {
    char    *s;     /* NUL-terminated copy */
    size_t   len;
} gq_wname;

/* A metadata entry: value in GGUF encoding (after the type tag). */
typedef struct gq_wkv {
    gq_wname          key;
    ggufq_value_type  type;
    uint8_t          *enc;
    size_t            enc_len;
} gq_wkv;

typedef struct gq_wtensor {
    gq_wname   name;
    ggufq_type type;
    uint32_t   n_dims;
    int64_t    dims[GGUFQ_MAX_DIMS];
    uint64_t   size;    /* bytes */
    uint64_t   offset;  /* relative to the data section; set when the header is frozen */
} gq_wtensor;

/*
 * Name index of the keys or the tensors: a growable gq_strmap (hashmap.c, the
 * reader's map) over entries of `stride` bytes that start with a gq_wname.
 * A zeroed gq_windex is empty; free it with gq_strmap_free.
 */
typedef gq_strmap gq_windex;

/* Position of the entry named s in items[0..n), or -1. */
int64_t  gq_windex_find(const gq_windex *ix, const void *items, size_t stride,
                        const char *s, size_t len);
/* Index entry n-1 (just appended); items[0..n). GGUFQ_OK or GGUFQ_E_NOMEM. */
int      gq_windex_add_last(gq_windex *ix, const void *items, size_t stride, size_t n);
/* Rebuild after entries moved or were removed. GGUFQ_OK or GGUFQ_E_NOMEM. */
int      gq_windex_rebuild(gq_windex *ix, const void *items, size_t stride, size_t n);

enum gq_writer_state {
    GQ_W_META = 0,  /* declaring metadata and tensors */
    GQ_W_DATA,      /* header written; streaming tensor data */
    GQ_W_FAILED     /* an I/O error happened: only finish/abort remain */
};

struct ggufq_writer {
    char *path;        /* final destination */
    char *tmp_path;    /* temporary file in the same directory */
    char *dir_path;    /* directory of path, fsynced after the rename */
    char *input_path;  /* opts->input's file name, or NULL */
    int   fd;          /* temporary file, or -1 */
    uint64_t opt_alignment;

    gq_wkv    *kv;
    size_t     n_kv, kv_cap;
    gq_windex  kv_index;

    gq_wtensor *tensors;
    size_t      n_tensors, tensors_cap;
    gq_windex   tensor_index;

    enum gq_writer_state state;
    int       failed_status;  /* status of the I/O error that made state GQ_W_FAILED */
    uint64_t  alignment;      /* effective alignment, once frozen */
    uint64_t  data_start;     /* file offset of the data section; UINT64_MAX until the header is out */
    size_t    cur;            /* tensor receiving data */
    uint64_t  cur_written;    /* bytes of tensors[cur] written */
    uint64_t  data_total;     /* sum of tensor sizes (no padding) */
    uint64_t  data_written;

    uint8_t  *buf;
    size_t    buf_len, buf_cap;
    uint64_t  file_pos;       /* bytes successfully passed to write(2) */

    ggufq_error err;
};

/* Record a failure in w->err (message prefixed with the output path); returns status. */
int gq_writer_fail(ggufq_writer *w, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/*
 * Set key (already validated) to an encoded value; takes ownership of enc
 * (freed on failure too). Replaces an existing key's value in place.
 */
int gq_writer_put_kv(ggufq_writer *w, const char *key, size_t key_len,
                     ggufq_value_type t, uint8_t *enc, size_t enc_len);

#endif
