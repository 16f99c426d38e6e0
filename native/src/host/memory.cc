#include "memory.h"

#include <cstdlib>
#include <cstring>

#include "errors.h"

namespace hcsp {

void Memory::reserve(int64_t bytes, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stats_.limitBytes > 0 && stats_.liveBytes + bytes > stats_.limitBytes) {
    fail(ErrorKind::OutOfMemory, name() + " device out of memory: " + std::to_string(bytes) + " bytes requested for " + what + ", " +
                                     std::to_string(stats_.liveBytes) + " of the limit " + std::to_string(stats_.limitBytes) + " in use");
  }
  stats_.liveBytes += bytes;
  if (stats_.liveBytes > stats_.peakBytes) stats_.peakBytes = stats_.liveBytes;
}

void Memory::unreserve(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveBytes -= bytes;
}

void* Memory::allocate(size_t bytes, const std::string& what) {
  if (bytes == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.liveTensors++;
    stats_.allocations++;
    return nullptr;
  }
  reserve(static_cast<int64_t>(bytes), what);
  void* p = nullptr;
  try {
    p = rawAllocate(bytes);
  } catch (...) {
    unreserve(static_cast<int64_t>(bytes));
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveTensors++;
  stats_.allocations++;
  return p;
}

void Memory::release(void* p, size_t bytes) {
  if (p) rawRelease(p);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.liveTensors--;
  stats_.liveBytes -= static_cast<int64_t>(bytes);
}

AllocatorStats Memory::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Memory::setLimit(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.limitBytes = bytes > 0 ? bytes : 0;
}

namespace {

class HostMemory : public Memory {
 public:
  std::string name() const override { return "host"; }
  bool hostVisible() const override { return true; }
  void copyIn(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copyOut(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fillZero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }

 protected:
  void* rawAllocate(size_t bytes) override {
    // whole cache lines: aligned AVX-512 loads, no false sharing between tensors
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) fail(ErrorKind::OutOfMemory, "host device out of memory: the system refused " + std::to_string(bytes) + " bytes");
    return p;
  }
  void rawRelease(void* p) override { std::free(p); }
};

}  // namespace

const std::shared_ptr<Memory>& hostMemory() {
  static const std::shared_ptr<Memory> memory = std::make_shared<HostMemory>();
  return memory;
}

}  // namespace hcsp
