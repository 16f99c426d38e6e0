// The ROCm GPU device: vendor_runtime.h's runtime over the HIP ABI table below. libamdhip64 is
// loaded at run time (hip_abi.h declares what is called); code objects are
// <codeObjects>/<gfx arch>/*.hsaco; the device is made current with hipSetDevice.
#pragma once
#include <memory>
#include <string>

#include "hip_abi.h"
#include "vendor_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen of the HIP runtime: HCSP_HIP_LIB when set, else libamdhip64.so.7, .so.6, .so.5, .so.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openHipLibrary(std::string* name, std::string* tried);

std::shared_ptr<GpuRuntime> openHipRuntime(const OpenOptions& options);

/** The HIP runtime's entry points as VendorRuntime calls them (vendor_runtime.h lists the members). */
struct HipAbi {
  using Api = hip::HipApi;
  using Error = hip::hipError_t;
  using Device = int;
  using Context = void*;  // none (always null): HIP's current device is per thread
  using Stream = hip::hipStream_t;
  using Module = hip::hipModule_t;
  using Function = hip::hipFunction_t;

  static constexpr const char* kKind = "hip";
  static constexpr const char* kLabel = "HIP";
  static constexpr const char* kCodeExt = "hsaco";
  static constexpr Error kSuccess = hip::hipSuccess;
  static constexpr Error kOutOfMemory = hip::hipErrorOutOfMemory;
  static constexpr Error kNotFound = hip::hipErrorNotFound;
  static constexpr const char* kCopyInWhat = "host to device, ";
  static constexpr const char* kCopyOutWhat = "device to host, ";

  // in CallNames' order: init, count, device, retain, setCurrent, malloc, free, copyIn, copyOut, fill, memInfo, streamCreate,
  // streamSync, moduleLoad, getFunction, launch, hostAlloc, copyInAsync
  static constexpr CallNames kNames{"",
                                    "hipGetDeviceCount",
                                    "",
                                    "",
                                    "hipSetDevice",
                                    "hipMalloc",
                                    "hipFree",
                                    "hipMemcpy",
                                    "hipMemcpy",
                                    "hipMemset",
                                    "hipMemGetInfo",
                                    "hipStreamCreate",
                                    "hipStreamSynchronize",
                                    "hipModuleLoadData",
                                    "hipModuleGetFunction",
                                    "hipModuleLaunchKernel",
                                    "hipHostMalloc",
                                    "hipMemcpyAsync"};

  static Error init(const Api&) { return kSuccess; }
  static Error count(const Api& a, int* n) { return a.hipGetDeviceCount(n); }
  static Error device(const Api&, int ordinal, Device* d) { return *d = ordinal, kSuccess; }
  static Error retain(const Api&, Device, Context*) { return kSuccess; }
  static void release(const Api&, Device) {}
  static Error setCurrent(const Api& a, Device d, Context) { return a.hipSetDevice(d); }
  static Error malloc(const Api& a, void** p, size_t n) { return a.hipMalloc(p, n); }
  static Error free(const Api& a, void* p) { return a.hipFree(p); }
  static Error copyIn(const Api& a, void* dst, const void* src, size_t n) { return a.hipMemcpy(dst, src, n, hip::hipMemcpyHostToDevice); }
  static Error copyOut(const Api& a, void* dst, const void* src, size_t n) { return a.hipMemcpy(dst, src, n, hip::hipMemcpyDeviceToHost); }
  static Error fill(const Api& a, void* dst, uint8_t byte, size_t n) { return a.hipMemset(dst, byte, n); }
  static Error memInfo(const Api& a, size_t* freeBytes, size_t* totalBytes) { return a.hipMemGetInfo(freeBytes, totalBytes); }
  static Error streamCreate(const Api& a, Stream* s) { return a.hipStreamCreate(s); }
  static Error streamDestroy(const Api& a, Stream s) { return a.hipStreamDestroy(s); }
  static Error streamSync(const Api& a, Stream s) { return a.hipStreamSynchronize(s); }
  static Error moduleLoad(const Api& a, Module* m, const void* image) { return a.hipModuleLoadData(m, image); }
  static Error moduleUnload(const Api& a, Module m) { return a.hipModuleUnload(m); }
  static Error getFunction(const Api& a, Function* f, Module m, const char* name) { return a.hipModuleGetFunction(f, m, name); }
  static Error launch(const Api& a, Function f, unsigned blocks, unsigned blockThreads, Stream s, void** args) {
    return a.hipModuleLaunchKernel(f, blocks, 1, 1, blockThreads, 1, 1, 0, s, args, nullptr);
  }
  // the weight loader's pinned staging (loader/staging.cc): optional entry points
  static bool hasPinned(const Api& a) { return a.hipHostMalloc && a.hipHostFree && a.hipMemcpyAsync; }
  static Error hostAlloc(const Api& a, void** p, size_t n) { return a.hipHostMalloc(p, n, hip::hipHostMallocDefault); }
  static Error hostFree(const Api& a, void* p) { return a.hipHostFree(p); }
  static Error copyInAsync(const Api& a, void* dst, const void* src, size_t n, Stream s) {
    return a.hipMemcpyAsync(dst, src, n, hip::hipMemcpyHostToDevice, s);
  }
  static const char* errorString(const Api& a, Error e) { return a.hipGetErrorString ? a.hipGetErrorString(e) : nullptr; }
  /** the gfx architecture (the code-object folder), compute units and a description, from the device's properties */
  static DeviceIdentity identify(VendorRuntime<HipAbi>& rt);
};

using HipRuntime = VendorRuntime<HipAbi>;

}  // namespace hcsp::gpu
