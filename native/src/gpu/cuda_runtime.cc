#include "cuda_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "../host/errors.h"

namespace hcsp::gpu {

using namespace cuda;

namespace {

std::atomic<uint64_t> nextRuntimeId{1};
/** the CudaRuntime whose context this thread has made current (cuCtxSetCurrent is per thread) */
thread_local uint64_t tlsCurrent = 0;

template <class F>
void bindSymbol(void* lib, const std::string& libName, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn) fail(ErrorKind::Unsupported, "the CUDA driver " + libName + " has no " + symbol + " (not the CUDA driver library?)");
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

void* openCudaLibrary(std::string* name, std::string* tried) { return openVendorLibrary("HCSP_CUDA_LIB", {"libcuda.so.1", "libcuda.so"}, name, tried); }

std::string CudaRuntime::errorText(CUresult err) const {
  const char* s = nullptr;
  if (!api_.cuGetErrorString || api_.cuGetErrorString(err, &s) != CUDA_SUCCESS) s = nullptr;
  return std::string(s && *s ? s : "unknown CUDA error") + " (code " + std::to_string(err) + ")";
}

void CudaRuntime::raise(const char* call, CUresult err, const std::string& context) const {
  fail(ErrorKind::Runtime, std::string(call) + " failed" + (context.empty() ? "" : " " + context) + ": " + errorText(err));
}

CudaRuntime::CudaRuntime(void* library, std::string libraryName, const CudaApi& api, const OpenOptions& options)
    : library_(library), libraryName_(std::move(libraryName)), api_(api), ordinal_(options.device), id_(nextRuntimeId++) {
  if (CUresult e = api_.cuInit(0)) raise("cuInit", e);
  int count = 0;
  if (CUresult e = api_.cuDeviceGetCount(&count)) raise("cuDeviceGetCount", e);
  if (options.device < 0 || options.device >= count) {
    fail(ErrorKind::Attr, "cuda device " + std::to_string(options.device) + " does not exist: " + libraryName_ + " sees " + std::to_string(count) + " GPU" +
                              (count == 1 ? "" : "s"));
  }
  if (CUresult e = api_.cuDeviceGet(&device_, options.device)) raise("cuDeviceGet", e);
  char devName[256] = {0};
  if (CUresult e = api_.cuDeviceGetName(devName, sizeof devName - 1, device_)) raise("cuDeviceGetName", e);
  int major = 0, minor = 0, sms = 0, warp = 0;
  if (CUresult e = api_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_))
    raise("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", e);
  if (CUresult e = api_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_))
    raise("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", e);
  if (CUresult e = api_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_)) raise("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", e);
  if (CUresult e = api_.cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device_)) raise("cuDeviceGetAttribute(WARP_SIZE)", e);
  size_t total = 0;
  if (CUresult e = api_.cuDeviceTotalMem(&total, device_)) raise("cuDeviceTotalMem_v2", e);
  cc_ = major * 10 + minor;
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  units_ = sms > 0 ? sms : 1;
  describe_ = std::string(devName[0] ? devName : "NVIDIA GPU") + " (" + arch_ + ", " + std::to_string(sms) + " SMs, warp " + std::to_string(warp) + ", " +
              gibText(total) + ", " + libraryName_ + ")";

  if (CUresult e = api_.cuDevicePrimaryCtxRetain(&context_, device_)) raise("cuDevicePrimaryCtxRetain", e);
  try {
    makeCurrent();
    if (CUresult e = api_.cuStreamCreate(&stream_, CU_STREAM_DEFAULT)) raise("cuStreamCreate", e);
    loadCodeObjects(options.codeObjects);
  } catch (...) {
    for (auto& o : objects_) {
      if (o.module) api_.cuModuleUnload(o.module);
    }
    if (stream_) api_.cuStreamDestroy(stream_);
    api_.cuDevicePrimaryCtxRelease(device_);
    throw;
  }
}

