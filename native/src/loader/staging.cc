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

bool hipPinned(const gpu::HipRuntime& rt) { return rt.api().hipHostMalloc && rt.api().hipHostFree && rt.api().hipMemcpyAsync; }
bool cudaPinned(const gpu::CudaRuntime& rt) { return rt.api().cuMemHostAlloc && rt.api().cuMemFreeHost && rt.api().cuMemcpyHtoDAsync; }

class HipLane : public Lane {
 public:
  HipLane(gpu::HipRuntime& rt, size_t bytes) : rt_(rt) {
    rt_.makeCurrent();
    try {
      for (auto*& b : buffers_) {
        void* p = nullptr;
        if (gpu::hip::hipError_t e = rt_.api().hipHostMalloc(&p, bytes, gpu::hip::hipHostMallocDefault)) {
          rt_.raise("hipHostMalloc", e, "(a weight loader staging buffer of " + std::to_string(bytes) + " bytes)");
        }
        b = static_cast<uint8_t*>(p);
      }
      if (gpu::hip::hipError_t e = rt_.api().hipStreamCreate(&stream_)) rt_.raise("hipStreamCreate", e, "(the weight loader's copy stream)");
    } catch (...) {
      release();
      throw;
    }
  }
  ~HipLane() override { release(); }

  void copy(void* dst, int i, size_t bytes) override {
    rt_.makeCurrent();
    finish();
    if (gpu::hip::hipError_t e = rt_.api().hipMemcpyAsync(dst, buffers_[i], bytes, gpu::hip::hipMemcpyHostToDevice, stream_)) {
      rt_.raise("hipMemcpyAsync", e, "(host to device, " + std::to_string(bytes) + " bytes)");
    }
    rt_.countCopyIn(bytes);
  }
  void finish() override {
    rt_.makeCurrent();
    if (gpu::hip::hipError_t e = rt_.api().hipStreamSynchronize(stream_)) rt_.raise("hipStreamSynchronize", e, "(the weight loader's copy stream)");
  }

 private:
  // never throws: the stream's work is waited for before its buffers go back
  void release() noexcept {
    try {
      rt_.makeCurrent();
    } catch (...) {
    }
    if (stream_) {
      rt_.api().hipStreamSynchronize(stream_);
      rt_.api().hipStreamDestroy(stream_);
      stream_ = nullptr;
    }
    for (auto*& b : buffers_) {
      if (b) rt_.api().hipHostFree(b);
      b = nullptr;
    }
  }
  gpu::HipRuntime& rt_;
  gpu::hip::hipStream_t stream_ = nullptr;
};

class CudaLane : public Lane {
 public:
  CudaLane(gpu::CudaRuntime& rt, size_t bytes) : rt_(rt) {
    rt_.makeCurrent();
    try {
      for (auto*& b : buffers_) {
        void* p = nullptr;
        if (gpu::cuda::CUresult e = rt_.api().cuMemHostAlloc(&p, bytes, 0)) {
          rt_.raise("cuMemHostAlloc", e, "(a weight loader staging buffer of " + std::to_string(bytes) + " bytes)");
        }
        b = static_cast<uint8_t*>(p);
      }
      if (gpu::cuda::CUresult e = rt_.api().cuStreamCreate(&stream_, gpu::cuda::CU_STREAM_DEFAULT))
        rt_.raise("cuStreamCreate", e, "(the weight loader's copy stream)");
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaLane() override { release(); }

  void copy(void* dst, int i, size_t bytes) override {
    rt_.makeCurrent();
    finish();
    const auto d = static_cast<gpu::cuda::CUdeviceptr>(reinterpret_cast<uintptr_t>(dst));
    if (gpu::cuda::CUresult e = rt_.api().cuMemcpyHtoDAsync(d, buffers_[i], bytes, stream_)) {
      rt_.raise("cuMemcpyHtoDAsync_v2", e, "(" + std::to_string(bytes) + " bytes)");
    }
    rt_.countCopyIn(bytes);
  }
  void finish() override {
    rt_.makeCurrent();
    if (gpu::cuda::CUresult e = rt_.api().cuStreamSynchronize(stream_)) rt_.raise("cuStreamSynchronize", e, "(the weight loader's copy stream)");
  }

 private:
  void release() noexcept {
    try {
      rt_.makeCurrent();
    } catch (...) {
    }
    if (stream_) {
      rt_.api().cuStreamSynchronize(stream_);
      rt_.api().cuStreamDestroy(stream_);
      stream_ = nullptr;
    }
    for (auto*& b : buffers_) {
      if (b) rt_.api().cuMemFreeHost(b);
      b = nullptr;
    }
  }
  gpu::CudaRuntime& rt_;
  gpu::cuda::CUstream stream_ = nullptr;
};

}  // namespace

std::string stagingKind(Memory& memory) {
  if (auto* h = dynamic_cast<gpu::HipRuntime*>(&memory)) return hipPinned(*h) ? "pinned" : "pageable";
  if (auto* c = dynamic_cast<gpu::CudaRuntime*>(&memory)) return cudaPinned(*c) ? "pinned" : "pageable";
  return "pageable";
}

std::unique_ptr<Lane> openLane(Memory& memory, size_t bufferBytes) {
  if (auto* h = dynamic_cast<gpu::HipRuntime*>(&memory); h && hipPinned(*h)) return std::make_unique<HipLane>(*h, bufferBytes);
  if (auto* c = dynamic_cast<gpu::CudaRuntime*>(&memory); c && cudaPinned(*c)) return std::make_unique<CudaLane>(*c, bufferBytes);
  return std::make_unique<PageableLane>(memory, bufferBytes);
}

}  // namespace hcsp::loader
