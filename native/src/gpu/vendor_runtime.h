// The one vendor GPU device (HIP and CUDA alike): a runtime library loaded at run time, memory
// through the vendor's allocator counted and limited by the Memory base, kernels launched by
// name from the code objects built by native/scripts/build-gpu-kernels.sh
// (<codeObjects>/<arch>/*.<ext>, all loaded when the device opens), one stream per device.
// What differs between the vendors is the ABI table the runtime is instantiated with
// (hip_runtime.h's HipAbi, cuda_runtime.h's CudaAbi): the library's entry points, the calls'
// names as messages give them, and how the device is identified (its architecture and size).
// Every vendor error raises hcsp::Error(ErrorKind::Runtime, "<call> failed: <error string>
// (code N)"), naming the kernel for launches; the allocator's out-of-memory is ErrorKind::OutOfMemory.
//
// An ABI table is a struct of static members:
//   types   Api (the loaded entry points), Error, Device, Context, Stream, Module, Function
//   values  kKind ("hip"), kLabel ("HIP"), kCodeExt ("hsaco"), kSuccess, kOutOfMemory, kNotFound,
//           kCopyInWhat / kCopyOutWhat (how a copy's message names its direction)
//   names   kNames (CallNames): each call's name
//   calls   each returns the vendor's Error: init, count, device, retain, release, setCurrent,
//           malloc, free, copyIn, copyOut, fill, memInfo, streamCreate, streamDestroy,
//           streamSync, moduleLoad, moduleUnload, getFunction, launch; errorString (null if none)
//   identify(runtime): reads the current device's architecture, units and description
//   pinned  hasPinned, hostAlloc, hostFree, copyInAsync : the weight
//           loader's staging (loader/staging.cc), optional entry points
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "module_runtime.h"
#include "open_runtime.h"

namespace hcsp::gpu {

/** what identify() reports of a device */
struct DeviceIdentity {
  std::string arch;
  int units = 1;
  std::string describe;
};

/** the vendor calls as messages name them ("" for a step the vendor has no call for) */
struct CallNames {
  const char *init, *count, *device, *retain, *setCurrent, *malloc, *free, *copyIn, *copyOut, *fill, *memInfo, *streamCreate, *streamSync, *moduleLoad,
      *getFunction, *launch, *hostAlloc, *copyInAsync;
};

/** A vendor library's entry points by name: a missing required one fails as Unsupported, naming it. */
struct VendorSymbols {
  void* library;
  /** the library as messages name it ("the HIP runtime libamdhip64.so.6") */
  std::string what;
  /** what a missing entry point suggests ("not a HIP runtime library?") */
  std::string hint;

  template <class F>
  void operator()(const char* symbol, F& fn) const {
    fn = reinterpret_cast<F>(find(symbol));
    if (!fn) missing(symbol);
  }
  /** binds `symbol` when the library has it (else null); whether it did */
  template <class F>
  bool optional(const char* symbol, F& fn) const {
    fn = reinterpret_cast<F>(find(symbol));
    return fn != nullptr;
  }

 private:
  void* find(const char* symbol) const;
  [[noreturn]] void missing(const char* symbol) const;
};

template <class Abi>
class VendorRuntime final : public ModuleRuntime {
 public:
  using Api = typename Abi::Api;
  using Error = typename Abi::Error;
  using Stream = typename Abi::Stream;

  VendorRuntime(void* library, std::string libraryName, const Api& api, const OpenOptions& options);
  ~VendorRuntime() override;

  std::string name() const override { return std::string(Abi::kKind) + ":" + std::to_string(ordinal_); }
  std::string kind() const override { return Abi::kKind; }

  void rawCopyIn(void* dst, const void* src, size_t bytes) override;
  void rawCopyOut(void* dst, const void* src, size_t bytes) override;
  void rawFill(void* dst, uint8_t byte, size_t bytes) override;
  void launchByName(const char* name, int64_t threads, void** args) override;
  void launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) override;
  void rawSynchronize() override;
  DeviceMemoryInfo memoryInfo() override;

  // for the vendor libraries (blaslt.cc, nccl_communicator.cc, loader/staging.cc) and identify()
  const Api& api() const { return api_; }
  Stream stream() const { return stream_; }
  void* streamHandle() const override { return stream_; }
  int ordinal() const { return ordinal_; }
  typename Abi::Device device() const { return device_; }
  const std::string& libraryName() const { return libraryName_; }
  void makeCurrent() override;
  /** raises a failed vendor call as the module's errors do: "<call> failed: <text> (code N)" */
  [[noreturn]] void raise(const char* call, Error err, const std::string& context = "") const;
  std::string errorText(Error err) const;

 protected:
  void* rawAllocate(size_t bytes) override;
  void rawRelease(void* p) override;

 private:
  struct CodeObject {
    std::string file;
    std::vector<char> image;
    typename Abi::Module module = nullptr;
  };
  typename Abi::Function function(const char* name);
  /** kernel `name` over `blocks` blocks of `blockThreads` threads on the device's stream */
  void launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args);
  void loadCodeObjects(const std::string& folder);
  /** the modules, the stream and the context back: a failed open's and the destructor's last step */
  void releaseDevice();

  void* library_;
  std::string libraryName_;
  Api api_;
  int ordinal_;
  typename Abi::Device device_{};
  typename Abi::Context context_{};
  uint64_t id_;
  Stream stream_ = nullptr;
  std::vector<CodeObject> objects_;
};

}  // namespace hcsp::gpu
