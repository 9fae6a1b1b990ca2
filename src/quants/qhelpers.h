/*
 * qhelpers.h — the scale searches shared by the legacy, K- and IQ-quant
 * quantizers (ggml's make_*_quants), with ggml's exact arithmetic.
 * Arguments and results are exactly those of ggml's functions of the same
 * name without the gq_ prefix (see ggml-quants.c).
 */
#ifndef GGUFQ_QHELPERS_H
#define GGUFQ_QHELPERS_H

#include <stdbool.h>
#include <stdint.h>

float gq_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type,
                        const float *qw);
float gq_make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse);
float gq_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          bool use_mad);
float gq_make_qkx3_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                          float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          bool use_mad);
float gq_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *quant_weights);

#endif
