// Canonical reduction order v1 (core numerics/canonicalSum.ts, README "Canonical reduction
// order"): 64 logical lanes; lane l adds the 8-term chunks starting at 8l + 512i in i order,
// a chunk's terms in order, into an fp32 sum from +0 (terms past the end are absent); then
// the xor butterfly m = 32, 16, ..., 1 (lane l takes fl(v[l] + v[l ^ m])), whose lane 0 is
// the result. The scalar definition, shared by the host kernels (their portable path; the
// vector paths, host/kernels/canonical_sumsq.h, give its bits) and the GPU kernels.
#pragma once
#include "bf16.h"

namespace hcsp::canonical {

constexpr int LANES = 64;
constexpr int CHUNK = 8;
/** terms per step: one chunk of every lane */
constexpr int STEP = LANES * CHUNK;

/** The butterfly over the lane sums v[0..63] (overwritten); returns lane 0's value. At each m
 *  only lanes l < m still feed lane 0, and for them l ^ m = l + m. */
HCSP_HD float butterfly(float* v) {
  for (int m = LANES / 2; m >= 1; m >>= 1) {
    for (int l = 0; l < m; l++) v[l] = v[l] + v[l + m];
  }
  return v[0];
}

/** The v1 sum of n terms: add(acc, j) returns fl(acc + term j) (fp32). One lane after another,
 *  each lane's chunks in order, then the butterfly: for kernels where one thread owns a whole
 *  reduction (short rows, the exact one-thread kernels) and for the host's scalar paths. */
template <class AddTerm>
HCSP_HD float sumTerms(int64_t n, const AddTerm& add) {
  float lanes[LANES];
  for (int l = 0; l < LANES; l++) {
    float acc = 0.0f;
    for (int64_t base = static_cast<int64_t>(l) * CHUNK; base < n; base += STEP) {
      const int64_t end = n - base < CHUNK ? n : base + CHUNK;
      for (int64_t j = base; j < end; j++) acc = add(acc, j);
    }
    lanes[l] = acc;
  }
  return butterfly(lanes);
}

/** fround(acc + v*v) for a bf16 v: v*v is exact in double and the double sum, rounded to
 *  float, is the correctly rounded fp32 sum (an FMA's rounding: the vector paths use fma) */
HCSP_HD float addSquareBf16(float acc, uint16_t bits) {
  const double v = bf16ToF32(bits);
  return static_cast<float>(static_cast<double>(acc) + v * v);
}

/** sum_j x[j]^2 over the n bf16 values x in v1, as core's canonicalSumF32 of the squares */
HCSP_HD float sumSquaresBf16(const uint16_t* x, int64_t n) {
  float lanes[LANES];
  for (int l = 0; l < LANES; l++) lanes[l] = 0.0f;
  // a step at a time, term k of every lane's chunk before term k + 1: each lane still adds its
  // terms in order, and the 64 lanes are independent chains
  int64_t base = 0;
  for (; base + STEP <= n; base += STEP) {
    for (int k = 0; k < CHUNK; k++) {
      for (int l = 0; l < LANES; l++) lanes[l] = addSquareBf16(lanes[l], x[base + l * CHUNK + k]);
    }
  }
  for (int64_t j = base; j < n; j++) {
    const int l = static_cast<int>((j - base) / CHUNK);
    lanes[l] = addSquareBf16(lanes[l], x[j]);
  }
  return butterfly(lanes);
}

}  // namespace hcsp::canonical
