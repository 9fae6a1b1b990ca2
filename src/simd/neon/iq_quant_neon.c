/*
 * iq_quant_neon.c — placeholder for the NEON quantizers of the IQ grid types
 * (SIMD twin of the searches of src/quants/iq1.c, iq2.c, iq3.c): until they
 * land, the scalar quantizers stay in the table.
 */
#include "simd/simd.h"

void gq_neon_fill_iq_quant(gq_kernels t[GGUFQ_TYPE_COUNT])
{
    (void)t;
}
