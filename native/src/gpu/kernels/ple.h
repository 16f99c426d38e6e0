// Declarations of ple.cu's kernels, for their launchers (ops/ple_ops.cc).
#pragma once
#include "../vendor.h"

/**
 * rstd[s] = rsqrt(fr(sumsq / groupSize) + eps) of segment s (groupSize values at s * groupSize),
 * sumsq = fr(sumsq + v*v) in order (the add in double, as pleMath's JavaScript); one thread per segment
 */
HCSP_GLOBAL void hcsp_ple_rms1p_rstd(const uint16_t* x, float* rstd, int64_t segments, int64_t groupSize, float eps);
/** y[t, c] = bf(fr(x * rstd) * fr(1 + w[c])), one thread per element of [rows, width] */
HCSP_GLOBAL void hcsp_ple_rms1p_apply(const uint16_t* x, const uint16_t* w, const float* rstd, uint16_t* y, int64_t n, int64_t width, int64_t groupSize);
/** gate[s] = bf(sigmoid(sign(score) * bf(sqrt(bf(max(|score|, 1e-6)))))), score = bf(bf(sum_j bf(k*q)) / sqrtH); one thread per (row, stream) */
HCSP_GLOBAL void hcsp_ple_gate(const uint16_t* k, const uint16_t* q, uint16_t* gate, int64_t segments, int64_t hidden, float sqrtH);
/** y[t, s*H + j] = bf(gate[t, s] * value[t, j]), one thread per element */
HCSP_GLOBAL void hcsp_ple_gated_value(const uint16_t* gate, const uint16_t* value, uint16_t* y, int64_t rows, int64_t streams, int64_t hidden);
/** y = bf(G + bf(silu(bf(conv)))), conv the dilated causal depthwise conv of gNormed from tap 0; one thread per element */
HCSP_GLOBAL void hcsp_ple_conv_silu(const uint16_t* gNormed, const uint16_t* g, const uint16_t* w, uint16_t* y, int64_t rows, int64_t channels, int64_t kernel,
                                    int64_t dilation);
