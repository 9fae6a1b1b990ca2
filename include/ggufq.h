/*
 * ggufq.h — the whole public API of libggufq.
 *
 * libggufq reads and writes GGUF files (the file format of ggml and llama.cpp)
 * and quantizes / dequantizes the tensors inside them, bit for bit as ggml's
 * reference kernels do.
 *
 * Conventions
 *  - Every function that can fail returns an int status: GGUFQ_OK (0) or a
 *    negative ggufq_status. Status values are stable across releases.
 *  - Functions that parse files also fill an optional ggufq_error with the
 *    byte offset and a full message naming the file ("x.gguf: offset 24: ...").
 *  - Objects are opaque handles; every handle has exactly one free function.
 *  - Strings read from a file are returned as ggufq_str (pointer + length,
 *    not NUL-terminated) except keys and tensor names, which are copied and
 *    NUL-terminated at open time.
 *  - Pointers returned by a ggufq_file stay valid until ggufq_close().
 */
#ifndef GGUFQ_H
#define GGUFQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define GGUFQ_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define GGUFQ_API __attribute__((visibility("default")))
#else
#  define GGUFQ_API
#endif

#define GGUFQ_VERSION_MAJOR 0
#define GGUFQ_VERSION_MINOR 1
#define GGUFQ_VERSION_PATCH 0
#define GGUFQ_VERSION_STRING "0.1.0"

/** The library's version string ("0.1.0"); may differ from the header's when linked dynamically. */
GGUFQ_API const char *ggufq_version(void);

/* ------------------------------------------------------------------------- */
/* Status codes                                                              */
/* ------------------------------------------------------------------------- */

typedef enum ggufq_status {
    GGUFQ_OK                 = 0,
    /* usage and environment */
    GGUFQ_E_INVALID_ARG      = -1,  /* NULL pointer, negative count, bad option */
    GGUFQ_E_NOMEM            = -2,  /* allocation failed */
    GGUFQ_E_IO               = -3,  /* open/read/write/fsync/rename failed (see errno in message) */
    GGUFQ_E_NOT_IMPLEMENTED  = -4,  /* no kernel for this type/operation (yet) */
    GGUFQ_E_UNKNOWN_TYPE     = -5,  /* type id is not a ggml type, or was removed */
    GGUFQ_E_BAD_SIZE         = -6,  /* element count not a multiple of the type's block size */
    GGUFQ_E_NEEDS_IMATRIX    = -7,  /* this type can only be quantized with an importance matrix */
    GGUFQ_E_ISA_UNSUPPORTED  = -8,  /* the CPU or OS lacks the requested instruction set */
    /* malformed GGUF files */
    GGUFQ_E_FORMAT           = -9,  /* malformed file (generic) */
    GGUFQ_E_BAD_MAGIC        = -10, /* not a GGUF file */
    GGUFQ_E_BAD_VERSION      = -11, /* unsupported GGUF version */
    GGUFQ_E_BIG_ENDIAN       = -12, /* big-endian GGUF: not supported */
    GGUFQ_E_TRUNCATED        = -13, /* a field or tensor data runs past the end of the file */
    GGUFQ_E_BAD_KEY          = -14, /* key empty, longer than 65535 bytes, or contains NUL */
    GGUFQ_E_BAD_VALUE_TYPE   = -15, /* unknown metadata value type */
    GGUFQ_E_BAD_BOOL         = -16, /* bool stored as something other than 0 or 1 */
    GGUFQ_E_NESTING          = -17, /* arrays nested deeper than GGUFQ_MAX_NESTING; requant:
                                       any nested array (ggml refuses them) */
    GGUFQ_E_DUPLICATE_KEY    = -18,
    GGUFQ_E_DUPLICATE_TENSOR = -19,
    GGUFQ_E_BAD_ALIGNMENT    = -20, /* general.alignment of wrong type, zero, or not a power of two */
    GGUFQ_E_BAD_DIMS         = -21, /* zero or more than 4 dimensions, or a negative dimension */
    GGUFQ_E_OVERFLOW         = -22, /* element count or byte size does not fit in 64 bits */
    GGUFQ_E_BAD_SHAPE        = -23, /* first dimension not a multiple of the type's block size */
    GGUFQ_E_BAD_OFFSET       = -24, /* tensor data offset unaligned, overlapping, or out of the file */
    GGUFQ_E_BAD_NAME         = -25, /* tensor name empty, too long, or contains NUL */
    /* lookups and API use */
    GGUFQ_E_NOT_FOUND        = -26, /* no such key / tensor */
    GGUFQ_E_TYPE_MISMATCH    = -27, /* value is not of the requested type */
    GGUFQ_E_LIMIT            = -28, /* a resource limit was exceeded (message names it) */
    GGUFQ_E_SAME_FILE        = -29, /* refusing to overwrite the input file */
    GGUFQ_E_NO_SPACE         = -30, /* the destination file system is full */
    GGUFQ_E_INTERRUPTED      = -31, /* cancelled by a signal or by the progress callback */
    GGUFQ_E_NONFINITE        = -32, /* input weights contain NaN or Inf */
    GGUFQ_E_STATE            = -33  /* call not valid in the object's current state */
} ggufq_status;

/** A short, stable description of a status ("truncated file"); never NULL. */
GGUFQ_API const char *ggufq_strerror(int status);

/** Details of a failure, filled by functions that take a ggufq_error *. */
typedef struct ggufq_error {
    int      status;        /* same value the function returned */
    uint64_t offset;        /* byte offset in the file the problem is at, or GGUFQ_NO_OFFSET */
    char     message[512];  /* complete message: "<file>: offset <n>: <what is wrong>" */
} ggufq_error;

#define GGUFQ_NO_OFFSET UINT64_MAX

/* ------------------------------------------------------------------------- */
/* Tensor types (ids are ggml's)                                             */
/* ------------------------------------------------------------------------- */

