// A weight rearranged once into the layout a GEMM reads: the exact GEMM's panels (each
// panel's outputs side by side per k, so one vector load feeds one FMA per lane) as bf16
// bits, the same bytes as the bf16 weight, widened to fp32 as the GEMM goes (exact: a bf16
// is the top half of its fp32; gemm_kernels.h); or plain row-major fp32 [outF][inF] for sgemm. An fp8 weight's panels are bf16 too:
// every e4m3fn / e4m3fnuz value is a bf16 (3 mantissa bits, exponents 2^-10..2^8), so its
// panels are 2x its bytes (not 4x as fp32) and the same tiles serve both GEMMs. Weights are
// immutable once uploaded, so the packed form is kept on the tensor that holds them
// (Tensor::cache), one per slice (keyed by offset: MoE experts are slices of one stacked
// tensor), and counted as device memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>

#include "../cpu_features.h"
#include "../fp8_format.h"
#include "../tensor.h"
#include "../thread_pool.h"
#include "gemm_kernels.h"

namespace hcsp::gemm {

/** how the weight's elements are stored */
enum class WeightDType { Bf16, Fp8E4M3FN, Fp8E4M3FNUZ };

inline WeightDType fp8WeightDType(const Fp8Format& f) { return f.fnuz ? WeightDType::Fp8E4M3FNUZ : WeightDType::Fp8E4M3FN; }

/** 64-byte aligned bytes, counted by the allocator while alive */
class AlignedBytes {
 public:
  explicit AlignedBytes(int64_t bytes);
  ~AlignedBytes();
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  void* data() { return data_; }
  const void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
};

/** `count` Ts in AlignedBytes (empty for 0) */
template <class T>
class Buffer {
 public:
  explicit Buffer(int64_t count) : bytes_(count * static_cast<int64_t>(sizeof(T))) {}
  T* data() { return static_cast<T*>(bytes_.data()); }
  const T* data() const { return static_cast<const T*>(bytes_.data()); }

 private:
  AlignedBytes bytes_;
};

using F32Buffer = Buffer<float>;
using U16Buffer = Buffer<uint16_t>;

struct PackedWeight {
  int64_t outF, inF;
  /** panel width (0: row-major [outF][inF]) and the tail panel's granularity */
  PanelGeometry geometry;
  /** row-major: fp32 [outF][inF] (panels empty) */
  F32Buffer rowMajor;
  /** panels: bf16 bits, panel p at p * width * inF, [inF][width(p)] in panelSlot order (rowMajor empty) */
  U16Buffer bf16Panels;

  PackedWeight(int64_t outF, int64_t inF, PanelGeometry g, int64_t elements)
      : outF(outF), inF(inF), geometry(g), rowMajor(g.width == 0 ? elements : 0), bf16Panels(g.width == 0 ? 0 : elements) {}
  int64_t panels() const { return (outF + geometry.width - 1) / geometry.width; }
  /** outputs in panel p */
  int valid(int64_t p) const { return static_cast<int>(std::min<int64_t>(geometry.width, outF - p * geometry.width)); }
  /** elements per k in panel p: the tail panel rounded up to the vector */
  int width(int64_t p) const { return (valid(p) + geometry.vector - 1) / geometry.vector * geometry.vector; }
  const uint16_t* panel(int64_t p) const { return bf16Panels.data() + p * geometry.width * inF; }
  /** the bytes it holds (counted by the allocator while alive) */
  int64_t bytes() const {
    if (geometry.width == 0) return outF * inF * static_cast<int64_t>(sizeof(float));
    return outF == 0 ? 0 : ((panels() - 1) * geometry.width + width(panels() - 1)) * inF * static_cast<int64_t>(sizeof(uint16_t));
  }
};

/** {0, 0, false}: row-major, as sgemm reads it */
constexpr PanelGeometry ROW_MAJOR{0, 0, false};

/**
 * w [outF, inF] in `geometry`'s layout (panels of bf16 bits, or row-major fp32); kept on
 * `owner` (the tensor holding w, or null: packed for this call only) and reused by later
 * calls on the same slice. A released owner (Tensor::releaseData, after packForGemm) has
 * only the forms packed before: w is then its null raw() plus the slice's offset, and any
 * other form is an error naming the weight.
 */
std::shared_ptr<const PackedWeight> packedWeight(const void* w, WeightDType dtype, int64_t outF, int64_t inF, PanelGeometry geometry, const Tensor* owner,
                                                 ThreadPool& pool);

}  // namespace hcsp::gemm
