// The routed experts' work list, shared by the bf16 and FP8 experts kernels (moe_kernels.cc,
// moe_fp8_kernels.cc): which (token, slot) pairs each of this rank's experts serves.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../tensor.h"

namespace hcsp {

struct ExpertPairs {
  /** per local expert e, the flat index t * topK + k of each pair routed to firstExpert + e, t ascending */
  std::vector<std::vector<int64_t>> pairs;
  /** the most pairs one expert has (0: no token is routed to this rank's experts) */
  int64_t most = 0;
};

inline ExpertPairs expertPairs(const int32_t* ids, int64_t T, int64_t topK, int64_t firstExpert, int64_t numLocal) {
  ExpertPairs p;
  p.pairs.resize(static_cast<size_t>(std::max<int64_t>(0, numLocal)));
  for (int64_t t = 0; t < T; t++) {
    for (int64_t k = 0; k < topK; k++) {
      const int64_t local = static_cast<int64_t>(ids[t * topK + k]) - firstExpert;
      if (local >= 0 && local < numLocal) p.pairs[local].push_back(t * topK + k);
    }
  }
  for (const auto& m : p.pairs) p.most = std::max<int64_t>(p.most, static_cast<int64_t>(m.size()));
  return p;
}

/**
 * The experts' sums, zeros [T, H] f32 (a token none of this rank's experts serve adds nothing,
 * and the others accumulate into it), and their work list from the routed ids
 */
struct RoutedWork {
  TensorPtr routed;
  ExpertPairs work;
};

inline RoutedWork routedWork(const Tensor& ids, int64_t T, int64_t H, int64_t topK, int64_t firstExpert, int64_t numLocal) {
  TensorPtr routed = makeZeroTensor(DType::F32, {T, H});
  return {routed, expertPairs(ids.data<int32_t>(), T, topK, firstExpert, numLocal)};
}

}  // namespace hcsp
