/*
 * parallel_api.c — ggufq_dequantize_mt, ggufq_dequantize_to, ggufq_quantize_mt:
 * the kernels of ggufq_dequantize / ggufq_quantize run on pieces of the work,
 * the pieces spread over the library's threads (api/threads.h).
 *
 * Bytes never depend on the thread count:
 *  - dequantization is cut on block boundaries, and every kernel decodes each
 *    block on its own, so decoding the pieces is decoding the whole;
 *  - quantization is cut on row boundaries only: some quantizers use whole-row
 *    statistics (q4_0 with an imatrix weighs by the row's mean square), so a
 *    row is never split;
 *  - F16/BF16 output is the F16/BF16 quantizer of the active ISA applied to
 *    the decoded F32 values, one weight at a time, so converting a piece
 *    through a small buffer equals dequantize-then-convert.
 *
 * Small jobs run on the calling thread: waking a team costs more than it
 * saves below a few hundred KiB.
 * Large F32 outputs are decoded through a small buffer and streamed out with
 * non-temporal stores (the ISA's widest; SSE2 is part of baseline x86-64):
 * no read-for-ownership of each destination line, which is what keeps them
 * near memory bandwidth.
 * Everything else ISA-specific lives behind the dispatch table.
 */
#include <stdint.h>
#include <string.h>

#include <pthread.h>

#include "ggufq.h"
#include "api/threads.h"
#include "gguf/types.h"
#include "simd/dispatch.h"
#include "simd/stream.h"

#ifdef GQ_HAVE_SSE2_STREAM_COPY   /* x86-64: simd/stream.h's copies */
#include <emmintrin.h>            /* _mm_sfence */
#define GQ_STREAM_STORES 1
#endif

/* Dequantization: weights per task (64 Ki: 256 KiB of F32, L2-sized), and
 * the smallest job worth a parallel region. */
#define DEQ_TASK_WEIGHTS ((int64_t)1 << 16)
#define DEQ_MIN_WEIGHTS  ((int64_t)1 << 18)
/* Staging buffers per thread: 16 KiB of F32, 8 KiB of F16/BF16 (both stay
 * in L1; 1-8 Ki weights measured alike). A multiple of every block size
 * (the largest today is 256). */
#define STAGE_WEIGHTS    4096
/* Outputs of at least this many weights per thread go out with streaming
 * stores (below that, the caller may still find them in cache). Stages of
 * 512 to 4096 weights measured alike there (Zen 4, one thread, 256 MiB). */
#define STREAM_MIN_WEIGHTS ((int64_t)1 << 22)
/* Quantization costs 10-1000x more per weight: smaller tasks (whole rows,
 * at least one), taken dynamically since IQ searches vary block to block. */
#define QNT_TASK_WEIGHTS ((int64_t)1 << 14)
#define QNT_MIN_WEIGHTS  ((int64_t)1 << 16)

/* Threads for n_tasks tasks: gq_threads_resolve's count (nthreads <= 0: all
 * CPUs unless OMP_NUM_THREADS says otherwise); never more than the tasks. */
static int team_size(int nthreads, int64_t n_tasks)
{
    nthreads = gq_threads_resolve(nthreads);
    if ((int64_t)nthreads > n_tasks)
        nthreads = (int)n_tasks;
    return nthreads < 1 ? 1 : nthreads;
}

static size_t out_elem_bytes(ggufq_type out_type)
{
    return out_type == GGUFQ_TYPE_F32 ? sizeof(float) : 2;
}

/* ------------------------------------------------------------------------- */
/* Dequantization                                                             */
/* ------------------------------------------------------------------------- */

/* What every piece of one ggufq_dequantize_to call needs. */
typedef struct deq_job {
    const uint8_t    *src;
    uint8_t          *dst;
    int64_t           n;           /* weights in all */
    int64_t           block_size;
    size_t            block_bytes;
    size_t            out_bytes;   /* bytes per output weight */
    const gq_kernels *decode;      /* the input type's kernels */
    const gq_kernels *encode;      /* F16/BF16 output: its kernels; else NULL */
    gq_dequant_half_fn half;       /* F16/BF16 output: the fused kernel, or NULL */
    bool              copy;        /* input type == output type */
    bool              stream;      /* large F32 pieces out through stream_copy */
#ifdef GQ_STREAM_STORES
    void (*stream_copy)(void *dst, const void *src, size_t n);   /* the ISA's widest */
#endif
    bool              unaligned;   /* dst not aligned to its element: staged, memcpy'd out */
} deq_job;

