// The ROCm GPU device: libamdhip64 loaded at run time (hip_abi.h declares what is called),
// memory through hipMalloc counted and limited by the Memory base, kernels launched by name
// from the gfx code objects built by native/scripts/build-gpu-kernels.sh
// (<codeObjects>/<arch>/*.hsaco, all loaded when the device opens), one stream per device.
// Every HIP error raises hcsp::Error(ErrorKind::Runtime, "<call> failed: <hipGetErrorString>
// (code N)"), naming the kernel for launches; hipMalloc's out-of-memory is ErrorKind::OutOfMemory.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hip_abi.h"
#include "module_runtime.h"
#include "open_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen of the HIP runtime: HCSP_HIP_LIB when set, else libamdhip64.so.7, .so.6, .so.5, .so.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openHipLibrary(std::string* name, std::string* tried);

std::shared_ptr<GpuRuntime> openHipRuntime(const OpenOptions& options);

class HipRuntime : public ModuleRuntime {
 public:
  HipRuntime(void* library, std::string libraryName, const hip::HipApi& api, const OpenOptions& options);
  ~HipRuntime() override;

  std::string name() const override { return "hip:" + std::to_string(device_); }
  std::string kind() const override { return "hip"; }

  void rawCopyIn(void* dst, const void* src, size_t bytes) override;
  void rawCopyOut(void* dst, const void* src, size_t bytes) override;
  void rawFill(void* dst, uint8_t byte, size_t bytes) override;
  void launchByName(const char* name, int64_t threads, void** args) override;
  void launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) override;
  void rawSynchronize() override;
  DeviceMemoryInfo memoryInfo() override;

  // for the vendor libraries (blaslt.cc)
  const hip::HipApi& api() const { return api_; }
  hip::hipStream_t stream() const { return stream_; }
  int device() const { return device_; }
  const std::string& libraryName() const { return libraryName_; }
  /** makes this device the calling thread's current one (hipSetDevice, once per thread) */
  void makeCurrent();
  /** raises a failed HIP call as the module's errors do: "<call> failed: <text> (code N)" */
  [[noreturn]] void raise(const char* call, hip::hipError_t err, const std::string& context = "") const;
  std::string errorText(hip::hipError_t err) const;

 protected:
  void* rawAllocate(size_t bytes) override;
  void rawRelease(void* p) override;

 private:
  struct CodeObject {
    std::string file;
    std::vector<char> image;
    hip::hipModule_t module = nullptr;
  };
  hip::hipFunction_t function(const char* name);
  /** kernel `name` over `blocks` blocks of `blockThreads` threads on the device's stream */
  void launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args);
  void loadCodeObjects(const std::string& folder);

  void* library_;
  std::string libraryName_;
  hip::HipApi api_;
  int device_;
  uint64_t id_;
  hip::hipStream_t stream_ = nullptr;
  std::vector<CodeObject> objects_;
};

}  // namespace hcsp::gpu
