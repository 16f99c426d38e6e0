// The PLE's n-gram ids, one position at a time, as core's layers/ple/pleHash.ts pleNgramIds
// computes them. Shared by the host kernels (host/kernels/ple_kernels.cc) and the GPU kernels
// (gpu/kernels/ple.cu), so the two compute the same integers. Each position looks back at most
// ngramSize - 1 tokens: positions are independent, one thread each.
#pragma once
#include "../gpu/vendor.h"

/** bf16 -0.0: what a rank's vocab slice gives for an id another rank holds (pleNgramEmbedShard; pleMath.ts BF16_NEGATIVE_ZERO) */
constexpr uint16_t HCSP_BF16_NEGATIVE_ZERO = 0x8000;

/**
 * Row i of pleNgramIds over tokens[0, i]: the heads' ids written to row[0, (ngramSize-1) *
 * headsPerNgram). prev_s (s = 1..ngramSize-1) is the token s steps back, or eos when the
 * position is before the start or an EOS sits in [i-s, i-1] (the history resets at EOS); then
 * key_0 = tokens[i] * m[0], key_s = key_{s-1} XOR prev_s * m[s] in uint64, and head
 * (s-1)*headsPerNgram + h gets key_s mod size + offset. A product is the reference's int64
 * value when id <= maxIds[s] (the caller's bounds: id * m[s] < 2^63); the first (s, id) past
 * it, in the reference's order (s = 0 first), is returned through *badS (else -1) and *badId.
 * The caller keeps sizes >= 1 and offset + size <= 2^31 (the row fits int32).
 */
HCSP_HD void hcspPleNgramRow(const int32_t* tokens, int64_t i, int64_t eos, int32_t ngramSize, int32_t headsPerNgram, const uint64_t* multipliers,
                             const uint64_t* maxIds, const uint32_t* sizes, const uint32_t* offsets, int32_t* row, int32_t* badS, int64_t* badId) {
  *badS = -1;
  *badId = 0;
  int64_t id = tokens[i];
  // a negative id (a token the caller's vocabulary check refuses) is past every bound
  if (static_cast<uint64_t>(id) > maxIds[0]) {
    *badS = 0;
    *badId = id;
  }
  uint64_t key = static_cast<uint64_t>(id) * multipliers[0];
  bool reset = false;  // an EOS in [i-s+1, i-1]
  for (int32_t s = 1; s < ngramSize; s++) {
    const int64_t q = i - s;
    if (q < 0 || reset) {
      id = eos;
    } else {
      id = tokens[q];
      reset = id == eos;
    }
    if (*badS < 0 && static_cast<uint64_t>(id) > maxIds[s]) {
      *badS = s;
      *badId = id;
    }
    key ^= static_cast<uint64_t>(id) * multipliers[s];
    for (int32_t h = 0; h < headsPerNgram; h++) {
      const int32_t head = (s - 1) * headsPerNgram + h;
      row[head] = static_cast<int32_t>(key % sizes[head] + offsets[head]);
    }
  }
}
