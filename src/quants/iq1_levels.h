/*
 * iq1_levels.h — what iq1.c (the IQ1 quantizers) and iq1_settle.c (the x86
 * fast path's settling) share: the sub-block sizes and the three levels of a
 * grid value with the +/- delta shift, as ggml's quantize_row_iq1_s/_m use them.
 */
#ifndef GGUFQ_QUANTS_IQ1_LEVELS_H
#define GGUFQ_QUANTS_IQ1_LEVELS_H

#include "tables.h"

#define IQ1S_BLOCK 32 /* weights per scale in IQ1_S */
#define IQ1M_BLOCK 16 /* weights per scale in IQ1_M */

static const float x_plus[3]  = { -1 + GQ_IQ1S_DELTA,  GQ_IQ1S_DELTA, 1 + GQ_IQ1S_DELTA };
static const float x_minus[3] = { -1 - GQ_IQ1S_DELTA, -GQ_IQ1S_DELTA, 1 - GQ_IQ1S_DELTA };

#endif
