// Declarations of ple.cu's kernels, for their launchers (ops/ple_ops.cc).
#pragma once
#include "../vendor.h"

/**
 * y = bf(fr(x * rstd) * fr(1 + w[c])) over [rows, width], per segment s (the groupSize values at
 * s * groupSize; width = groups * groupSize) rstd = rsqrt(fr(sumsq / groupSize) + eps), sumsq in
 * canonical order v1: a block kernel (reduce.h), one segment per 64 threads, 1-4 per block; a
 * grid of fewer blocks than segments' groups loops over them
 */
HCSP_GLOBAL void hcsp_ple_rms1p_norm(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t segments, int64_t width, int64_t groupSize, float eps);
/**
 * gate[s] = bf(sigmoid(sign(score) * bf(sqrt(bf(max(|score|, 1e-6)))))), score = bf(bf(sum_j bf(k*q)) / sqrtH), the sum in
 * canonical order v1: a block kernel (reduce.h), one (row, stream) per 64 threads, 1-4 per block
 */
HCSP_GLOBAL void hcsp_ple_gate(const uint16_t* k, const uint16_t* q, uint16_t* gate, int64_t segments, int64_t hidden, float sqrtH);
/** y[t, s*H + j] = bf(gate[t, s] * value[t, j]), one thread per element */
HCSP_GLOBAL void hcsp_ple_gated_value(const uint16_t* gate, const uint16_t* value, uint16_t* y, int64_t rows, int64_t streams, int64_t hidden);
/** y = bf(G + bf(silu(bf(conv)))), conv the dilated causal depthwise conv of gNormed from tap 0; one thread per element */
HCSP_GLOBAL void hcsp_ple_conv_silu(const uint16_t* gNormed, const uint16_t* g, const uint16_t* w, uint16_t* y, int64_t rows, int64_t channels, int64_t kernel,
                                    int64_t dilation);

/** the most n-gram orders and heads hcsp_ple_ngram_ids takes (its hash constants travel by value, in the launch's arguments) */
#define HCSP_PLE_MAX_NGRAM 16
#define HCSP_PLE_MAX_HEADS 128

/** pleNgramIds' constants (ops/ple_checks.h checkPleNgramIds), passed by value: no upload, no device buffer */
struct HcspPleHash {
  uint64_t multipliers[HCSP_PLE_MAX_NGRAM];
  /** the largest id whose product with the multiplier stays below 2^63 */
  uint64_t maxIds[HCSP_PLE_MAX_NGRAM];
  uint32_t sizes[HCSP_PLE_MAX_HEADS];
  uint32_t offsets[HCSP_PLE_MAX_HEADS];
  int64_t eos;
  /** tokens in [0, vocabBound) are in the vocabulary */
  int64_t vocabBound;
  int32_t ngramSize;
  int32_t headsPerNgram;
};

/**
 * ids[t] = the n-gram ids of position t (numerics/ple_ngram.h), one thread per position; the
 * device checks (checks.h): tokenFailed the first token outside the vocabulary (detail the
 * token), productFailed (null: no product can leave int64) the first product that does, at
 * position t * ngramSize + s (detail the id)
 */
HCSP_GLOBAL void hcsp_ple_ngram_ids(const int32_t* tokens, int32_t* ids, unsigned long long* tokenFailed, unsigned long long* productFailed, int64_t T,
                                    HcspPleHash h);
/**
 * e[i*headDim + j] = the slice's row ids[i] - rowStart, column j, when that row is in [0, rows),
 * else bf16 -0.0; one thread per element. An id outside [0, tableBound) fails the device check
 * (detail the id).
 */
HCSP_GLOBAL void hcsp_ple_ngram_embed_shard(const int32_t* ids, const uint16_t* table, uint16_t* e, unsigned long long* failed, int64_t n, int64_t headDim,
                                            int64_t rowStart, int64_t rows, int64_t tableBound);
