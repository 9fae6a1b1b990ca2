/*
 * types_api.c — public queries about tensor types (status strings: gguf/errors.c).
 */
#include <strings.h>

#include "ggufq.h"
#include "gguf/types.h"

const char *ggufq_version(void)
{
    return GGUFQ_VERSION_STRING;
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