/* How a staged piece reaches dst. */
typedef enum out_mode {
    OUT_ENCODE,   /* F16/BF16 encoded straight into dst (aligned to its element) */
    OUT_STREAM,   /* through a buffer, then non-temporal stores (large F32 outputs) */
    OUT_MEMCPY    /* through a buffer, then memcpy (dst not aligned to its element) */
} out_mode;

/*
 * A piece decoded a stage at a time into an L1 buffer (F32), then encoded
 * (F16/BF16 output) straight into dst or into a second buffer, which is then
 * streamed or copied out. An F32 input is not decoded: the encoder reads it
 * where it is (the kernels take any alignment).
 */
static void deq_piece_staged(const deq_job *j, const uint8_t *src, uint8_t *dst, int64_t cnt,
                             out_mode mode)
{
    float stage[STAGE_WEIGHTS];
    uint16_t half[STAGE_WEIGHTS];
    const int64_t step = STAGE_WEIGHTS - STAGE_WEIGHTS % j->block_size;
    for (int64_t off = 0; off < cnt; off += step) {
        const int64_t m = cnt - off < step ? cnt - off : step;
        const uint8_t *in = src + (size_t)(off / j->block_size) * j->block_bytes;
        uint8_t *out = dst + (size_t)off * j->out_bytes;
        if (j->half) {   /* only for an odd dst: decode into the aligned buffer */
            j->half(in, half, m);
            memcpy(out, half, (size_t)m * j->out_bytes);
            continue;
        }
        const float *f = (const float *)(const void *)in;   /* F32 input: no decoding */
        if (j->decode) {
            j->decode->dequantize(in, stage, m);
            f = stage;
        }
        const void *buf = f;
        if (j->encode) {
            /* F16/BF16 quantizers never fail on positive sizes without an imatrix */
            (void)j->encode->quantize(f, mode == OUT_ENCODE ? (void *)out : (void *)half, 1, m, NULL);
            buf = half;
        }
        if (mode == OUT_ENCODE)
            continue;
#ifdef GQ_STREAM_STORES
        if (mode == OUT_STREAM) {
            j->stream_copy(out, buf, (size_t)m * j->out_bytes);
            continue;
        }
#endif
        memcpy(out, buf, (size_t)m * j->out_bytes);
    }
#ifdef GQ_STREAM_STORES
    if (mode == OUT_STREAM)
        _mm_sfence();   /* the weakly ordered stores are done before the caller reads */
#endif
}

/* Weights [lo, lo + cnt) of the job; lo and cnt are multiples of the block size. */
static void deq_piece(const deq_job *j, int64_t lo, int64_t cnt)
{
    const uint8_t *src = j->src + (size_t)(lo / j->block_size) * j->block_bytes;
    uint8_t *dst = j->dst + (size_t)lo * j->out_bytes;
    if (j->copy) {
        memcpy(dst, src, (size_t)(cnt / j->block_size) * j->block_bytes);
        return;
    }
    if (j->unaligned) {
        /* the kernels store whole floats/halves: decode and encode into
         * buffers that are aligned, then copy the bytes out */
        deq_piece_staged(j, src, dst, cnt, OUT_MEMCPY);
        return;
    }
#ifdef GQ_STREAM_STORES
    if (j->stream && cnt >= STREAM_MIN_WEIGHTS) {
        deq_piece_staged(j, src, dst, cnt, OUT_STREAM);
        return;
    }
#endif
    if (j->half)
        j->half(src, (uint16_t *)(void *)dst, cnt);
    else if (!j->encode)
        j->decode->dequantize(src, (float *)(void *)dst, cnt);
    else if (!j->decode)   /* F32 input: encode straight from it */
        (void)j->encode->quantize((const float *)(const void *)src, dst, 1, cnt, NULL);
    else
        deq_piece_staged(j, src, dst, cnt, OUT_ENCODE);
}

