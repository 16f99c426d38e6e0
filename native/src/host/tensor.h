// A host-device tensor: core's dtype names, a row-major shape and memory owned by the
// device's allocator, which counts every live allocation (leak tests read the counts) and
// enforces the device's memory limit (an out-of-memory error names the request and the limit).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hcsp {

enum class DType { BF16, F32, I32, FP8E4M3FN, FP8E4M3FNUZ };

DType parseDType(const std::string& name);
const char* dtypeName(DType d);
size_t dtypeBytes(DType d);
bool isFp8(DType d);

using Shape = std::vector<int64_t>;
std::string shapeStr(const Shape& s);
int64_t numel(const Shape& s);

class Tensor {
 public:
  /** zero-filled memory for `shape`, counted by the allocator */
  Tensor(DType dtype, Shape shape);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return numel_ * dtypeBytes(dtype_); }
  int64_t dim(size_t i) const { return shape_[i]; }
  size_t rank() const { return shape_.size(); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  uint16_t* bf16() { return data<uint16_t>(); }
  const uint16_t* bf16() const { return data<uint16_t>(); }

  /** A derived form of this (immutable) tensor kept with it, e.g. a GEMM's packed weight panels. */
  std::shared_ptr<void> cache;

 private:
  DType dtype_;
  Shape shape_;
  int64_t numel_;
  void* data_;
};

using TensorPtr = std::shared_ptr<Tensor>;

inline TensorPtr makeTensor(DType dtype, Shape shape) { return std::make_shared<Tensor>(dtype, std::move(shape)); }

struct AllocatorStats {
  int64_t liveTensors;
  int64_t liveBytes;
  int64_t peakBytes;
  int64_t allocations;
  int64_t limitBytes;  // 0 = no limit
};

AllocatorStats allocatorStats();
/** 0 removes the limit */
void setMemoryLimit(int64_t bytes);
/** Counts memory a kernel holds outside tensors (scratch, packed panels) against the same limit. */
void reserveScratch(int64_t bytes);
void releaseScratch(int64_t bytes);

}  // namespace hcsp
