// The project's own declarations of the CUDA driver API subset cuda_runtime.cc calls through
// dlopen/dlsym (libcuda.so.1 is loaded at run time: architecture.md, "Native backend"). No
// CUDA header is included.
//
// Source read: NVIDIA's cuda.h of CUDA 13.0 (CUDA_VERSION 13000), as installed here at
// /usr/local/cuda-13.0/include/cuda.h by NVIDIA's nvidia-cuda-runtime 13.0.96 wheel
// (nvidia/cu13/include/cuda.h, RECORD sha256 ZAJfganW0rEOnhFlTzUj5bBG0BuIPwucpHTkYydLgNQ).
// cuda.h maps the unversioned names onto versioned symbols (#define cuMemAlloc cuMemAlloc_v2,
// cuMemFree_v2, cuMemcpyHtoD_v2, cuMemcpyDtoH_v2, cuMemsetD8_v2, cuMemGetInfo_v2,
// cuDeviceTotalMem_v2, cuStreamDestroy_v2, cuDevicePrimaryCtxRelease_v2): dlsym must ask for
// the versioned names, which libcuda.so.1 has exported since CUDA 3.2 / 11.0.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hcsp::gpu::cuda {

// CUresult (cudaError_enum)
using CUresult = int;
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

using CUdevice = int;                    // typedef int CUdevice_v1; typedef CUdevice_v1 CUdevice
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2 on a 64-bit host
static_assert(sizeof(CUdeviceptr) == sizeof(void*), "CUdeviceptr is pointer-sized (cuda.h)");
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

// CUdevice_attribute
using CUdevice_attribute = int;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// CUstream_flags: the default flag gives a stream that synchronizes with the legacy NULL stream
// (which the synchronous cuMemcpy*/cuMemsetD8 calls use)
constexpr unsigned int CU_STREAM_DEFAULT = 0x0;

using cuInit_t = CUresult (*)(unsigned int flags);
using cuDeviceGetCount_t = CUresult (*)(int* count);
using cuDeviceGet_t = CUresult (*)(CUdevice* device, int ordinal);
using cuDeviceGetName_t = CUresult (*)(char* name, int len, CUdevice dev);
using cuDeviceGetAttribute_t = CUresult (*)(int* pi, CUdevice_attribute attrib, CUdevice dev);
using cuDeviceTotalMem_t = CUresult (*)(size_t* bytes, CUdevice dev);  // cuDeviceTotalMem_v2
using cuDevicePrimaryCtxRetain_t = CUresult (*)(CUcontext* pctx, CUdevice dev);
using cuDevicePrimaryCtxRelease_t = CUresult (*)(CUdevice dev);  // cuDevicePrimaryCtxRelease_v2
using cuCtxSetCurrent_t = CUresult (*)(CUcontext ctx);
using cuMemAlloc_t = CUresult (*)(CUdeviceptr* dptr, size_t bytesize);                              // cuMemAlloc_v2
using cuMemFree_t = CUresult (*)(CUdeviceptr dptr);                                                 // cuMemFree_v2
using cuMemcpyHtoD_t = CUresult (*)(CUdeviceptr dstDevice, const void* srcHost, size_t byteCount);  // cuMemcpyHtoD_v2
using cuMemcpyDtoH_t = CUresult (*)(void* dstHost, CUdeviceptr srcDevice, size_t byteCount);        // cuMemcpyDtoH_v2
using cuMemsetD8_t = CUresult (*)(CUdeviceptr dstDevice, unsigned char uc, size_t n);               // cuMemsetD8_v2
using cuMemGetInfo_t = CUresult (*)(size_t* free, size_t* total);                                   // cuMemGetInfo_v2
using cuStreamCreate_t = CUresult (*)(CUstream* phStream, unsigned int flags);
using cuStreamDestroy_t = CUresult (*)(CUstream hStream);  // cuStreamDestroy_v2
using cuStreamSynchronize_t = CUresult (*)(CUstream hStream);
using cuModuleLoadData_t = CUresult (*)(CUmodule* module, const void* image);
using cuModuleUnload_t = CUresult (*)(CUmodule hmod);
using cuModuleGetFunction_t = CUresult (*)(CUfunction* hfunc, CUmodule hmod, const char* name);
using cuLaunchKernel_t = CUresult (*)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
                                      unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void** kernelParams,
                                      void** extra);
using cuGetErrorString_t = CUresult (*)(CUresult error, const char** pStr);
// the weight loader's pinned staging (native/src/loader/staging.cc); bound when present
using cuMemHostAlloc_t = CUresult (*)(void** pp, size_t bytesize, unsigned int flags);
using cuMemFreeHost_t = CUresult (*)(void* p);
using cuMemcpyHtoDAsync_t = CUresult (*)(CUdeviceptr dstDevice, const void* srcHost, size_t byteCount, CUstream hStream);  // cuMemcpyHtoDAsync_v2

/** the loaded entry points (cuda_runtime.cc fills every one, or fails naming the missing symbol) */
struct CudaApi {
  cuInit_t cuInit = nullptr;
  cuDeviceGetCount_t cuDeviceGetCount = nullptr;
  cuDeviceGet_t cuDeviceGet = nullptr;
  cuDeviceGetName_t cuDeviceGetName = nullptr;
  cuDeviceGetAttribute_t cuDeviceGetAttribute = nullptr;
  cuDeviceTotalMem_t cuDeviceTotalMem = nullptr;
  cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain = nullptr;
  cuDevicePrimaryCtxRelease_t cuDevicePrimaryCtxRelease = nullptr;
  cuCtxSetCurrent_t cuCtxSetCurrent = nullptr;
  cuMemAlloc_t cuMemAlloc = nullptr;
  cuMemFree_t cuMemFree = nullptr;
  cuMemcpyHtoD_t cuMemcpyHtoD = nullptr;
  cuMemcpyDtoH_t cuMemcpyDtoH = nullptr;
  cuMemsetD8_t cuMemsetD8 = nullptr;
  cuMemGetInfo_t cuMemGetInfo = nullptr;
  cuStreamCreate_t cuStreamCreate = nullptr;
  cuStreamDestroy_t cuStreamDestroy = nullptr;
  cuStreamSynchronize_t cuStreamSynchronize = nullptr;
  cuModuleLoadData_t cuModuleLoadData = nullptr;
  cuModuleUnload_t cuModuleUnload = nullptr;
  cuModuleGetFunction_t cuModuleGetFunction = nullptr;
  cuLaunchKernel_t cuLaunchKernel = nullptr;
  cuGetErrorString_t cuGetErrorString = nullptr;
  /** optional (null when the driver lacks them): the loader then stages in pageable memory with cuMemcpyHtoD */
  cuMemHostAlloc_t cuMemHostAlloc = nullptr;
  cuMemFreeHost_t cuMemFreeHost = nullptr;
  cuMemcpyHtoDAsync_t cuMemcpyHtoDAsync = nullptr;
};

}  // namespace hcsp::gpu::cuda