/* One thread's share of a dequantization: a contiguous range of whole tasks. */
typedef struct deq_share {
    const deq_job *job;
    int64_t        task;      /* weights per task */
    int64_t        n_tasks;
    int            team;      /* shares */
} deq_share;

static void deq_share_run(void *ctx, int64_t th)
{
    const deq_share *s = ctx;
    const deq_job *j = s->job;
    const int64_t per = s->n_tasks / s->team, extra = s->n_tasks % s->team;
    const int64_t t0 = th * per + (th < extra ? th : extra);
    const int64_t t1 = t0 + per + (th < extra ? 1 : 0);
    const int64_t lo = t0 * s->task, hi = t1 * s->task < j->n ? t1 * s->task : j->n;
    if (hi > lo)
        deq_piece(j, lo, hi - lo);
}

static void deq_run(const deq_job *j, int nthreads)
{
    const int64_t task = DEQ_TASK_WEIGHTS - DEQ_TASK_WEIGHTS % j->block_size;
    const int64_t n_tasks = (j->n + task - 1) / task;
    const int team = j->n < DEQ_MIN_WEIGHTS ? 1 : team_size(nthreads, n_tasks);
    if (team == 1) {
        deq_piece(j, 0, j->n);
        return;
    }
    /* each thread one contiguous range of whole tasks, in ONE kernel call:
     * the kernel sees the size of the thread's share (streaming stores).
     * With fewer threads than shares (some could not start) one thread
     * takes several: the bytes are the same. */
    deq_share s = { j, task, n_tasks, team };
    gq_parallel_for(team, team, deq_share_run, &s);
}

int ggufq_dequantize_to(ggufq_type type, const void *src, ggufq_type out_type, void *dst,
                        int64_t n_weights, int nthreads)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    if (!t)
        return GGUFQ_E_UNKNOWN_TYPE;
    if (out_type != GGUFQ_TYPE_F32 && out_type != GGUFQ_TYPE_F16 && out_type != GGUFQ_TYPE_BF16)
        return GGUFQ_E_INVALID_ARG;
    if (n_weights < 0 || (n_weights > 0 && (!src || !dst)))
        return GGUFQ_E_INVALID_ARG;
    if (n_weights % t->block_size != 0)
        return GGUFQ_E_BAD_SIZE;
    if (t->block_size > STAGE_WEIGHTS)   /* no such type today; the staging needs whole blocks */
        return GGUFQ_E_NOT_IMPLEMENTED;
    deq_job j;
    memset(&j, 0, sizeof j);
    j.decode = gq_kernels_for(type);
    /* Only F32 outputs stream. The x86 F16 kernels stream theirs themselves,
     * without the extra pass through a buffer (measured: 138 % of memset vs
     * 104 % staged). F16/BF16 outputs streamed from a third buffer measured
     * slower than encoded straight into dst (Zen 4, 256 MiB from q4_0 / q4_K,
     * 2 threads: 13-15 vs 15-22 GB/s), so they keep plain stores. */
    j.stream = out_type == GGUFQ_TYPE_F32 && type != GGUFQ_TYPE_F16;
    if (!j.decode || !j.decode->dequantize)
        return GGUFQ_E_NOT_IMPLEMENTED;
    if (out_type != GGUFQ_TYPE_F32 && type != out_type) {
        j.encode = gq_kernels_for(out_type);
        if (!j.encode || !j.encode->quantize)
            return GGUFQ_E_NOT_IMPLEMENTED;
        if (type == GGUFQ_TYPE_F32)
            j.decode = NULL;   /* decoding F32 is a copy: encode from the input */
        else   /* a fused kernel decodes straight to halves (same bits, one pass) */
            j.half = out_type == GGUFQ_TYPE_F16 ? j.decode->dequantize_f16 : j.decode->dequantize_bf16;
    }
    if (n_weights == 0)
        return GGUFQ_OK;
    j.src = src;
    j.dst = dst;
    j.n = n_weights;
    j.block_size = t->block_size;
    j.block_bytes = t->block_bytes;
    j.out_bytes = out_elem_bytes(out_type);
    j.copy = type == out_type;
    j.unaligned = (uintptr_t)dst % j.out_bytes != 0;
