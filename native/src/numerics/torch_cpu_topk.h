// The 'torch-cpu' top-k tie rule (core numerics/topkTies.ts): what torch.topk(values, k)
// (largest, sorted) returns on the CPU. torch's topk_impl_loop (aten/src/ATen/native/TopKImpl.h)
// is reproduced call for call with libstdc++'s own algorithms, so the host device is the oracle
// the TypeScript port is tested against: std::partial_sort when k * 64 <= n, else
// std::nth_element at k - 1 and std::sort of the first k - 1, the comparator on the values only
// (NaN above every number).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace hcsp::topk {

/**
 * The k indices torch.topk(v[0..n), k) returns on the CPU, in its order, into out[0..k).
 * `queue` is the caller's scratch (resized here), as torch's per-loop vector.
 */
template <typename T>
inline void torchCpuTopk(const T* v, int64_t n, int64_t k, int32_t* out, std::vector<std::pair<T, int64_t>>& queue) {
  using Elem = std::pair<T, int64_t>;
  queue.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; j++) queue[j] = {v[j], j};
  const auto before = [](const Elem& x, const Elem& y) -> bool { return (std::isnan(x.first) && !std::isnan(y.first)) || (x.first > y.first); };
  if (k * 64 <= n) {
    std::partial_sort(queue.begin(), queue.begin() + k, queue.end(), before);
  } else {
    std::nth_element(queue.begin(), queue.begin() + k - 1, queue.end(), before);
    std::sort(queue.begin(), queue.begin() + k - 1, before);
  }
  for (int64_t j = 0; j < k; j++) out[j] = static_cast<int32_t>(queue[j].second);
}

}  // namespace hcsp::topk