typedef enum ggufq_type {
    GGUFQ_TYPE_F32     = 0,
    GGUFQ_TYPE_F16     = 1,
    GGUFQ_TYPE_Q4_0    = 2,
    GGUFQ_TYPE_Q4_1    = 3,
    /* 4, 5: removed (Q4_2, Q4_3) */
    GGUFQ_TYPE_Q5_0    = 6,
    GGUFQ_TYPE_Q5_1    = 7,
    GGUFQ_TYPE_Q8_0    = 8,
    GGUFQ_TYPE_Q8_1    = 9,
    GGUFQ_TYPE_Q2_K    = 10,
    GGUFQ_TYPE_Q3_K    = 11,
    GGUFQ_TYPE_Q4_K    = 12,
    GGUFQ_TYPE_Q5_K    = 13,
    GGUFQ_TYPE_Q6_K    = 14,
    GGUFQ_TYPE_Q8_K    = 15,
    GGUFQ_TYPE_IQ2_XXS = 16,
    GGUFQ_TYPE_IQ2_XS  = 17,
    GGUFQ_TYPE_IQ3_XXS = 18,
    GGUFQ_TYPE_IQ1_S   = 19,
    GGUFQ_TYPE_IQ4_NL  = 20,
    GGUFQ_TYPE_IQ3_S   = 21,
    GGUFQ_TYPE_IQ2_S   = 22,
    GGUFQ_TYPE_IQ4_XS  = 23,
    GGUFQ_TYPE_I8      = 24,
    GGUFQ_TYPE_I16     = 25,
    GGUFQ_TYPE_I32     = 26,
    GGUFQ_TYPE_I64     = 27,
    GGUFQ_TYPE_F64     = 28,
    GGUFQ_TYPE_IQ1_M   = 29,
    GGUFQ_TYPE_BF16    = 30,
    /* 31-33: removed (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) */
    GGUFQ_TYPE_TQ1_0   = 34,
    GGUFQ_TYPE_TQ2_0   = 35,
    /* 36-38: removed (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8) */
    GGUFQ_TYPE_MXFP4   = 39,
    GGUFQ_TYPE_NVFP4   = 40,
    GGUFQ_TYPE_Q1_0    = 41,
    GGUFQ_TYPE_Q2_0    = 42,
    GGUFQ_TYPE_COUNT   = 43   /* one past the largest id; not a type */
} ggufq_type;

/** true for ids that name a current ggml type (not removed, in range). */
GGUFQ_API bool        ggufq_type_is_valid(int type);
/** ggml's spelling ("q4_K", "iq2_xxs", "bf16"); NULL for an invalid id. */
GGUFQ_API const char *ggufq_type_name(ggufq_type type);
/** Case-insensitive lookup of a ggml type name; negative (GGUFQ_E_UNKNOWN_TYPE) if unknown. */
GGUFQ_API int         ggufq_type_from_name(const char *name);
/** Weights per block (1 for plain types); 0 for an invalid id. */
GGUFQ_API int64_t     ggufq_type_block_size(ggufq_type type);
/** Bytes per block; 0 for an invalid id. */
GGUFQ_API size_t      ggufq_type_block_bytes(ggufq_type type);
/** Bytes of a row of n_weights; 0 if the id is invalid or n_weights is not a multiple of the block size. */
GGUFQ_API size_t      ggufq_row_size(ggufq_type type, int64_t n_weights);
/** true for block-quantized types (everything but F32/F16/BF16/F64/I8..I64). */
GGUFQ_API bool        ggufq_type_is_quantized(ggufq_type type);
/** true if quantizing to this type requires an importance matrix (IQ2_XXS, IQ2_XS, IQ1_S). */
GGUFQ_API bool        ggufq_type_needs_imatrix(ggufq_type type);

/* ------------------------------------------------------------------------- */
/* Kernels                                                                    */
/* ------------------------------------------------------------------------- */

/** Decode n_weights weights of `type` from src into dst (F32). */
GGUFQ_API int ggufq_dequantize(ggufq_type type, const void *src, float *dst, int64_t n_weights);

/**
 * Encode nrows rows of n_per_row F32 weights as `type` (exactly as ggml's
 * quantize_<type>). imatrix: NULL, or n_per_row importance weights, one per column.
 * dst receives nrows * ggufq_row_size(type, n_per_row) bytes.
 */
GGUFQ_API int ggufq_quantize(ggufq_type type, const float *src, void *dst,
                             int64_t nrows, int64_t n_per_row, const float *imatrix);

typedef enum ggufq_isa {
    GGUFQ_ISA_SCALAR = 0,
    GGUFQ_ISA_AVX2   = 1,
    GGUFQ_ISA_AVX512 = 2,
    GGUFQ_ISA_NEON   = 3
} ggufq_isa;

/** Force the kernels of one ISA for the whole process; GGUFQ_OK, or GGUFQ_E_ISA_UNSUPPORTED. */
GGUFQ_API int         ggufq_use_isa(ggufq_isa isa);
/** The ISA whose kernels are in use (decided on first use, or by GGUFQ_ISA=...). */
GGUFQ_API ggufq_isa   ggufq_active_isa(void);
/**
 * What became of the GGUFQ_ISA environment variable (read once, on first use
 * of the kernels): GGUFQ_OK if it is unset or names an ISA now in use;
 * GGUFQ_E_INVALID_ARG if it names no ISA, GGUFQ_E_ISA_UNSUPPORTED if this
 * CPU, OS or build cannot run the one it names. On error the best ISA runs
 * instead and err (optional; offset GGUFQ_NO_OFFSET) gets the message, e.g.
 * "GGUFQ_ISA=avx9: not one of scalar, avx2, avx512, neon". The library never
 * prints: a program that honours GGUFQ_ISA should check this and report it.
 */
GGUFQ_API int         ggufq_isa_env_status(ggufq_error *err);
/** "scalar", "avx2", "avx512", "neon"; NULL for an invalid value. */
GGUFQ_API const char *ggufq_isa_name(ggufq_isa isa);
/** true if this CPU and OS can run the ISA's kernels (and they are built in). */
GGUFQ_API bool        ggufq_isa_supported(ggufq_isa isa);

/** What a kernel does, for ggufq_kernel_isa. */
typedef enum ggufq_kernel_op {
    GGUFQ_OP_DEQUANTIZE       = 0,
    GGUFQ_OP_QUANTIZE         = 1,  /* without an imatrix */
    GGUFQ_OP_QUANTIZE_IMATRIX = 2,  /* with one */
    GGUFQ_OP_DEQUANTIZE_F16   = 3,  /* ggufq_dequantize_to(..., GGUFQ_TYPE_F16, ...) */
    GGUFQ_OP_DEQUANTIZE_BF16  = 4   /* ggufq_dequantize_to(..., GGUFQ_TYPE_BF16, ...) */
} ggufq_kernel_op;
/**
 * Kernel coverage: the ISA ("scalar", "avx2", "avx512", "neon") whose code
 * does `op` on `type` under the ISA now in use (ggufq_active_isa). It can be
 * an older ISA than the active one (an AVX-512 run reuses AVX2 kernels that
 * measured faster) or "scalar" (no SIMD kernel). NULL if the library cannot
 * do it at all (unknown type or op, a type it cannot quantize).
 * GGUFQ_OP_DEQUANTIZE_F16/_BF16: the ISA of the fused kernel that decodes
 * straight to half floats; where there is none, the output is decoded to F32
 * (GGUFQ_OP_DEQUANTIZE's kernel) and converted, and the answer ends in
 * "+convert" ("avx2+convert"). Same bits either way.
 */
