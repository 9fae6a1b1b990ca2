/*
 * writer_internal.h — internals of the GGUF writer (writer.c, writer_kv.c,
 * writer_file.c), the staged finish the requant layer uses for split outputs,
 * and the failure-injection hooks for tests. Not public API; nothing here is
 * exported from the shared library.
 */
#ifndef GGUFQ_GGUF_WRITER_INTERNAL_H
#define GGUFQ_GGUF_WRITER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufq.h"
#include "errors.h"
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
    GQ_W_FAILED,    /* an I/O error happened: only finish/abort remain */
    GQ_W_PREPARED,  /* complete and durable, not yet named (gq_writer_prepare) */
    GQ_W_STAGED,    /* holds a temporary name beside the destination (gq_writer_stage) */
    GQ_W_DONE       /* renamed into place (gq_writer_commit): only abort (free) remains */
};

/* How the output reaches its destination (decided at create, see writer_file.c). */
enum gq_writer_dest {
    GQ_DEST_REPLACE = 0, /* a regular file or nothing: write a temporary file, rename it over */
    GQ_DEST_STREAM       /* a FIFO or character device: written directly, in order */
};

/* A file the writer must never replace: an input of the run. */
typedef struct gq_winput {
    char  *path;
    bool   known;        /* dev/ino were read at create */
    uint64_t dev, ino;
} gq_winput;

struct ggufq_writer {
    char *path;        /* destination as the caller named it (messages) */
    char *target;      /* path with symbolic links followed: the name the output gets */
    char *tmp_path;    /* the temporary file's name, or NULL (unnamed O_TMPFILE, stream) */
    char *dir_path;    /* directory of target, fsynced after the rename */
    gq_winput *inputs; /* files that must not be the destination */
    size_t     n_inputs;
    int   fd;          /* the file being written, or -1 */
    enum gq_writer_dest dest;
    bool     anonymous;    /* fd is an O_TMPFILE file that has no name yet */
    uint64_t fsize_limit;  /* RLIMIT_FSIZE for the temporary file; UINT64_MAX: none */
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

/* ------------------------------------------------------------------------- */
/* Staged finish (writer_file.c), for outputs that must appear together      */
/* ------------------------------------------------------------------------- */
/*
 * ggufq_writer_finish() is prepare + stage + commit + free. A caller writing
 * several files that must all be replaced or none (requant --keep-split)
 * prepares every writer, then stages every one, then commits every one, and
 * frees them with ggufq_writer_abort() (which removes whatever is not
 * committed). A failure in prepare or stage leaves every destination as it
 * was. Each step returns GGUFQ_OK or a status with ggufq_writer_error(w) set;
 * after a failure only ggufq_writer_abort() remains.
 */

/*
 * ggufq_writer_create, also refusing (GGUFQ_E_SAME_FILE) a destination that
 * is one of inputs[0..n_inputs) (by path, symbolic or hard link: the same
 * device and inode), now and again just before the rename. The paths are copied.
 */
int gq_writer_create_guarded(const char *path, const ggufq_writer_options *opts,
                             const char *const *inputs, size_t n_inputs,
                             ggufq_writer **out, ggufq_error *err);

/* Check every tensor is complete, flush, set the mode, fsync; the file has no name yet. */
int gq_writer_prepare(ggufq_writer *w);
/* Give the prepared file a temporary name beside the destination (a killed process may leave it). */
int gq_writer_stage(ggufq_writer *w);
/* Check the destination is no input, rename the staged file over it, fsync the directory. */
int gq_writer_commit(ggufq_writer *w);

/* ------------------------------------------------------------------------- */
/* writer_file.c: the destination and every byte written (writer.c calls it, never the reverse) */
/* ------------------------------------------------------------------------- */

/* Open the destination (or a temporary file for it); path, opts and inputs as create's. */
int gq_writer_open_dest(ggufq_writer *w, const ggufq_writer_options *opts,
                        const char *const *inputs, size_t n_inputs);
/* Close and remove whatever of the output is not committed. */
void gq_writer_discard(ggufq_writer *w);
/* Free what writer_file.c allocated (not w). */
void gq_writer_free_dest(ggufq_writer *w);
/* write(2) all of p at the output's position (retrying partial writes, EINTR; the injection hooks). */
int gq_writer_raw_write(ggufq_writer *w, const uint8_t *p, size_t n);
/* Write the buffered bytes out. */
int gq_writer_flush(ggufq_writer *w);
/* Flush, set the mode, fsync, close a named temporary file: the durable half of gq_writer_prepare. */
int gq_writer_make_durable(ggufq_writer *w);
/* An I/O error (errno e) while `what` ("writing", "syncing" ...): the writer is failed from now on. */
int gq_writer_io_fail(ggufq_writer *w, int e, const char *what);

/* Record a failure in w->err (message prefixed with the output path); returns status. */
#define gq_writer_fail(w, status, ...) gq_fail(&(w)->err, (status), (w)->path, GGUFQ_NO_OFFSET, __VA_ARGS__)

/*
 * Set key (already validated) to an encoded value; takes ownership of enc
 * (freed on failure too). Replaces an existing key's value in place.
 */
int gq_writer_put_kv(ggufq_writer *w, const char *key, size_t key_len,
                     ggufq_value_type t, uint8_t *enc, size_t enc_len);

#endif
