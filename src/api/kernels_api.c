/*
 * kernels_api.c — ggufq_dequantize / ggufq_quantize: argument checks, then
 * the kernels the dispatcher chose; ggufq_isa_env_status: how it chose;
 * ggufq_kernel_isa: whose kernel it chose for a type and operation.
 */
#include <stdio.h>

#include "ggufq.h"
#include "gguf/types.h"
#include "simd/dispatch.h"

int ggufq_dequantize(ggufq_type type, const void *src, float *dst, int64_t n_weights)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    if (!t)
        return GGUFQ_E_UNKNOWN_TYPE;
    if (n_weights < 0 || (n_weights > 0 && (!src || !dst)))
        return GGUFQ_E_INVALID_ARG;
    if (n_weights % t->block_size != 0)
        return GGUFQ_E_BAD_SIZE;
    const gq_kernels *k = gq_kernels_for(type);
    if (!k || !k->dequantize)
        return GGUFQ_E_NOT_IMPLEMENTED;
    if (n_weights > 0)
        k->dequantize(src, dst, n_weights);
    return GGUFQ_OK;
}

int ggufq_quantize(ggufq_type type, const float *src, void *dst,
                   int64_t nrows, int64_t n_per_row, const float *imatrix)
{
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
    return k->quantize(src, dst, nrows, n_per_row, imatrix);
}

bool ggufq_type_can_quantize(ggufq_type type)
{
    /* every ISA's table starts from the scalar kernels: the answer is the same for all */
    const gq_kernels *k = gq_kernels_for(type);
    return k && k->quantize;
}

int ggufq_isa_env_status(ggufq_error *err)
{
    const char *message = NULL;
    const int rc = gq_isa_env_status(&message);
    if (err) {
        err->status = rc;
        err->offset = GGUFQ_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "%s", rc < 0 ? message : "");
    }
    return rc;
}

const char *ggufq_kernel_isa(ggufq_type type, ggufq_kernel_op op)
{
    return gq_kernel_isa((int)type, op);
}