GGUFQ_API const char *ggufq_kernel_isa(ggufq_type type, ggufq_kernel_op op);
/** The CPU features detected, space-separated ("x86-64 sse4.2 avx avx2 fma ... os-zmm-state"). */
GGUFQ_API const char *ggufq_cpu_features(void);

/*
 * Multi-threaded kernels. The output is byte for byte that of the
 * single-threaded calls, whatever the thread count; arguments are checked the
 * same way, with the same statuses. Small jobs run on the calling thread.
 *
 * Thread counts (here and in ggufq_requant_options.nthreads): nthreads <= 0
 * means OMP_NUM_THREADS when it is set to a positive number (read at each
 * call; its first entry if a list), else every CPU this process may run on.
 * Any count is capped at 4 threads per such CPU and at 512. The threads are
 * the library's own (pthreads, created for the call, or for the whole
 * ggufq_requant run), the calling thread working too; when the system
 * refuses to create more, the work goes on with those that exist (at least
 * the calling thread) with the same output: running out of threads is never
 * an error and never ends the process.
 */

/** The thread count a call given nthreads uses at most (see above); always >= 1. */
GGUFQ_API int ggufq_thread_count(int nthreads);

/** ggufq_dequantize on nthreads threads (the work is split on block boundaries). */
GGUFQ_API int ggufq_dequantize_mt(ggufq_type type, const void *src, float *dst, int64_t n_weights,
                                  int nthreads);
/**
 * Decode n_weights weights of `type` into dst as out_type: F32, F16 or BF16
 * (else GGUFQ_E_INVALID_ARG). F16/BF16 output equals ggufq_dequantize followed by
 * ggufq_quantize(out_type, ...); when type == out_type the bytes are copied.
 * dst receives ggufq_row_size(out_type, n_weights) bytes, at any alignment.
 */
GGUFQ_API int ggufq_dequantize_to(ggufq_type type, const void *src, ggufq_type out_type, void *dst,
                                  int64_t n_weights, int nthreads);
/** ggufq_quantize on nthreads threads (the work is split on row boundaries). */
GGUFQ_API int ggufq_quantize_mt(ggufq_type type, const float *src, void *dst, int64_t nrows,
                                int64_t n_per_row, const float *imatrix, int nthreads);

/* ------------------------------------------------------------------------- */
/* GGUF reading                                                               */
/* ------------------------------------------------------------------------- */

/** Metadata value types (ids are GGUF's). */
typedef enum ggufq_value_type {
    GGUFQ_VT_UINT8   = 0,
    GGUFQ_VT_INT8    = 1,
    GGUFQ_VT_UINT16  = 2,
    GGUFQ_VT_INT16   = 3,
    GGUFQ_VT_UINT32  = 4,
    GGUFQ_VT_INT32   = 5,
    GGUFQ_VT_FLOAT32 = 6,
    GGUFQ_VT_BOOL    = 7,
    GGUFQ_VT_STRING  = 8,
    GGUFQ_VT_ARRAY   = 9,
    GGUFQ_VT_UINT64  = 10,
    GGUFQ_VT_INT64   = 11,
    GGUFQ_VT_FLOAT64 = 12,
    GGUFQ_VT_COUNT   = 13
} ggufq_value_type;

/** "uint8", ..., "string", "array"; NULL for an invalid value. */
GGUFQ_API const char *ggufq_value_type_name(ggufq_value_type t);

#define GGUFQ_MAX_DIMS     4
#define GGUFQ_MAX_KEY_LEN  65535u   /* longest key accepted */
/* Longest tensor name ggml and llama.cpp load. The reader accepts names up to
 * GGUFQ_MAX_KEY_LEN bytes (so `ggufq info` can show such files); the writer
 * and requant refuse longer ones with GGUFQ_E_BAD_NAME, since ggml could not
 * load what they would write. */
#define GGUFQ_MAX_NAME_LEN 63u
#define GGUFQ_MAX_NESTING  16       /* deepest array-of-array nesting accepted */
#define GGUFQ_DEFAULT_ALIGNMENT 32

/** A string inside a mapped file: not NUL-terminated. */
typedef struct ggufq_str {
    const char *ptr;
    uint64_t    len;
} ggufq_str;

typedef struct ggufq_file ggufq_file;

/**
 * A metadata value (scalar, string or array). Only the typed accessors below
 * should look inside; the fields after `count` are private.
 */
typedef struct ggufq_value {
    ggufq_value_type type;
    ggufq_value_type elem_type;   /* arrays: the element type */
    uint64_t         count;       /* arrays: number of elements */
    /* private */
    const uint8_t   *p_data;      /* encoded value (after the type tag) */
    uint64_t         p_size;      /* encoded size in bytes */
    uint64_t         p_offset;    /* file offset of p_data */
} ggufq_value;

/** Limits for opening untrusted files; zero fields mean the default. */
typedef struct ggufq_open_options {
    uint64_t max_metadata_bytes;  /* memory spent on the index of keys, tensor infos, names; default 1 GiB */
    uint64_t max_tensors;         /* default 1,000,000 */
    uint64_t max_kv;              /* default 1,000,000 */
} ggufq_open_options;

/** Open and fully validate a GGUF file (mmap, read-only). opts and err may be NULL. */
GGUFQ_API int  ggufq_open(const char *path, const ggufq_open_options *opts,
                          ggufq_file **out, ggufq_error *err);
/** Same, on bytes in memory (not copied: they must outlive the handle). name is used in messages. */
GGUFQ_API int  ggufq_open_memory(const void *data, size_t size, const char *name,
                                 const ggufq_open_options *opts, ggufq_file **out, ggufq_error *err);
GGUFQ_API void ggufq_close(ggufq_file *f);

GGUFQ_API const char *ggufq_file_name(const ggufq_file *f);        /* the path or name given */
GGUFQ_API uint32_t    ggufq_file_version(const ggufq_file *f);     /* 2 or 3 */
GGUFQ_API uint64_t    ggufq_file_size(const ggufq_file *f);
GGUFQ_API uint64_t    ggufq_file_alignment(const ggufq_file *f);
GGUFQ_API uint64_t    ggufq_file_data_offset(const ggufq_file *f); /* start of the tensor data section */

