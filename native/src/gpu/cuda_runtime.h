// The NVIDIA GPU device: vendor_runtime.h's runtime over the CUDA driver ABI table below.
// libcuda.so.1 is loaded at run time (cuda_abi.h declares what is called); the device's primary
// context is retained while it is open and made current per thread; code objects are
// <codeObjects>/sm_<major><minor>/*.cubin.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "cuda_abi.h"
#include "vendor_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen of the CUDA driver: HCSP_CUDA_LIB when set, else libcuda.so.1, libcuda.so.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openCudaLibrary(std::string* name, std::string* tried);

std::shared_ptr<GpuRuntime> openCudaRuntime(const OpenOptions& options);

/** The CUDA driver's entry points as VendorRuntime calls them (vendor_runtime.h lists the members). */
struct CudaAbi {
  using Api = cuda::CudaApi;
  using Error = cuda::CUresult;
  using Device = cuda::CUdevice;
  using Context = cuda::CUcontext;
  using Stream = cuda::CUstream;
  using Module = cuda::CUmodule;
  using Function = cuda::CUfunction;

  static constexpr const char* kKind = "cuda";
  static constexpr const char* kLabel = "CUDA";
  static constexpr const char* kCodeExt = "cubin";
  static constexpr Error kSuccess = cuda::CUDA_SUCCESS;
  static constexpr Error kOutOfMemory = cuda::CUDA_ERROR_OUT_OF_MEMORY;
  static constexpr Error kNotFound = cuda::CUDA_ERROR_NOT_FOUND;
  static constexpr const char* kCopyInWhat = "";
  static constexpr const char* kCopyOutWhat = "";

  // in CallNames' order: init, count, device, retain, setCurrent, malloc, free, copyIn, copyOut, fill, memInfo, streamCreate,
  // streamSync, moduleLoad, getFunction, launch, hostAlloc, copyInAsync
  static constexpr CallNames kNames{"cuInit",          "cuDeviceGetCount", "cuDeviceGet",         "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                                    "cuMemAlloc_v2",   "cuMemFree_v2",     "cuMemcpyHtoD_v2",     "cuMemcpyDtoH_v2",          "cuMemsetD8_v2",
                                    "cuMemGetInfo_v2", "cuStreamCreate",   "cuStreamSynchronize", "cuModuleLoadData",         "cuModuleGetFunction",
                                    "cuLaunchKernel",  "cuMemHostAlloc",   "cuMemcpyHtoDAsync_v2"};

  /** a device pointer as the driver API types it */
  static cuda::CUdeviceptr dptr(const void* p) { return static_cast<cuda::CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

  static Error init(const Api& a) { return a.cuInit(0); }
  static Error count(const Api& a, int* n) { return a.cuDeviceGetCount(n); }
  static Error device(const Api& a, int ordinal, Device* d) { return a.cuDeviceGet(d, ordinal); }
  static Error retain(const Api& a, Device d, Context* c) { return a.cuDevicePrimaryCtxRetain(c, d); }
  static void release(const Api& a, Device d) { a.cuDevicePrimaryCtxRelease(d); }
  static Error setCurrent(const Api& a, Device, Context c) { return a.cuCtxSetCurrent(c); }
  static Error malloc(const Api& a, void** p, size_t n) {
    cuda::CUdeviceptr d = 0;
    Error e = a.cuMemAlloc(&d, n);
    *p = reinterpret_cast<void*>(static_cast<uintptr_t>(d));
    return e;
  }
  static Error free(const Api& a, void* p) { return a.cuMemFree(dptr(p)); }
  static Error copyIn(const Api& a, void* dst, const void* src, size_t n) { return a.cuMemcpyHtoD(dptr(dst), src, n); }
  static Error copyOut(const Api& a, void* dst, const void* src, size_t n) { return a.cuMemcpyDtoH(dst, dptr(src), n); }
  static Error fill(const Api& a, void* dst, uint8_t byte, size_t n) { return a.cuMemsetD8(dptr(dst), byte, n); }
  static Error memInfo(const Api& a, size_t* freeBytes, size_t* totalBytes) { return a.cuMemGetInfo(freeBytes, totalBytes); }
  static Error streamCreate(const Api& a, Stream* s) { return a.cuStreamCreate(s, cuda::CU_STREAM_DEFAULT); }
  static Error streamDestroy(const Api& a, Stream s) { return a.cuStreamDestroy(s); }
  static Error streamSync(const Api& a, Stream s) { return a.cuStreamSynchronize(s); }
  static Error moduleLoad(const Api& a, Module* m, const void* image) { return a.cuModuleLoadData(m, image); }
  static Error moduleUnload(const Api& a, Module m) { return a.cuModuleUnload(m); }
  static Error getFunction(const Api& a, Function* f, Module m, const char* name) { return a.cuModuleGetFunction(f, m, name); }
  static Error launch(const Api& a, Function f, unsigned blocks, unsigned blockThreads, Stream s, void** args) {
    return a.cuLaunchKernel(f, blocks, 1, 1, blockThreads, 1, 1, 0, s, args, nullptr);
  }
  // the weight loader's pinned staging (loader/staging.cc): optional entry points
  static bool hasPinned(const Api& a) { return a.cuMemHostAlloc && a.cuMemFreeHost && a.cuMemcpyHtoDAsync; }
  static Error hostAlloc(const Api& a, void** p, size_t n) { return a.cuMemHostAlloc(p, n, 0); }
  static Error hostFree(const Api& a, void* p) { return a.cuMemFreeHost(p); }
  static Error copyInAsync(const Api& a, void* dst, const void* src, size_t n, Stream s) { return a.cuMemcpyHtoDAsync(dptr(dst), src, n, s); }
  static const char* errorString(const Api& a, Error e) {
    const char* s = nullptr;
    return a.cuGetErrorString && a.cuGetErrorString(e, &s) == kSuccess ? s : nullptr;
  }
  /** sm_<major><minor> (the code-object folder), multiprocessors and a description */
  static DeviceIdentity identify(VendorRuntime<CudaAbi>& rt);
};

using CudaRuntime = VendorRuntime<CudaAbi>;

}  // namespace hcsp::gpu
