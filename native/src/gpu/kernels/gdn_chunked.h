// Declarations of gdn_chunked.cu's kernels (the 'fast' gdnRecurrence), for their launcher
// (ops/gdn_ops.cc). The l2 norms come first, from gdn.cu's hcsp_gdn_l2norm.
#pragma once
#include "../vendor.h"

/** tokens per chunk: the chunk's triangular solve is CHUNK serial steps, the state pass T/CHUNK */
#define HCSP_GDN_CHUNK 64
/** value columns of the state a state-pass block owns (its S tile: keyDim x HCSP_GDN_COLS fp32 in shared memory) */
#define HCSP_GDN_COLS 16
/** the largest keyDim the state pass's shared S tile holds */
#define HCSP_GDN_MAX_KEY_DIM 256

/**
 * Per (value head h, chunk c): one block of 64-256 threads, blocks ordered h * chunks + c.
 * With G the within-chunk cumulative sum of g (double, in token order) and A[r][s] =
 * beta_r exp(G_r - G_s) (k_r . k_s) for s < r, it solves (I + A) [W | U] = [diag(beta exp(G)) K | diag(beta) V]
 * by forward substitution in double (one thread per column of [W | U]) and forms
 * P[r][s] = (q_r . k_s) exp(G_r - G_s) for s <= r. Writes G [vh, T], W [vh, T, dk],
 * U [vh, T, dv] and P [vh, chunks, CHUNK, CHUNK] (fp32; P's upper triangle unwritten).
 */
HCSP_GLOBAL void hcsp_gdn_chunk_prep(const uint16_t* qkv, const float* qn, const float* kn, const float* g, const uint16_t* beta, double* G, float* W, float* U,
                                     float* P, int64_t tokens, int64_t channels, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim);

/**
 * Per (value head h, tile of HCSP_GDN_COLS state columns): one block of 64-256 threads, blocks
 * ordered h * tiles + tile, the tile's state S (keyDim x cols, fp32, from zero) in shared
 * memory, the chunks in order: delta = U - W S; o = bf(exp(G) (Q S) + P delta);
 * S = exp(G_last) S + sum_s exp(G_last - G_s) k_s delta_s^T.
 */
HCSP_GLOBAL void hcsp_gdn_chunk_state(const float* qn, const float* kn, const double* G, const float* W, const float* U, const float* P, uint16_t* o,
                                      int64_t tokens, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim);