/**
 * For streaming through a mapped file bigger than RAM (e.g. one tensor at a
 * time): the bytes [data, data + size), inside the file's bytes (a tensor's
 * ggufq_tensor_info.data, or part of it), will not be read again soon. The
 * whole pages inside that range leave this process's resident memory;
 * reading them later still works (the kernel maps them again from the
 * file). Returns GGUFQ_OK, also for files opened from memory (where it does
 * nothing), or GGUFQ_E_INVALID_ARG for a range outside the file.
 */
GGUFQ_API int ggufq_file_release(const ggufq_file *f, const void *data, size_t size);

/* Metadata: keys are indexed 0..kv_count-1 in file order. */
GGUFQ_API int64_t     ggufq_kv_count(const ggufq_file *f);
/** Index of a key, or GGUFQ_E_NOT_FOUND. O(1). */
GGUFQ_API int64_t     ggufq_find_key(const ggufq_file *f, const char *key);
/** NUL-terminated key; NULL if i is out of range. */
GGUFQ_API const char *ggufq_kv_key(const ggufq_file *f, int64_t i);
GGUFQ_API int         ggufq_kv_value(const ggufq_file *f, int64_t i, ggufq_value *out);
/** ggufq_find_key + ggufq_kv_value. */
GGUFQ_API int         ggufq_get(const ggufq_file *f, const char *key, ggufq_value *out);

/* Typed accessors: GGUFQ_E_TYPE_MISMATCH if the value does not convert exactly. */
GGUFQ_API int ggufq_value_uint (const ggufq_value *v, uint64_t *out);  /* any integer type, >= 0 */
GGUFQ_API int ggufq_value_int  (const ggufq_value *v, int64_t *out);   /* any integer type in range */
GGUFQ_API int ggufq_value_float(const ggufq_value *v, double *out);    /* float32 or float64 */
GGUFQ_API int ggufq_value_bool (const ggufq_value *v, bool *out);
GGUFQ_API int ggufq_value_str  (const ggufq_value *v, ggufq_str *out);
/** Element i of an array. O(1) for fixed-size elements, O(i) for strings and nested arrays. */
GGUFQ_API int ggufq_array_get  (const ggufq_value *array, uint64_t i, ggufq_value *out);
/** Raw little-endian elements of an array of a fixed-size type (not string/array). */
GGUFQ_API int ggufq_array_data (const ggufq_value *array, const void **data, size_t *elem_size);

/** Sequential access to arrays of any element type: O(1) per element. */
typedef struct ggufq_array_iter {
    ggufq_value array;
    uint64_t    index;     /* next element */
    uint64_t    pos;       /* private: byte position of the next element */
} ggufq_array_iter;
GGUFQ_API int ggufq_array_iter_init(ggufq_array_iter *it, const ggufq_value *array);
/** 1 and the element in *out; 0 at the end; negative on error. */
GGUFQ_API int ggufq_array_iter_next(ggufq_array_iter *it, ggufq_value *out);

/* Tensors: indexed 0..tensor_count-1 in file order. */
typedef struct ggufq_tensor_info {
    const char *name;                 /* NUL-terminated */
    ggufq_type  type;
    uint32_t    n_dims;               /* 1..4 */
    int64_t     dims[GGUFQ_MAX_DIMS]; /* ggml's ne[]: dims[0] is the row length; unused dims are 1 */
    int64_t     n_elements;
    uint64_t    offset;               /* relative to ggufq_file_data_offset() */
    uint64_t    size;                 /* bytes */
    const void *data;                 /* the tensor's bytes in the mapping */
} ggufq_tensor_info;

GGUFQ_API int64_t ggufq_tensor_count(const ggufq_file *f);
GGUFQ_API int     ggufq_tensor_at(const ggufq_file *f, int64_t i, ggufq_tensor_info *out);
/** Index of a tensor, or GGUFQ_E_NOT_FOUND. O(1). */
GGUFQ_API int64_t ggufq_find_tensor(const ggufq_file *f, const char *name);

/* ------------------------------------------------------------------------- */
/* GGUF writing                                                               */
/* ------------------------------------------------------------------------- */

typedef struct ggufq_writer ggufq_writer;

typedef struct ggufq_writer_options {
    uint64_t          alignment;  /* 0: the value of general.alignment if set, else 32 */
    const ggufq_file *input;      /* if not NULL: refuse (GGUFQ_E_SAME_FILE) when path is this file
                                     (by name, symbolic or hard link), at create and before the rename */
} ggufq_writer_options;

/**
 * Start writing `path`. A symbolic link is followed to the file it leads to
 * (the link stays). A regular file (or nothing) there is replaced atomically:
 * data goes to a temporary file in that file's directory (on Linux an
 * O_TMPFILE file with no name, so even a killed process leaves nothing),
 * which ggufq_writer_finish() fsyncs and renames over it; nothing at `path`
 * is touched before that, a failure removes the temporary file, and a
 * replaced file keeps its permission bits (a new one: 0666 less the umask).
 * A FIFO or character device is written into directly, in order (a FIFO
 * waits for its reader; a failure there cannot be undone). A directory,
 * socket or block device is refused (GGUFQ_E_IO). Writes stop at
 * RLIMIT_FSIZE with an error (EFBIG) instead of raising SIGXFSZ. Writing into
 * a pipe whose reader is gone raises SIGPIPE, as any write(2) does: ignore it
 * to get the error instead.
 */
GGUFQ_API int ggufq_writer_create(const char *path, const ggufq_writer_options *opts,
                                  ggufq_writer **out, ggufq_error *err);

/* Metadata, in the order set; setting an existing key replaces its value in place. */
GGUFQ_API int ggufq_writer_set_uint  (ggufq_writer *w, const char *key, ggufq_value_type t, uint64_t v);
GGUFQ_API int ggufq_writer_set_int   (ggufq_writer *w, const char *key, ggufq_value_type t, int64_t v);
GGUFQ_API int ggufq_writer_set_float (ggufq_writer *w, const char *key, ggufq_value_type t, double v);
GGUFQ_API int ggufq_writer_set_bool  (ggufq_writer *w, const char *key, bool v);
GGUFQ_API int ggufq_writer_set_string(ggufq_writer *w, const char *key, const char *s, size_t len);
/** Array of a fixed-size type; elems in host C layout (uint8_t, int16_t, float, double, bool ...). */
GGUFQ_API int ggufq_writer_set_array (ggufq_writer *w, const char *key, ggufq_value_type elem,
                                      const void *elems, uint64_t n);
GGUFQ_API int ggufq_writer_set_string_array(ggufq_writer *w, const char *key,
                                            const char *const *strs, const size_t *lens, uint64_t n);
