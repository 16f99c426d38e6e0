// A weight decoded to fp32 once, in the layout a GEMM reads: the exact GEMM's panels (each
// panel's outputs side by side per k, so one vector load feeds one FMA per lane) or plain
// row-major [outF][inF] for sgemm. Weights are immutable once uploaded, so the decoded form
// is kept on the tensor that holds them (Tensor::cache), one per slice (keyed by offset:
// MoE experts are slices of one stacked tensor), and counted as device memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>

#include "../cpu_features.h"
#include "../numerics/fp8.h"
#include "../tensor.h"
#include "../thread_pool.h"
#include "gemm_kernels.h"

namespace hcsp::gemm {

/** how the weight's elements are stored */
enum class WeightDType { Bf16, Fp8E4M3FN, Fp8E4M3FNUZ };

inline WeightDType fp8WeightDType(const Fp8Format& f) { return f.dtype == DType::FP8E4M3FNUZ ? WeightDType::Fp8E4M3FNUZ : WeightDType::Fp8E4M3FN; }

/** 64-byte aligned floats, counted by the allocator while alive */
class F32Buffer {
 public:
  explicit F32Buffer(int64_t count);
  ~F32Buffer();
  F32Buffer(const F32Buffer&) = delete;
  F32Buffer& operator=(const F32Buffer&) = delete;
  float* data() { return data_; }
  const float* data() const { return data_; }

 private:
  float* data_ = nullptr;
  int64_t bytes_ = 0;
};

struct PackedWeight {
  int64_t outF, inF;
  /** panel width (0: row-major [outF][inF]) and the tail panel's granularity */
  PanelGeometry geometry;
  F32Buffer values;

  PackedWeight(int64_t outF, int64_t inF, PanelGeometry g, int64_t floats) : outF(outF), inF(inF), geometry(g), values(floats) {}
  int64_t panels() const { return (outF + geometry.width - 1) / geometry.width; }
  /** outputs in panel p */
  int valid(int64_t p) const { return static_cast<int>(std::min<int64_t>(geometry.width, outF - p * geometry.width)); }
  /** floats per k in panel p: the tail panel rounded up to the vector */
  int width(int64_t p) const { return (valid(p) + geometry.vector - 1) / geometry.vector * geometry.vector; }
  const float* panel(int64_t p) const { return values.data() + p * geometry.width * inF; }
};

/** {0, 0}: row-major, as sgemm reads it */
constexpr PanelGeometry ROW_MAJOR{0, 0};

/**
 * w [outF, inF] decoded to fp32 in `geometry`'s layout; kept on `owner` (the tensor holding
 * w, or null: packed for this call only) and reused by later calls on the same slice.
 */
std::shared_ptr<const PackedWeight> packedWeight(const void* w, WeightDType dtype, int64_t outF, int64_t inF, PanelGeometry geometry, const Tensor* owner,
                                                 ThreadPool& pool);

}  // namespace hcsp::gemm
