// The chunked gated delta rule (the 'fast' gdnRecurrence): flash-linear-attention's chunk
// algorithm (chunk_gated_delta_rule, its WY representation; HF transformers'
// torch_chunk_gated_delta_rule is the same math in torch) in fp32. Within a chunk of L tokens
// entered with state S (before the first token's decay), with G_r = g_0 + ... + g_r:
//   delta = U - W S,  (I + A) W = diag(beta exp(G)) K,  (I + A) U = diag(beta) V,
//   A[r][s] = beta_r exp(G_r - G_s) (k_r . k_s) for s < r   (delta_r is the token's beta (v - S^T k))
//   o_r = exp(G_r) S^T q_r + sum_{s<=r} exp(G_r - G_s) (q_r . k_s) delta_s
//   S' = exp(G_{L-1}) S + sum_s exp(G_{L-1} - G_s) k_s delta_s^T
// Everything but the last three lines is independent of S, so it runs for every (head, chunk)
// at once (hcsp_gdn_chunk_prep); what remains is serial over chunks per head, T/CHUNK steps,
// and its state columns are independent, so a head's columns split over blocks
// (hcsp_gdn_chunk_state). Every sum runs in a fixed order (no atomics, no split reductions),
// so the bits do not depend on the block size or the device, only on the algorithm.
// W solves by forward substitution rather than through an explicit inverse (HF's loop forms
// (I + A)^-1 then multiplies): the same math, one rounding chain fewer per element.
// Precision: where this kernel and the reference round an output to different bf16 values, the
// one nearer the float64 evaluation should be this one. In fp32 throughout it was not (56% of
// 2166 such elements farther, dk dv 128, T 1000-4096, no, mild and strong decay); in order of
// their weight the errors were: the key-dim dots of A and P (their cosines are small, so an fp32
// chain's error is large against them), the forward substitution's 63-step chain, and (with
// no decay) the state update adding each token's term onto S at S's scale. So the chunk's
// prep runs in double (the products of fp32 values exact, results stored fp32: 24% of the
// FLOPs, double is full rate on gfx94x, half on sm_90) and the update sums the chunk's
// increment first, then one FMA into the decayed S: now farther on 431 of 1646 (26%). G alone
// is double: in fp32 the difference of two late cumulative sums (|G| ~ 16 by a chunk's end at
// mild decay) carries an error of ulp(|G|) ~ 2^-19, 30x the reference's products of per-token
// decays. The state pass's sums (delta, o) stay fp32 FMAs.
#include "gdn_chunked.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

HCSP_GLOBAL void hcsp_gdn_chunk_prep(const uint16_t* qkv, const float* qn, const float* kn, const float* g, const uint16_t* beta, double* G, float* W, float* U,
                                     float* P, int64_t tokens, int64_t channels, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim) {
  HCSP_SHARED(double, gcum, HCSP_GDN_CHUNK);
  HCSP_SHARED(float, betas, HCSP_GDN_CHUNK);
  HCSP_SHARED(float, A, HCSP_GDN_CHUNK* HCSP_GDN_CHUNK);
  const int64_t C = HCSP_GDN_CHUNK;
  const int64_t chunks = (tokens + C - 1) / C;
  const int64_t group = valueHeads / keyHeads;
  const int64_t kOff = keyHeads * keyDim;
  const int64_t vOff = 2 * keyHeads * keyDim;
  const int tid = HCSP_BLOCK_THREAD();
  const int nt = HCSP_BLOCK_THREADS();
  // the bounds are the block's, so every thread reaches every barrier
  for (int64_t blk = HCSP_BLOCK_ID(); blk < valueHeads * chunks; blk += HCSP_BLOCK_COUNT()) {
    const int64_t h = blk / chunks;
    const int64_t t0 = (blk - h * chunks) * C;
    const int64_t L = tokens - t0 < C ? tokens - t0 : C;
    const int64_t kb = (h / group) * keyDim;
    if (tid == 0) {
      double acc = 0.0;
      for (int64_t r = 0; r < L; r++) {
        acc = acc + static_cast<double>(g[(t0 + r) * valueHeads + h]);
        gcum[r] = acc;
        G[h * tokens + t0 + r] = acc;
        betas[r] = bf16ToF32(beta[(t0 + r) * valueHeads + h]);
      }
    }
    HCSP_BARRIER();
    for (int64_t e = tid; e < L * L; e += nt) {
      const int64_t r = e / L;
      const int64_t s = e - r * L;
      if (s > r) continue;
      const float* kr = kn + (t0 + r) * kOff + kb;
      const float* ks = kn + (t0 + s) * kOff + kb;
      const float* qr = qn + (t0 + r) * kOff + kb;
      const float decay = hcsp::fp32::expF32(static_cast<float>(gcum[r] - gcum[s]));
      // the dots in double: a product of two floats is exact there, so each is the sum rounded
      // once to fp32 (their cosines are small, an fp32 chain's error is large against them)
      double qk = 0.0;
      for (int64_t i = 0; i < keyDim; i++) qk = qk + static_cast<double>(qr[i]) * ks[i];
      P[(blk * C + r) * C + s] = static_cast<float>(qk * decay);
      if (s < r) {
        double kk = 0.0;
        for (int64_t i = 0; i < keyDim; i++) kk = kk + static_cast<double>(kr[i]) * ks[i];
        A[r * C + s] = static_cast<float>(static_cast<double>(betas[r] * decay) * kk);
      }
    }
    HCSP_BARRIER();
    // forward substitution in double, one column of [W | U] per thread: x_r = rhs_r - sum_{s<r}
    // A[r][s] x_s, each x rounded to fp32 once, when stored (an fp32 chain of up to 63 steps
    // carried the larger part of the kernel's error)
    for (int64_t col = tid; col < keyDim + valueDim; col += nt) {
      const bool isW = col < keyDim;
      double x[HCSP_GDN_CHUNK];
      for (int64_t r = 0; r < L; r++) {
        const int64_t t = t0 + r;
        double acc = isW ? static_cast<double>(betas[r] * hcsp::fp32::expF32(static_cast<float>(gcum[r]))) * kn[t * kOff + kb + col]
                         : static_cast<double>(betas[r]) * bf16ToF32(qkv[t * channels + vOff + h * valueDim + (col - keyDim)]);
        for (int64_t s = 0; s < r; s++) acc = acc - A[r * C + s] * x[s];
        x[r] = acc;
        if (isW) {
          W[(h * tokens + t) * keyDim + col] = static_cast<float>(acc);
        } else {
          U[(h * tokens + t) * valueDim + (col - keyDim)] = static_cast<float>(acc);
        }
      }
    }
    // the next block's thread 0 rewrites gcum and betas, which this one's threads may still read
    HCSP_BARRIER();
  }
}