/**
 * Copy a value read from a file (any type, any nesting). Nested arrays (arrays
 * of arrays) are valid GGUF and are written as given, but ggml's GGUF reader
 * (so llama.cpp) refuses a file holding one: ggufq_requant and `ggufq dequant`
 * refuse such input rather than write a file ggml cannot load.
 */
GGUFQ_API int ggufq_writer_set_value (ggufq_writer *w, const char *key, const ggufq_value *v);
/**
 * A value given in GGUF encoding (after the type tag); validated like a file's.
 * For nested arrays (which ggml cannot load: see ggufq_writer_set_value).
 */
GGUFQ_API int ggufq_writer_set_encoded(ggufq_writer *w, const char *key, ggufq_value_type t,
                                       const void *bytes, size_t len);
GGUFQ_API int ggufq_writer_remove    (ggufq_writer *w, const char *key);

/** Declare the next tensor (data is written later, in declaration order). */
GGUFQ_API int ggufq_writer_add_tensor(ggufq_writer *w, const char *name, ggufq_type type,
                                      uint32_t n_dims, const int64_t *dims);
/**
 * Stream tensor data: bytes of the declared tensors, in order, in chunks of any
 * size. The first call writes the header; metadata and tensors are frozen from then on.
 */
GGUFQ_API int ggufq_writer_write(ggufq_writer *w, const void *data, size_t size);
/** Check every tensor is complete, fsync, rename into place; frees w whatever the outcome. err may be NULL. */
GGUFQ_API int ggufq_writer_finish(ggufq_writer *w, ggufq_error *err);
/** Remove the temporary file and free w (safe on NULL). */
GGUFQ_API void ggufq_writer_abort(ggufq_writer *w);
/** Details of the last failure of w (status GGUFQ_OK if none). */
GGUFQ_API const ggufq_error *ggufq_writer_error(const ggufq_writer *w);


/* ------------------------------------------------------------------------- */
/* Requantization (llama.cpp's quantizer, byte for byte)                     */
/* ------------------------------------------------------------------------- */

/**
 * Options of ggufq_requant; initialise with ggufq_requant_options_init, then set fields.
 * New fields are added at the end: struct_size tells which ones the caller knows.
 */
typedef struct ggufq_requant_options {
    size_t       struct_size;          /* sizeof(ggufq_requant_options): lets the struct grow */
    const char  *target;               /* a ggml type ("q4_K") or a llama.cpp recipe ("Q4_K_M") */
    int          nthreads;             /* 0: all CPUs (see ggufq_thread_count); < 0 is refused */
    const char  *imatrix_path;         /* NULL: none (legacy .dat or GGUF imatrix) */
    int          output_tensor_type;   /* -1: by the recipe */
    int          token_embedding_type; /* -1: by the recipe */
    const char *const *tensor_types;   /* "REGEX=TYPE" overrides, applied in order */
    size_t       n_tensor_types;
    const char *const *include_weights;/* imatrix entries to use (names); NULL: all */
    size_t       n_include_weights;
    const char *const *exclude_weights;/* imatrix entries to ignore */
    size_t       n_exclude_weights;
    const char *const *kv_overrides;   /* "KEY=TYPE:VALUE" (TYPE: int, float, bool, str) */
    size_t       n_kv_overrides;
    bool         leave_output_tensor;  /* keep output.weight's type */
    bool         pure;                 /* no per-tensor recipe rules (implied by a bare type) */
    bool         keep_split;           /* write the same shards as the input: out_path less ".gguf"
                                          and "-0000i-of-0000N.gguf", even for N = 1 (llama.cpp's names) */
    bool         dry_run;              /* plan only, write nothing */
    bool         allow_requantize;     /* convert tensors that are already quantized (decoded, then
                                          quantized again: quality is lost). true after
                                          ggufq_requant_options_init; false refuses such a run
                                          (GGUFQ_E_INVALID_ARG), as llama.cpp's default and
                                          `ggufq requant` without --allow-requantize do */
    /* Added after 0.1.0: a caller built without them passes a smaller struct_size (they read as unset). */
    const int32_t *prune_layers;       /* blocks to drop (llama-quantize --prune-layers): strictly
                                          increasing, each below <arch>.block_count, not all of them.
                                          The others are renumbered from 0, block_count is updated
                                          (as llama.cpp does), and so, unlike llama.cpp, is every
                                          per-layer metadata array (see README). */
    size_t       n_prune_layers;
} ggufq_requant_options;

GGUFQ_API void ggufq_requant_options_init(ggufq_requant_options *opts);

/**
 * The checks of ggufq_requant that need no file: the target (as llama-quantize
 * reads its TYPE: names in any case, aliases, file type numbers, COPY; or a bare
 * ggml type), the --tensor-type rules, the --override-kv strings, the
 * --prune-layers list (order, signs; its range needs the file) and the option
 * combinations. GGUFQ_OK, or the status and message ggufq_requant would give
 * (so a caller can tell a usage error from a failure on the file).
 */
GGUFQ_API int ggufq_requant_options_check(const ggufq_requant_options *opts, ggufq_error *err);

/**
 * What a target resolves to, as llama-quantize reads it: the recipe's name
 * ("q4_k", "Q4_K" and "15" give "Q4_K_M"; "12" gives "Q3_K_M"), "COPY", or
 * for a bare ggml type its ggml name ("MXFP4" gives "mxfp4"). NULL if target
 * is none of these. The string is static.
 */
GGUFQ_API const char *ggufq_requant_target_name(const char *target);

/** Progress of a requant run; passed to the callback after each chunk. */
typedef struct ggufq_progress {
    const char *tensor_name;     /* tensor being processed */
    int64_t     tensor_index;    /* 0-based, in the input's tensor order */
    int64_t     tensor_count;
    uint64_t    bytes_done;      /* input tensor bytes finished, whole run */
    uint64_t    bytes_total;
    uint64_t    bytes_written;   /* output bytes so far */
    double      elapsed_seconds;
} ggufq_progress;

/** Return non-zero to cancel the run (it then fails with GGUFQ_E_INTERRUPTED). */
typedef int (*ggufq_progress_fn)(const ggufq_progress *progress, void *user_data);

/** One line of a requant plan. */
typedef struct ggufq_plan_entry {
    const char *name;
    ggufq_type  in_type;
    ggufq_type  out_type;        /* == in_type: copied byte for byte */
    uint32_t    n_dims;          /* as written: trailing 1s dropped, as llama.cpp ([1,1,64,1]: 3) */
    int64_t     dims[GGUFQ_MAX_DIMS];
    uint64_t    in_bytes;
    uint64_t    out_bytes;
    bool        uses_imatrix;
    const char *reason;          /* why this type: "recipe: attn_v", "fallback: rows of 8", "kept: 1D" ... */
} ggufq_plan_entry;