CudaRuntime::~CudaRuntime() {
  try {
    makeCurrent();
  } catch (...) {
  }
  dropExtension();
  if (stream_) api_.cuStreamSynchronize(stream_);
  dropChecks();
  trimPool();
  for (auto& o : objects_) {
    if (o.module) api_.cuModuleUnload(o.module);
  }
  if (stream_) api_.cuStreamDestroy(stream_);
  api_.cuDevicePrimaryCtxRelease(device_);
  // the driver stays loaded: it is not unloaded once initialised
}

void CudaRuntime::loadCodeObjects(const std::string& root) {
  for (CodeImage& image : readCodeObjects(root, "cubin", "CUDA")) {
    CodeObject o{std::move(image.file), std::move(image.image), nullptr};
    if (CUresult e = api_.cuModuleLoadData(&o.module, o.image.data()))
      raise("cuModuleLoadData", e, "for " + (std::filesystem::path(root) / arch_ / o.file).string());
    objects_.push_back(std::move(o));
  }
}

void CudaRuntime::makeCurrent() {
  if (tlsCurrent == id_) return;
  if (CUresult e = api_.cuCtxSetCurrent(context_)) raise("cuCtxSetCurrent", e, "(device " + std::to_string(ordinal_) + ")");
  tlsCurrent = id_;
}

CUfunction CudaRuntime::function(const char* name) {
  return static_cast<CUfunction>(cachedFunction(name, [&]() -> void* {
    for (const auto& o : objects_) {
      CUfunction f = nullptr;
      CUresult e = api_.cuModuleGetFunction(&f, o.module, name);
      if (e == CUDA_SUCCESS && f) return f;
      if (e != CUDA_SUCCESS && e != CUDA_ERROR_NOT_FOUND) raise("cuModuleGetFunction", e, std::string("for kernel ") + name + " in " + o.file);
    }
    return nullptr;
  }));
}

void CudaRuntime::launchByName(const char* name, int64_t threads, void** args) {
  if (threads <= 0) return;
  launchGrid(name, launchBlocks(threads), kBlock, args);
}

void CudaRuntime::launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) {
  if (blocks <= 0) return;
  launchGrid(name, blocks, static_cast<unsigned>(blockThreads), args);
}

void CudaRuntime::launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args) {
  makeCurrent();
  CUfunction f = function(name);
  CUresult e = api_.cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, blockThreads, 1, 1, 0, stream_, args, nullptr);
  if (e != CUDA_SUCCESS) raise("cuLaunchKernel", e, std::string("for kernel ") + name);
}

void CudaRuntime::rawSynchronize() {
  makeCurrent();
  if (CUresult e = api_.cuStreamSynchronize(stream_)) raise("cuStreamSynchronize", e);
  raiseReleaseError();
}

DeviceMemoryInfo CudaRuntime::memoryInfo() {
  makeCurrent();
  size_t freeBytes = 0, totalBytes = 0;
  if (CUresult e = api_.cuMemGetInfo(&freeBytes, &totalBytes)) raise("cuMemGetInfo_v2", e, "(device " + std::to_string(ordinal_) + ")");
  return {freeBytes, totalBytes};
}

void CudaRuntime::rawCopyIn(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // the synchronous copy runs on the legacy NULL stream, which waits for this (blocking) stream
  if (CUresult e = api_.cuMemcpyHtoD(dptr(dst), src, bytes)) raise("cuMemcpyHtoD_v2", e, "(" + std::to_string(bytes) + " bytes)");
}

void CudaRuntime::rawCopyOut(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // the kernels' errors surface here, named as the stream's, before the copy reads their output
  if (CUresult e = api_.cuStreamSynchronize(stream_)) raise("cuStreamSynchronize", e);
  if (CUresult e = api_.cuMemcpyDtoH(dst, dptr(src), bytes)) raise("cuMemcpyDtoH_v2", e, "(" + std::to_string(bytes) + " bytes)");
}

void CudaRuntime::rawFill(void* dst, uint8_t byte, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  if (CUresult e = api_.cuMemsetD8(dptr(dst), byte, bytes)) raise("cuMemsetD8_v2", e, "(" + std::to_string(bytes) + " bytes)");
}