HCSP_GLOBAL void hcsp_gdn_chunk_state(const float* qn, const float* kn, const double* G, const float* W, const float* U, const float* P, uint16_t* o,
                                      int64_t tokens, int64_t keyHeads, int64_t valueHeads, int64_t keyDim, int64_t valueDim) {
  const int64_t J = HCSP_GDN_COLS;
  const int64_t C = HCSP_GDN_CHUNK;
  HCSP_SHARED(float, S, HCSP_GDN_MAX_KEY_DIM* HCSP_GDN_COLS);
  HCSP_SHARED(float, delta, HCSP_GDN_CHUNK* HCSP_GDN_COLS);
  HCSP_SHARED(float, decayIn, HCSP_GDN_CHUNK);
  HCSP_SHARED(float, decayOut, HCSP_GDN_CHUNK);
  const int64_t chunks = (tokens + C - 1) / C;
  const int64_t tiles = (valueDim + J - 1) / J;
  const int64_t group = valueHeads / keyHeads;
  const int64_t kOff = keyHeads * keyDim;
  const int tid = HCSP_BLOCK_THREAD();
  const int nt = HCSP_BLOCK_THREADS();
  for (int64_t blk = HCSP_BLOCK_ID(); blk < valueHeads * tiles; blk += HCSP_BLOCK_COUNT()) {
    const int64_t h = blk / tiles;
    const int64_t c0 = (blk - h * tiles) * J;
    const int64_t kb = (h / group) * keyDim;
    for (int64_t e = tid; e < keyDim * J; e += nt) S[e] = 0.0f;
    for (int64_t c = 0; c < chunks; c++) {
      const int64_t t0 = c * C;
      const int64_t L = tokens - t0 < C ? tokens - t0 : C;
      const double* Gc = G + h * tokens + t0;
      // exp(G_r): the entering state's decay to token r; exp(G_last - G_r): token r's to the chunk's end
      for (int64_t r = tid; r < L; r += nt) {
        decayIn[r] = hcsp::fp32::expF32(static_cast<float>(Gc[r]));
        decayOut[r] = hcsp::fp32::expF32(static_cast<float>(Gc[L - 1] - Gc[r]));
      }
      HCSP_BARRIER();
      // delta = U - W S
      for (int64_t e = tid; e < L * J; e += nt) {
        const int64_t r = e / J;
        const int64_t j = e - r * J;
        if (c0 + j >= valueDim) continue;
        const float* w = W + (h * tokens + t0 + r) * keyDim;
        float acc = 0.0f;
        for (int64_t i = 0; i < keyDim; i++) acc = HCSP_FMAF(w[i], S[i * J + j], acc);
        delta[r * J + j] = U[(h * tokens + t0 + r) * valueDim + c0 + j] - acc;
      }
      HCSP_BARRIER();
      // o = exp(G) (Q S) + P delta, rounded to bf16 once
      for (int64_t e = tid; e < L * J; e += nt) {
        const int64_t r = e / J;
        const int64_t j = e - r * J;
        if (c0 + j >= valueDim) continue;
        const float* q = qn + (t0 + r) * kOff + kb;
        float qs = 0.0f;
        for (int64_t i = 0; i < keyDim; i++) qs = HCSP_FMAF(q[i], S[i * J + j], qs);
        float acc = decayIn[r] * qs;
        const float* p = P + ((h * chunks + c) * C + r) * C;
        for (int64_t s = 0; s <= r; s++) acc = HCSP_FMAF(p[s], delta[s * J + j], acc);
        o[((t0 + r) * valueHeads + h) * valueDim + c0 + j] = f32ToBf16(acc);
      }
      HCSP_BARRIER();
      // S = exp(G_last) S + sum_s (exp(G_last - G_s) k_s) delta_s^T: the chunk's increment
      // first, then one FMA into the decayed state, so S is rounded once per chunk at its own
      // scale (added term by term onto S, every term rounded at S's scale)
      const float decayAll = decayIn[L - 1];
      for (int64_t e = tid; e < keyDim * J; e += nt) {
        const int64_t i = e / J;
        const int64_t j = e - i * J;
        const float* k = kn + t0 * kOff + kb + i;
        float inc = 0.0f;
        for (int64_t s = 0; s < L; s++) inc = HCSP_FMAF(decayOut[s] * k[s * kOff], delta[s * J + j], inc);
        S[e] = HCSP_FMAF(decayAll, S[e], inc);
      }
      HCSP_BARRIER();
    }
  }
}