typedef struct ggufq_plan ggufq_plan;

/** Decide every tensor's output type (what --dry-run prints); nothing is written. The plan keeps
 *  its inputs open (ggufq_plan_run writes it) until ggufq_plan_free. */
GGUFQ_API int  ggufq_requant_plan(const char *in_path, const ggufq_requant_options *opts,
                                  ggufq_plan **out, ggufq_error *err);
GGUFQ_API int64_t ggufq_plan_count(const ggufq_plan *plan);
GGUFQ_API const ggufq_plan_entry *ggufq_plan_at(const ggufq_plan *plan, int64_t i);
/** llama.cpp's ftype id written as general.file_type. */
GGUFQ_API uint32_t ggufq_plan_file_type(const ggufq_plan *plan);
/** The llama-quantize name of a llama.cpp ftype id ("Q4_K_M" for 15, "F32" for 0); NULL if it has none. */
GGUFQ_API const char *ggufq_ftype_name(int ftype);
/** True when no recipe rules apply: the target is a bare type (llama-quantize --pure), or opts->pure. */
GGUFQ_API bool     ggufq_plan_pure(const ggufq_plan *plan);
GGUFQ_API void ggufq_plan_free(ggufq_plan *plan);

/**
 * Requantize in_path (first shard of a split model, or a single file) to out_path,
 * exactly as llama.cpp's llama_model_quantize would. Streams tensor by tensor with
 * bounded memory; writes atomically (temporary file, fsync, rename). progress may be NULL.
 */
GGUFQ_API int ggufq_requant(const char *in_path, const char *out_path,
                            const ggufq_requant_options *opts,
                            ggufq_progress_fn progress, void *user_data, ggufq_error *err);

/**
 * Write the output of a plan made by ggufq_requant_plan: the same bytes and
 * failures as ggufq_requant with the plan's options, without opening the
 * inputs or planning again (the plan holds the shards and the imatrix open
 * until ggufq_plan_free, and keeps its own copies of the options it reads;
 * opts->dry_run is not looked at). The inputs must not have changed since
 * the plan was made.
 */
GGUFQ_API int ggufq_plan_run(const ggufq_plan *plan, const char *out_path,
                             ggufq_progress_fn progress, void *user_data, ggufq_error *err);

/* ------------------------------------------------------------------------- */
/* Catalogue (what `ggufq types` lists)                                      */
/* ------------------------------------------------------------------------- */

/** true if ggufq_quantize can encode this type (some need an imatrix: ggufq_type_needs_imatrix). */
GGUFQ_API bool ggufq_type_can_quantize(ggufq_type type);

/** One of the TYPE names llama-quantize lists (its QUANT_OPTIONS), as ggufq_requant reads them. */
typedef struct ggufq_recipe_info {
    const char *name;          /* "Q4_K_M"; aliases ("Q4_K") and "COPY" included */
    uint32_t    file_type;     /* llama.cpp's llama_ftype, written as general.file_type */
    ggufq_type  default_type;  /* the type most tensors get */
    const char *alias_of;      /* an alias: the recipe it names ("Q4_K_M"); else NULL */
    bool        copy;          /* COPY: every tensor kept as it is */
    bool        needs_imatrix; /* llama.cpp refuses it without an importance matrix (on a llama) */
    double      bpw;           /* bits per weight llama-quantize states; 0 where it states a size */
    const char *description;   /* llama-quantize's text: "4.58G, +0.1754 ppl @ Llama-3-8B" */
} ggufq_recipe_info;

/** How many names llama-quantize lists (aliases and COPY included). */
GGUFQ_API int64_t ggufq_recipe_count(void);
/** The i-th, in llama-quantize's order; GGUFQ_E_INVALID_ARG if i is out of range or out is NULL. */
GGUFQ_API int     ggufq_recipe_at(int64_t i, ggufq_recipe_info *out);

/* ------------------------------------------------------------------------- */
/* Measuring quantization error (`ggufq diff`, `ggufq stats`)                */
/* ------------------------------------------------------------------------- */

/*
 * Error of x against a reference a, in float64. Deterministic: the same bits
 * whatever the thread count, the ISA of the kernels and the way a tensor is
 * cut into chunks. Each row's sums run over its columns in a fixed pattern;
 * rows are summed in order in groups of ggufq_metrics_group_rows(ncols) rows,
 * and the groups are summed in order.
 */
typedef struct ggufq_metrics {
    int64_t n;           /* weights compared */
    double  rmse;        /* sqrt(sum (a-b)^2 / n) */
    double  max_abs;     /* largest |a-b|; NaN if a difference is NaN */
    double  nmse;        /* sum (a-b)^2 / sum a^2; 0 if both sums are 0, +inf if only sum a^2 is */
    double  cosine;      /* sum ab / sqrt(sum a^2 * sum b^2); 1 if both are all zeros, 0 if one is */
    double  wmse;        /* with importance weights im (one per column): the mean over rows of
                            sum_j im_j (a-b)^2 / sum_j im_j (a row whose weights sum to 0: its
                            plain mean square); NaN without importance weights */
    bool    identical;   /* the two float arrays are equal bit for bit */
    bool    has_wmse;
    /* the sums the figures come from (to combine tensors) */
    double  sum_sq_diff, sum_sq_ref, sum_sq_x, sum_ref_x;
} ggufq_metrics;

/** Rows per summation group for rows of ncols weights (a function of ncols only). */
GGUFQ_API int64_t ggufq_metrics_group_rows(int64_t ncols);

/**
 * Error of x against ref, both nrows * ncols floats. imatrix: NULL, or ncols
 * importance weights (llama.cpp's per-column importance) for wmse.
 */
GGUFQ_API int ggufq_error_metrics(const float *ref, const float *x, int64_t nrows, int64_t ncols,
                                  const float *imatrix, ggufq_metrics *out);

/**
 * Error of a typed tensor x against a typed tensor ref (any types with a
 * dequantizer; both nrows rows of ncols weights): both decoded, then as
 * ggufq_error_metrics. Equal bytes of equal types are decoded once.
 * imatrix: NULL, or ncols * n_slices weights; row r uses slice
 * (r / slice_rows) % n_slices (llama.cpp's per-expert importance: slice_rows
 * is ne[1], n_slices ne[2]; for one slice pass slice_rows = nrows, n_slices = 1).
 */
GGUFQ_API int ggufq_tensor_error(ggufq_type ref_type, const void *ref, ggufq_type x_type, const void *x,
                                 int64_t nrows, int64_t ncols, const float *imatrix,
                                 int64_t slice_rows, int64_t n_slices, int nthreads, ggufq_metrics *out);

