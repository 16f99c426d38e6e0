#include "staging.h"

#include <cstdlib>

#include "../gpu/cuda_runtime.h"
#include "../gpu/hip_runtime.h"
#include "../host/errors.h"

namespace hcsp::loader {

namespace {

/** plain host buffers; each copy is the device's synchronous copy */
class PageableLane : public Lane {
 public:
  PageableLane(Memory& memory, size_t bytes) : memory_(memory) {
    for (auto*& b : buffers_) {
      b = static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
      if (!b) {
        release();
        fail(ErrorKind::OutOfMemory, "weight loader: the system refused a staging buffer of " + std::to_string(bytes) + " bytes");
      }
    }
  }
  ~PageableLane() override { release(); }
  void copy(void* dst, int i, size_t bytes) override { memory_.copyIn(dst, buffers_[i], bytes); }
  void finish() override {}

 private:
  void release() {
    for (auto*& b : buffers_) std::free(b), b = nullptr;
  }
  Memory& memory_;
};

/** host buffers the runtime pins (its ABI table's hostAlloc), copied in on a stream of the lane's own */
template <class Abi>
class PinnedLane : public Lane {
 public:
  using Runtime = gpu::VendorRuntime<Abi>;
  PinnedLane(Runtime& rt, size_t bytes) : rt_(rt) {
    rt_.makeCurrent();
    try {
      for (auto*& b : buffers_) {
        void* p = nullptr;
        if (auto e = Abi::hostAlloc(rt_.api(), &p, bytes)) {
          rt_.raise(Abi::kNames.hostAlloc, e, "(a weight loader staging buffer of " + std::to_string(bytes) + " bytes)");
        }
        b = static_cast<uint8_t*>(p);
      }
      if (auto e = Abi::streamCreate(rt_.api(), &stream_)) rt_.raise(Abi::kNames.streamCreate, e, "(the weight loader's copy stream)");
    } catch (...) {
      release();
      throw;
    }
  }
  ~PinnedLane() override { release(); }

  void copy(void* dst, int i, size_t bytes) override {
    rt_.makeCurrent();
    finish();
    if (auto e = Abi::copyInAsync(rt_.api(), dst, buffers_[i], bytes, stream_)) {
      rt_.raise(Abi::kNames.copyInAsync, e, "(" + std::string(Abi::kCopyInWhat) + std::to_string(bytes) + " bytes)");
    }
    rt_.countCopyIn(bytes);
  }
  void finish() override {
    rt_.makeCurrent();
    if (auto e = Abi::streamSync(rt_.api(), stream_)) rt_.raise(Abi::kNames.streamSync, e, "(the weight loader's copy stream)");
  }

 private:
  // never throws: the stream's work is waited for before its buffers go back
  void release() noexcept {
    try {
      rt_.makeCurrent();
    } catch (...) {
    }
    if (stream_) {
      Abi::streamSync(rt_.api(), stream_);
      Abi::streamDestroy(rt_.api(), stream_);
      stream_ = nullptr;
    }
    for (auto*& b : buffers_) {
      if (b) Abi::hostFree(rt_.api(), b);
      b = nullptr;
    }
  }
  Runtime& rt_;
  typename Abi::Stream stream_ = nullptr;
};

/** the vendor runtime of `memory` whose library has the pinned-memory entry points, or null */
template <class Abi>
gpu::VendorRuntime<Abi>* pinnedRuntime(Memory& memory) {
  auto* rt = dynamic_cast<gpu::VendorRuntime<Abi>*>(&memory);
  return rt && Abi::hasPinned(rt->api()) ? rt : nullptr;
}

}  // namespace

std::string stagingKind(Memory& memory) { return pinnedRuntime<gpu::HipAbi>(memory) || pinnedRuntime<gpu::CudaAbi>(memory) ? "pinned" : "pageable"; }

std::unique_ptr<Lane> openLane(Memory& memory, size_t bufferBytes) {
  if (auto* h = pinnedRuntime<gpu::HipAbi>(memory)) return std::make_unique<PinnedLane<gpu::HipAbi>>(*h, bufferBytes);
  if (auto* c = pinnedRuntime<gpu::CudaAbi>(memory)) return std::make_unique<PinnedLane<gpu::CudaAbi>>(*c, bufferBytes);
  return std::make_unique<PageableLane>(memory, bufferBytes);
}

}  // namespace hcsp::loader
