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

#include "gpu_runtime.h"
#include "hip_abi.h"
#include "open_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen of the HIP runtime: HCSP_HIP_LIB when set, else libamdhip64.so.7, .so.6, .so.5, .so.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openHipLibrary(std::string* name, std::string* tried);

std::shared_ptr<GpuRuntime> openHipRuntime(const OpenOptions& options);

class HipRuntime : public GpuRuntime {
 public:
  /** state another part of the addon keeps per device (blaslt.cc's handle and workspace), destroyed before the device */
  struct Extension {
    virtual ~Extension() = default;
  };

  HipRuntime(void* library, std::string libraryName, const hip::HipApi& api, const OpenOptions& options);
  ~HipRuntime() override;

  std::string name() const override { return "hip:" + std::to_string(device_); }
  bool hostVisible() const override { return false; }
  std::string kind() const override { return "hip"; }
  std::string describe() const override { return describe_; }
  std::string arch() const override { return arch_; }

  void copyIn(void* dst, const void* src, size_t bytes) override;
  void copyOut(void* dst, const void* src, size_t bytes) override;
  void fillZero(void* dst, size_t bytes) override;
  void launchByName(const char* name, int64_t threads, void** args) override;
  void runEmulated(const std::function<void()>& body) override;
  void synchronize() override;

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
  /** device memory outside tensors (workspaces), counted against the limit as `what` */
  void* allocateScratch(size_t bytes, const std::string& what);
  void releaseScratch(void* p, size_t bytes);
  /** the extension slot and the lock its user holds while using it */
  std::mutex& extensionMutex() { return extensionMutex_; }
  std::unique_ptr<Extension>& extension() { return extension_; }

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
  void loadCodeObjects(const std::string& folder);

  void* library_;
  std::string libraryName_;
  hip::HipApi api_;
  int device_;
  uint64_t id_;
  std::string arch_;
  std::string describe_;
  int computeUnits_ = 1;
  hip::hipStream_t stream_ = nullptr;
  std::string folder_;
  std::vector<CodeObject> objects_;
  std::mutex functionsMutex_;
  std::unordered_map<std::string, hip::hipFunction_t> functions_;
  std::mutex releaseMutex_;
  /** a hipFree error (raised by release, which must not throw) kept for the next synchronize */
  std::string releaseError_;
  std::mutex extensionMutex_;
  std::unique_ptr<Extension> extension_;
};

}  // namespace hcsp::gpu