/**
 * Candidate evaluation: quantize src (nrows rows of ncols F32 weights) to
 * `type` exactly as ggufq_quantize does (imatrix: NULL or ncols weights, as
 * there), decode it, and measure against src. *bytes (optional) gets the
 * encoded size. Nothing is kept.
 */
GGUFQ_API int ggufq_quantization_error(ggufq_type type, const float *src, int64_t nrows, int64_t ncols,
                                       const float *imatrix, int nthreads, ggufq_metrics *out,
                                       uint64_t *bytes);

/* ---- ggufq_diff_files: two GGUF files, tensor by tensor ------------------- */

typedef struct ggufq_diff_options {
    size_t      struct_size;   /* sizeof(ggufq_diff_options) */
    const char *imatrix_path;  /* NULL: no wmse (legacy .dat or GGUF imatrix) */
    int         nthreads;      /* 0: all CPUs (see ggufq_thread_count) */
} ggufq_diff_options;

GGUFQ_API void ggufq_diff_options_init(ggufq_diff_options *opts);

typedef enum ggufq_diff_kind {
    GGUFQ_DIFF_COMPARED  = 0,  /* in both, same shape: measured (A is the reference) */
    GGUFQ_DIFF_ONLY_IN_A = 1,
    GGUFQ_DIFF_ONLY_IN_B = 2,
    GGUFQ_DIFF_SHAPE     = 3   /* in both, different shapes (dims compared, trailing 1s ignored) */
} ggufq_diff_kind;

typedef struct ggufq_diff_tensor {
    const char     *name;      /* points into a or b: valid while both are open */
    ggufq_diff_kind kind;
    int64_t         index_a, index_b;   /* tensor indices; -1 when absent */
    ggufq_type      type_a, type_b;     /* meaningful where present */
    int64_t         n;                  /* weights (A's, else B's) */
    ggufq_metrics   m;                  /* GGUFQ_DIFF_COMPARED only */
} ggufq_diff_tensor;

typedef enum ggufq_diff_kv_kind {
    GGUFQ_DIFF_KV_ADDED   = 0,  /* only in B */
    GGUFQ_DIFF_KV_REMOVED = 1,  /* only in A */
    GGUFQ_DIFF_KV_CHANGED = 2   /* in both, different type or value */
} ggufq_diff_kv_kind;

typedef struct ggufq_diff_kv {
    const char        *key;
    ggufq_diff_kv_kind kind;
    int64_t            index_a, index_b;  /* key indices; -1 when absent */
} ggufq_diff_kv;

typedef struct ggufq_diff ggufq_diff;

/**
 * Compare b against a: every tensor of both (decoded, streamed chunk by chunk
 * with ggufq_file_release, on nthreads threads) and every metadata key.
 * Tensors are listed in a's order, then those only in b in b's order; keys
 * likewise. Missing tensors and shape differences are listed, not errors.
 */
GGUFQ_API int ggufq_diff_files(const ggufq_file *a, const ggufq_file *b, const ggufq_diff_options *opts,
                               ggufq_diff **out, ggufq_error *err);
GGUFQ_API int64_t ggufq_diff_tensor_count(const ggufq_diff *d);
GGUFQ_API const ggufq_diff_tensor *ggufq_diff_tensor_at(const ggufq_diff *d, int64_t i);
GGUFQ_API int64_t ggufq_diff_kv_count(const ggufq_diff *d);
GGUFQ_API const ggufq_diff_kv *ggufq_diff_kv_at(const ggufq_diff *d, int64_t i);
GGUFQ_API void ggufq_diff_free(ggufq_diff *d);

/* ---- ggufq_stats: what each candidate type would cost --------------------- */

typedef struct ggufq_stats_options {
    size_t            struct_size;   /* sizeof(ggufq_stats_options) */
    const ggufq_type *types;         /* candidate types (bare types, as requant --pure) */
    size_t            n_types;
    const char       *imatrix_path;  /* NULL: none; used as requant uses it, and for wmse */
    int               nthreads;      /* 0: all CPUs */
    const char       *cache_path;    /* NULL: none; else results are read from and added to it */
} ggufq_stats_options;

GGUFQ_API void ggufq_stats_options_init(ggufq_stats_options *opts);

typedef struct ggufq_stats_candidate {
    ggufq_type    type;       /* the candidate asked for */
    ggufq_type    used;       /* what requant --pure to `type` writes (!= type: a fallback) */
    bool          fallback;   /* used != type */
    const char   *reason;     /* requant's reason ("pure", "fallback: ...", "kept: 1D" ...); static */
    uint64_t      bytes;      /* encoded size as `used` */
    double        bpw;        /* bytes * 8 / n */
    ggufq_metrics m;          /* decoded `used` against the source */
} ggufq_stats_candidate;

typedef struct ggufq_stats_tensor {
    const char  *name;
    ggufq_type   in_type;
    uint32_t     n_dims;
    int64_t      dims[GGUFQ_MAX_DIMS];
    int64_t      n;
    const ggufq_stats_candidate *candidates;   /* one per options type, in their order */
} ggufq_stats_tensor;

typedef struct ggufq_stats ggufq_stats;

/**
 * For every tensor a requant to at least one candidate converts (in the
 * input's file order; every shard of a split model), and each candidate:
 * quantize exactly as `requant --pure IN TYPE` would (same plan, fallbacks,
 * kernels and imatrix use), decode, measure. Nothing is written (but the
 * cache). The numbers equal those ggufq_diff_files reports for IN against
 * that requant's output, bit for bit.
 */
GGUFQ_API int ggufq_stats_run(const char *in_path, const ggufq_stats_options *opts, ggufq_stats **out,
                              ggufq_error *err);
GGUFQ_API int64_t ggufq_stats_count(const ggufq_stats *s);
GGUFQ_API const ggufq_stats_tensor *ggufq_stats_at(const ggufq_stats *s, int64_t i);
/** Candidates looked up in the cache rather than computed (0 without a cache). */
GGUFQ_API int64_t ggufq_stats_cache_hits(const ggufq_stats *s);
GGUFQ_API void ggufq_stats_free(ggufq_stats *s);

/* ------------------------------------------------------------------------- */
/* Quantizing to a budget (`ggufq requant IN auto OUT --target-size SIZE`)   */
/* ------------------------------------------------------------------------- */

