/*
 * types_api.c — public queries about tensor types, and status strings.
 */
#include <strings.h>

#include "ggufq.h"
#include "gguf/types.h"

const char *ggufq_version(void)
{
    return GGUFQ_VERSION_STRING;
}

const char *ggufq_strerror(int status)
{
    switch ((ggufq_status)status) {
    case GGUFQ_OK:                 return "success";
    case GGUFQ_E_INVALID_ARG:      return "invalid argument";
    case GGUFQ_E_NOMEM:            return "out of memory";
    case GGUFQ_E_IO:               return "I/O error";
    case GGUFQ_E_NOT_IMPLEMENTED:  return "not implemented for this type";
    case GGUFQ_E_UNKNOWN_TYPE:     return "unknown tensor type";
    case GGUFQ_E_BAD_SIZE:         return "size is not a multiple of the block size";
    case GGUFQ_E_NEEDS_IMATRIX:    return "this type needs an importance matrix";
    case GGUFQ_E_ISA_UNSUPPORTED:  return "instruction set not supported by this CPU/OS";
    case GGUFQ_E_FORMAT:           return "malformed GGUF file";
    case GGUFQ_E_BAD_MAGIC:        return "not a GGUF file (bad magic)";
    case GGUFQ_E_BAD_VERSION:      return "unsupported GGUF version";
    case GGUFQ_E_BIG_ENDIAN:       return "big-endian GGUF files are not supported";
    case GGUFQ_E_TRUNCATED:        return "truncated file";
    case GGUFQ_E_BAD_KEY:          return "invalid metadata key";
    case GGUFQ_E_BAD_VALUE_TYPE:   return "invalid metadata value type";
    case GGUFQ_E_BAD_BOOL:         return "invalid bool value";
    case GGUFQ_E_NESTING:          return "arrays nested too deeply";
    case GGUFQ_E_DUPLICATE_KEY:    return "duplicate metadata key";
    case GGUFQ_E_DUPLICATE_TENSOR: return "duplicate tensor name";
    case GGUFQ_E_BAD_ALIGNMENT:    return "invalid general.alignment";
    case GGUFQ_E_BAD_DIMS:         return "invalid tensor dimensions";
    case GGUFQ_E_OVERFLOW:         return "size overflows 64 bits";
    case GGUFQ_E_BAD_SHAPE:        return "row length is not a multiple of the block size";
    case GGUFQ_E_BAD_OFFSET:       return "invalid tensor data offset";
    case GGUFQ_E_BAD_NAME:         return "invalid tensor name";
    case GGUFQ_E_NOT_FOUND:        return "not found";
    case GGUFQ_E_TYPE_MISMATCH:    return "value has a different type";
    case GGUFQ_E_LIMIT:            return "resource limit exceeded";
    case GGUFQ_E_SAME_FILE:        return "refusing to overwrite the input file";
    case GGUFQ_E_NO_SPACE:         return "no space left on device";
    case GGUFQ_E_INTERRUPTED:      return "interrupted";
    case GGUFQ_E_NONFINITE:        return "input contains NaN or Inf";
    case GGUFQ_E_STATE:            return "call not valid in the current state";
    }
    return "unknown status";
}

bool ggufq_type_is_valid(int type)
{
    return gq_type_traits_of(type) != NULL;
}

const char *ggufq_type_name(ggufq_type type)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    return t ? t->name : NULL;
}

int ggufq_type_from_name(const char *name)
{
    if (!name)
        return GGUFQ_E_UNKNOWN_TYPE;
    for (int i = 0; i < GGUFQ_TYPE_COUNT; i++) {
        const gq_type_traits *t = gq_type_traits_of(i);
        if (t && strcasecmp(t->name, name) == 0)
            return i;
    }
    return GGUFQ_E_UNKNOWN_TYPE;
}

int64_t ggufq_type_block_size(ggufq_type type)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    return t ? t->block_size : 0;
}

size_t ggufq_type_block_bytes(ggufq_type type)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    return t ? t->block_bytes : 0;
}

size_t ggufq_row_size(ggufq_type type, int64_t n_weights)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    if (!t || n_weights < 0 || n_weights % t->block_size != 0)
        return 0;
    const uint64_t blocks = (uint64_t)(n_weights / t->block_size);
    if (blocks > SIZE_MAX / t->block_bytes)
        return 0;
    return (size_t)(blocks * t->block_bytes);
}

bool ggufq_type_is_quantized(ggufq_type type)
{
    const gq_type_traits *t = gq_type_traits_of(type);
    return t && t->quantized;
}

bool ggufq_type_needs_imatrix(ggufq_type type)
{
    return type == GGUFQ_TYPE_IQ2_XXS || type == GGUFQ_TYPE_IQ2_XS || type == GGUFQ_TYPE_IQ1_S;
}