void* CudaRuntime::rawAllocate(size_t bytes) {
  makeCurrent();
  CUdeviceptr p = 0;
  CUresult e = api_.cuMemAlloc(&p, bytes);
  if (e == CUDA_ERROR_OUT_OF_MEMORY) {
    fail(ErrorKind::OutOfMemory, name() + " device out of memory: cuMemAlloc_v2 of " + std::to_string(bytes) + " bytes failed: " + errorText(e));
  }
  if (e != CUDA_SUCCESS) raise("cuMemAlloc_v2", e, "(" + std::to_string(bytes) + " bytes)");
  if (!p) fail(ErrorKind::Runtime, "cuMemAlloc_v2 of " + std::to_string(bytes) + " bytes returned no memory");
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

void CudaRuntime::rawRelease(void* p) {
  CUresult e = CUDA_SUCCESS;
  try {
    makeCurrent();
    e = api_.cuMemFree(dptr(p));
  } catch (const std::exception& ex) {
    keepReleaseError(ex.what());
    return;
  }
  // a cuMemFree error (raised by release, which must not throw) is kept for the next synchronize
  if (e != CUDA_SUCCESS) keepReleaseError("cuMemFree_v2 failed: " + errorText(e));
}

std::shared_ptr<GpuRuntime> openCudaRuntime(const OpenOptions& options) {
  std::string name, tried;
  void* lib = openCudaLibrary(&name, &tried);
  if (!lib) fail(ErrorKind::Unsupported, "no CUDA runtime found: tried " + tried + " (set HCSP_CUDA_LIB to the library's path)");
  CudaApi api;
  bindSymbol(lib, name, "cuInit", api.cuInit);
  bindSymbol(lib, name, "cuDeviceGetCount", api.cuDeviceGetCount);
  bindSymbol(lib, name, "cuDeviceGet", api.cuDeviceGet);
  bindSymbol(lib, name, "cuDeviceGetName", api.cuDeviceGetName);
  bindSymbol(lib, name, "cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  bindSymbol(lib, name, "cuDeviceTotalMem_v2", api.cuDeviceTotalMem);
  bindSymbol(lib, name, "cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  bindSymbol(lib, name, "cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease);
  bindSymbol(lib, name, "cuCtxSetCurrent", api.cuCtxSetCurrent);
  bindSymbol(lib, name, "cuMemAlloc_v2", api.cuMemAlloc);
  bindSymbol(lib, name, "cuMemFree_v2", api.cuMemFree);
  bindSymbol(lib, name, "cuMemcpyHtoD_v2", api.cuMemcpyHtoD);
  bindSymbol(lib, name, "cuMemcpyDtoH_v2", api.cuMemcpyDtoH);
  bindSymbol(lib, name, "cuMemsetD8_v2", api.cuMemsetD8);
  bindSymbol(lib, name, "cuMemGetInfo_v2", api.cuMemGetInfo);
  bindSymbol(lib, name, "cuStreamCreate", api.cuStreamCreate);
  bindSymbol(lib, name, "cuStreamDestroy_v2", api.cuStreamDestroy);
  bindSymbol(lib, name, "cuStreamSynchronize", api.cuStreamSynchronize);
  bindSymbol(lib, name, "cuModuleLoadData", api.cuModuleLoadData);
  bindSymbol(lib, name, "cuModuleUnload", api.cuModuleUnload);
  bindSymbol(lib, name, "cuModuleGetFunction", api.cuModuleGetFunction);
  bindSymbol(lib, name, "cuLaunchKernel", api.cuLaunchKernel);
  bindSymbol(lib, name, "cuGetErrorString", api.cuGetErrorString);
  api.cuMemHostAlloc = reinterpret_cast<cuMemHostAlloc_t>(dlsym(lib, "cuMemHostAlloc"));
  api.cuMemFreeHost = reinterpret_cast<cuMemFreeHost_t>(dlsym(lib, "cuMemFreeHost"));
  api.cuMemcpyHtoDAsync = reinterpret_cast<cuMemcpyHtoDAsync_t>(dlsym(lib, "cuMemcpyHtoDAsync_v2"));
  return std::make_shared<CudaRuntime>(lib, name, api, options);
}

}  // namespace hcsp::gpu
