// Where a tensor's bytes live: the host device's memory, or a GPU's (gpu/gpu_runtime.h)
// behind the same interface. Each memory counts its live allocations (leak tests read the
// counts) and enforces its own limit: an out-of-memory error names the request and the limit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace hcsp {

struct AllocatorStats {
  int64_t liveTensors;
  int64_t liveBytes;
  int64_t peakBytes;
  int64_t allocations;
  int64_t limitBytes;  // 0 = no limit
};

class Memory {
 public:
  virtual ~Memory() = default;
  /** for messages: "host", "hip:0", "cuda:0", "emulated" */
  virtual std::string name() const = 0;
  /** whether the bytes can be read in place by host code */
  virtual bool hostVisible() const = 0;

  /** counted and limited; zero bytes gives nullptr */
  void* allocate(size_t bytes, const std::string& what);
  void release(void* p, size_t bytes);
  /** counts memory held outside tensors (scratch, packed panels) against the same limit */
  void reserve(int64_t bytes, const std::string& what);
  void unreserve(int64_t bytes);

  virtual void copyIn(void* dst, const void* src, size_t bytes) = 0;
  virtual void copyOut(void* dst, const void* src, size_t bytes) = 0;
  virtual void fillZero(void* dst, size_t bytes) = 0;

  AllocatorStats stats() const;
  /** 0 removes the limit */
  void setLimit(int64_t bytes);

 protected:
  virtual void* rawAllocate(size_t bytes) = 0;
  virtual void rawRelease(void* p) = 0;

 private:
  mutable std::mutex mutex_;
  AllocatorStats stats_{0, 0, 0, 0, 0};
};

/** the host device's memory (64-byte aligned, zero-filled) */
const std::shared_ptr<Memory>& hostMemory();

}  // namespace hcsp
