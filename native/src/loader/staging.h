// How the weight loader's reads reach a GPU's memory: each lane of the loader reads into one of
// its two staging buffers while the copy from the other runs. On hip and cuda the buffers are
// pinned (hipHostMalloc, cuMemHostAlloc) and the copies asynchronous on a stream of the lane's
// own (hipMemcpyAsync, cuMemcpyHtoDAsync_v2); where the runtime lacks those entry points, and on
// the emulated device, the buffers are plain host memory and each copy is the device's own
// synchronous copy (Memory::copyIn). The host device needs no lane: reads land in its tensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "../host/memory.h"

namespace hcsp::loader {

class Lane {
 public:
  virtual ~Lane() = default;
  /** staging buffer 0 or 1 */
  uint8_t* buffer(int i) const { return buffers_[i]; }
  /**
   * Queues a copy of buffer i's first `bytes` to `dst` in device memory, after waiting for the
   * lane's earlier copies (so the other buffer is free to be read into next).
   */
  virtual void copy(void* dst, int i, size_t bytes) = 0;
  /** waits for every copy queued; raises the first one's error */
  virtual void finish() = 0;

 protected:
  uint8_t* buffers_[2] = {nullptr, nullptr};
};

/** "pinned" (hip, cuda with the entry points), "pageable" (the emulated device, runtimes without them) */
std::string stagingKind(Memory& memory);

/** a lane with two staging buffers of `bufferBytes` each, for copies into `memory` (a device memory that is not host-visible) */
std::unique_ptr<Lane> openLane(Memory& memory, size_t bufferBytes);

}  // namespace hcsp::loader