#ifdef GQ_STREAM_STORES
    const ggufq_isa isa = ggufq_active_isa();
    j.stream_copy = isa == GGUFQ_ISA_AVX512 ? gq_avx512_stream_copy
                  : isa == GGUFQ_ISA_AVX2   ? gq_avx2_stream_copy : gq_sse2_stream_copy;
#endif
    deq_run(&j, nthreads);
    return GGUFQ_OK;
}

int ggufq_dequantize_mt(ggufq_type type, const void *src, float *dst, int64_t n_weights, int nthreads)
{
    return ggufq_dequantize_to(type, src, GGUFQ_TYPE_F32, dst, n_weights, nthreads);
}

/* ------------------------------------------------------------------------- */
/* Quantization                                                               */
/* ------------------------------------------------------------------------- */

/* What every task of one ggufq_quantize_mt call needs. */
typedef struct qnt_job {
    const gq_kernels *k;
    const float      *src;
    uint8_t          *dst;
    int64_t           nrows, n_per_row, rows_per_task;
    size_t            row_bytes;
    const float      *imatrix;
    pthread_mutex_t   lock;        /* guards the two below */
    int64_t           first_bad;   /* lowest failing task: the status does not depend on threads */
    int               status;
} qnt_job;

static void qnt_task(void *ctx, int64_t i)
{
    qnt_job *q = ctx;
    const int64_t r0 = i * q->rows_per_task;
    const int64_t rows = q->nrows - r0 < q->rows_per_task ? q->nrows - r0 : q->rows_per_task;
    int rc = q->k->quantize(q->src + r0 * q->n_per_row, q->dst + (size_t)r0 * q->row_bytes, rows,
                            q->n_per_row, q->imatrix);
    if (rc < 0) {
        pthread_mutex_lock(&q->lock);
        if (i < q->first_bad) {
            q->first_bad = i;
            q->status = rc;
        }
        pthread_mutex_unlock(&q->lock);
    }
}

int ggufq_quantize_mt(ggufq_type type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                      const float *imatrix, int nthreads)
{
    /* the checks of ggufq_quantize, in its order */
    const gq_type_traits *t = gq_type_traits_of(type);
    if (!t)
        return GGUFQ_E_UNKNOWN_TYPE;
    if (nrows < 0 || n_per_row < 0)
        return GGUFQ_E_INVALID_ARG;
    if (n_per_row % t->block_size != 0)
        return GGUFQ_E_BAD_SIZE;
    const gq_kernels *k = gq_kernels_for(type);
    if (!k || !k->quantize)
        return GGUFQ_E_NOT_IMPLEMENTED;
    if (ggufq_type_needs_imatrix(type) && !imatrix)
        return GGUFQ_E_NEEDS_IMATRIX;
    if (nrows == 0 || n_per_row == 0)
        return GGUFQ_OK;
    if (!src || !dst)
        return GGUFQ_E_INVALID_ARG;

    const int64_t rows_per_task = n_per_row >= QNT_TASK_WEIGHTS ? 1 : QNT_TASK_WEIGHTS / n_per_row;
    const int64_t n_tasks = (nrows + rows_per_task - 1) / rows_per_task;
    /* nrows * n_per_row < QNT_MIN_WEIGHTS, without the product's overflow */
    const bool small = nrows < QNT_MIN_WEIGHTS / n_per_row + (QNT_MIN_WEIGHTS % n_per_row != 0);
    const int team = small ? 1 : team_size(nthreads, n_tasks);
    if (team == 1)
        return k->quantize(src, dst, nrows, n_per_row, imatrix);

    qnt_job q = { k, src, dst, nrows, n_per_row, rows_per_task,
                  (size_t)(n_per_row / t->block_size) * t->block_bytes, imatrix,
                  PTHREAD_MUTEX_INITIALIZER, INT64_MAX, GGUFQ_OK };
    gq_parallel_for(team, n_tasks, qnt_task, &q);
    pthread_mutex_destroy(&q.lock);
    return q.status;
}