/*
 * Per-tensor types chosen from measured error under a size budget. Every
 * tensor requant converts is measured at every candidate type (ggufq_stats_run:
 * exactly the bytes `requant --pure` writes, fallbacks included); then one
 * type per tensor is chosen to minimise the total error within the budget
 * (a multiple-choice knapsack: convex-hull greedy, leftover fill, bounded
 * branch and bound; the plan carries a lower bound no choice can beat).
 *
 * The error of a tensor at a type: without an imatrix, the plain sum of
 * (w - q)^2. With one (per-column mean squared activation im_j), the expected
 * squared error the tensor adds to its output per token, in the imatrix's
 * units: for a tensor with an entry, the sum over rows and columns of
 * im_j * (w - q)^2 (the importance term llama.cpp's quantizers weight their
 * row searches with); for a lookup table without one (a name ending in
 * "embd.weight": token_embd, whose input is a one-hot token, so im would be
 * the tokens' frequencies, taken as equal), the sum of (w - q)^2 over the
 * number of rows; for another tensor without one (output.weight when the
 * imatrix lacks it), the sum of (w - q)^2 times the mean im_j of the entries
 * of the same width (else of all entries). Per-expert importance (one slice
 * per expert) uses the mean of the slices' sums (exact when they are equal).
 *
 * Fixed points (not chosen, their bytes taken off the budget): tensors
 * requant never converts (1D tensors, norms, ...: kept), and tensors a
 * requant option sets (--tensor-type rules, --output-tensor-type,
 * --token-embedding-type, --leave-output-tensor). token_embd and output are
 * chosen like any other tensor.
 */
typedef struct ggufq_auto_options {
    size_t      struct_size;    /* sizeof(ggufq_auto_options) */
    uint64_t    target_size;    /* bytes of the output file(s); 0: target_bpw is used */
    double      target_bpw;     /* 8 * tensor bytes / weights over the whole file (as llama-quantize
                                   reports it); used when target_size is 0 */
    const ggufq_type *candidates;   /* NULL: q2_K q3_K q4_K q5_K q6_K q8_0 iq4_xs f16, plus with an
                                       imatrix iq3_s, iq3_xxs when every converted tensor but
                                       token_embd and output has an entry, and iq2_xs when every
                                       converted tensor has one */
    size_t      n_candidates;   /* 1 to 64 */
    const char *stats_cache_path;   /* NULL: none; else as ggufq_stats_options.cache_path */
} ggufq_auto_options;

GGUFQ_API void ggufq_auto_options_init(ggufq_auto_options *opts);

/** One tensor of a budget plan (in requant's output order). */
typedef struct ggufq_auto_entry {
    const char *name;
    ggufq_type  in_type;
    ggufq_type  type;       /* what the output holds */
    int64_t     n;          /* weights */
    uint64_t    bytes;      /* its data in the output */
    double      error;      /* predicted error (see above); 0 for a tensor copied as it is, NaN for one
                               a requant option fixes at a type that was not measured */
    bool        chosen;     /* the optimiser chose the type (else a fixed point) */
    const char *reason;     /* "budget", or requant's reason for a fixed point ("kept: 1D" ...) */
} ggufq_auto_entry;

typedef struct ggufq_auto_totals {
    uint64_t    tensor_bytes;      /* every tensor's data, as planned */
    uint64_t    file_bytes;        /* predicted size of the output (an upper estimate of the header) */
    uint64_t    weights;           /* every tensor's */
    double      bpw;               /* 8 * tensor_bytes / weights */
    double      error;             /* total predicted error of the chosen tensors */
    double      lower_bound;       /* no choice within the budget has a smaller total error */
    uint64_t    budget_bytes;      /* what the chosen tensors may use (the budget less the fixed points
                                      and, for target_size, the header; data padded to the alignment) */
    uint64_t    min_bytes, max_bytes;  /* the smallest and largest totals possible, in the same units as
                                          budget_bytes (the fixed points and header included) */
    uint64_t    target_bytes;      /* the budget in those units: target_size, or target_bpw's tensor bytes */
    bool        budget_reached;    /* used at least 98% of the budget (false: every tensor already has
                                      its most exact candidate, or the sizes leave a gap) */
    bool        weighted;          /* the error is imatrix-weighted */
    ggufq_type  base_type;         /* the bare type of the replay: requant IN <type> --pure
                                      --tensor-type-file PLAN (general.file_type is its ftype) */
    int64_t     chosen, fixed;     /* tensors of each kind */
} ggufq_auto_totals;

typedef struct ggufq_auto_plan ggufq_auto_plan;

/**
 * Measure and choose. ropts (NULL: defaults) gives the imatrix, threads and
 * fixed points as for ggufq_requant (its target and pure are ignored;
 * include/exclude_weights and prune_layers are refused). Errors: a budget
 * below the smallest possible plan (the message gives that size), a
 * candidate needing an imatrix without one, duplicate or unusable candidates.
 */
GGUFQ_API int ggufq_auto_plan_make(const char *in_path, const ggufq_requant_options *ropts,
                                   const ggufq_auto_options *opts, ggufq_auto_plan **out, ggufq_error *err);
GGUFQ_API int64_t ggufq_auto_plan_count(const ggufq_auto_plan *plan);
GGUFQ_API const ggufq_auto_entry *ggufq_auto_plan_at(const ggufq_auto_plan *plan, int64_t i);
GGUFQ_API void ggufq_auto_plan_totals(const ggufq_auto_plan *plan, ggufq_auto_totals *out);
/**
 * The predicted tensor bytes and total error (same objective) of a llama.cpp
 * recipe (e.g. "Q4_K_M") on the same input and imatrix: GGUFQ_E_NOT_FOUND
 * when it uses a type no candidate measured, or requant refuses it.
 */
GGUFQ_API int ggufq_auto_plan_recipe(const ggufq_auto_plan *plan, const char *recipe, uint64_t *tensor_bytes,
                                     double *error, ggufq_error *err);
/**
 * The plan as a llama-quantize --tensor-type-file: one anchored exact-name
 * rule a line ("^blk\.0\.attn_q\.weight$=q4_K") for every converted tensor,
 * written atomically to path.
 */
GGUFQ_API int ggufq_auto_plan_write_rules(const ggufq_auto_plan *plan, const char *path, ggufq_error *err);
/**
 * Write the planned file: ggufq_requant with ropts (as for the plan), target
 * the plan's base type, pure, the plan's rules, and the keys
 * quantize.budget.{target,bpw,objective} recorded. ropts->dry_run plans only.
 */
GGUFQ_API int ggufq_auto_requant(const char *in_path, const char *out_path, const ggufq_auto_plan *plan,
                                 const ggufq_requant_options *ropts, ggufq_progress_fn progress,
                                 void *user_data, ggufq_error *err);
GGUFQ_API void ggufq_auto_plan_free(ggufq_auto_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* GGUFQ_H */
