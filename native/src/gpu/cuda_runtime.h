// The NVIDIA GPU device over the CUDA driver API: libcuda.so.1 loaded at run time (cuda_abi.h
// declares what is called), the device's primary context, memory through cuMemAlloc counted and
// limited by the Memory base, kernels launched by name from the cubins built by
// native/scripts/build-gpu-kernels.sh (<codeObjects>/sm_<major><minor>/*.cubin, all loaded when
// the device opens), one stream per device. Every CUDA error raises hcsp::Error(ErrorKind::Runtime,
// "<call> failed: <cuGetErrorString> (code N)"), naming the kernel for launches; cuMemAlloc's
// out-of-memory is ErrorKind::OutOfMemory.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_abi.h"
#include "module_runtime.h"
#include "open_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen of the CUDA driver: HCSP_CUDA_LIB when set, else libcuda.so.1, libcuda.so.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openCudaLibrary(std::string* name, std::string* tried);

std::shared_ptr<GpuRuntime> openCudaRuntime(const OpenOptions& options);

class CudaRuntime : public ModuleRuntime {
 public:
  CudaRuntime(void* library, std::string libraryName, const cuda::CudaApi& api, const OpenOptions& options);
  ~CudaRuntime() override;

  std::string name() const override { return "cuda:" + std::to_string(ordinal_); }
  std::string kind() const override { return "cuda"; }

  void rawCopyIn(void* dst, const void* src, size_t bytes) override;
  void rawCopyOut(void* dst, const void* src, size_t bytes) override;
  void rawFill(void* dst, uint8_t byte, size_t bytes) override;
  void launchByName(const char* name, int64_t threads, void** args) override;
  void launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) override;
  void rawSynchronize() override;
  DeviceMemoryInfo memoryInfo() override;

  // for the vendor libraries (blaslt.cc)
  const cuda::CudaApi& api() const { return api_; }
  cuda::CUstream stream() const { return stream_; }
  cuda::CUcontext context() const { return context_; }
  int ordinal() const { return ordinal_; }
  /** compute capability major * 10 + minor (90 for sm_90) */
  int computeCapability() const { return cc_; }
  /** makes this device's primary context the calling thread's current one (cuCtxSetCurrent, once per thread) */
  void makeCurrent();
  /** raises a failed driver call as the module's errors do: "<call> failed: <text> (code N)" */
  [[noreturn]] void raise(const char* call, cuda::CUresult err, const std::string& context = "") const;
  std::string errorText(cuda::CUresult err) const;

 protected:
  void* rawAllocate(size_t bytes) override;
  void rawRelease(void* p) override;

 private:
  struct CodeObject {
    std::string file;
    std::vector<char> image;
    cuda::CUmodule module = nullptr;
  };
  cuda::CUfunction function(const char* name);
  /** kernel `name` over `blocks` blocks of `blockThreads` threads on the device's stream */
  void launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args);
  void loadCodeObjects(const std::string& folder);

  void* library_;
  std::string libraryName_;
  cuda::CudaApi api_;
  int ordinal_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  uint64_t id_;
  int cc_ = 0;
  cuda::CUstream stream_ = nullptr;
  std::vector<CodeObject> objects_;
};

}  // namespace hcsp::gpu
