// A tensor: core's dtype names, a row-major shape and bytes in a device's Memory (the host
// device's by default, a GPU's for the GPU devices), which counts every live allocation and
// enforces the device's memory limit.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memory.h"

namespace hcsp {

enum class DType { BF16, F32, I32, FP8E4M3FN, FP8E4M3FNUZ };

DType parseDType(const std::string& name);
const char* dtypeName(DType d);
size_t dtypeBytes(DType d);
bool isFp8(DType d);

using Shape = std::vector<int64_t>;
std::string shapeStr(const Shape& s);
int64_t numel(const Shape& s);

/**
 * A new tensor's bytes: zeros (a memset, counted), or as the pool hands them out, for an
 * output the kernel writes whole (the engine's runs make no memsets the math does not need).
 */
enum class Init { Zero, Uninitialized };

class Tensor {
 public:
  /** bytes for `shape` in `memory` (counted there), zero-filled unless `init` says otherwise */
  Tensor(DType dtype, Shape shape, std::shared_ptr<Memory> memory = hostMemory(), Init init = Init::Zero);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return numel_ * dtypeBytes(dtype_); }
  int64_t dim(size_t i) const { return shape_[i]; }
  size_t rank() const { return shape_.size(); }

  Memory& memory() const { return *memory_; }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  uint16_t* bf16() { return data<uint16_t>(); }
  const uint16_t* bf16() const { return data<uint16_t>(); }

  /** A derived form of this (immutable) tensor kept with it, e.g. a GEMM's packed weight panels. */
  std::shared_ptr<void> cache;

  /**
   * Frees the bytes and keeps the handle: dtype, shape and `cache` stay, raw() is then null
   * and bytes() the logical size (the allocator no longer counts the bytes; the tensor still
   * counts as live). For a weight whose readers need only a derived form of it (a GEMM's
   * panels, gemm::packForGemm); the caller guarantees no kernel is reading the bytes, and
   * the run worker refuses a released input to every op but those (run_worker.cc).
   */
  void releaseData();
  bool released() const { return released_.load(std::memory_order_acquire); }

 private:
  std::shared_ptr<Memory> memory_;
  DType dtype_;
  Shape shape_;
  int64_t numel_;
  void* data_;
  std::atomic<bool> released_{false};
};

using TensorPtr = std::shared_ptr<Tensor>;

/** a host kernel's output or scratch, which the kernel writes whole before reading */
inline TensorPtr makeTensor(DType dtype, Shape shape) { return std::make_shared<Tensor>(dtype, std::move(shape), hostMemory(), Init::Uninitialized); }
/** a host kernel's output or scratch that starts at zero (an accumulator, a list filled in part) */
inline TensorPtr makeZeroTensor(DType dtype, Shape shape) { return std::make_shared<Tensor>(dtype, std::move(shape)); }

/** the host device's counts */
AllocatorStats allocatorStats();
/** the host device's limit; 0 removes it */
void setMemoryLimit(int64_t bytes);
/** Counts host memory a kernel holds outside tensors (scratch, packed panels) against the same limit. */
void reserveScratch(int64_t bytes);
void releaseScratch(int64_t bytes);

}  // namespace hcsp
