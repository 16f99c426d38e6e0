#include "hip_runtime.h"

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

using namespace hip;

namespace {

std::atomic<uint64_t> nextRuntimeId{1};
/** the HipRuntime whose device this thread has set current (hipSetDevice is per thread) */
thread_local uint64_t tlsCurrent = 0;

template <class F>
void bindSymbol(void* lib, const std::string& libName, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn) fail(ErrorKind::Unsupported, "the HIP runtime " + libName + " has no " + symbol + " (not a HIP runtime library?)");
}

}  // namespace

void* openHipLibrary(std::string* name, std::string* tried) {
  return openVendorLibrary("HCSP_HIP_LIB", {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}, name, tried);
}

std::string HipRuntime::errorText(hipError_t err) const {
  const char* s = api_.hipGetErrorString ? api_.hipGetErrorString(err) : nullptr;
  return std::string(s && *s ? s : "unknown HIP error") + " (code " + std::to_string(err) + ")";
}

void HipRuntime::raise(const char* call, hipError_t err, const std::string& context) const {
  fail(ErrorKind::Runtime, std::string(call) + " failed" + (context.empty() ? "" : " " + context) + ": " + errorText(err));
}

HipRuntime::HipRuntime(void* library, std::string libraryName, const HipApi& api, const OpenOptions& options)
    : library_(library), libraryName_(std::move(libraryName)), api_(api), device_(options.device), id_(nextRuntimeId++) {
  int count = 0;
  if (hipError_t e = api_.hipGetDeviceCount(&count)) raise("hipGetDeviceCount", e);
  if (options.device < 0 || options.device >= count) {
    fail(ErrorKind::Attr, "hip device " + std::to_string(options.device) + " does not exist: " + libraryName_ + " sees " + std::to_string(count) + " GPU" +
                              (count == 1 ? "" : "s"));
  }
  makeCurrent();

  char devName[256] = {0};
  if (hipError_t e = api_.hipDeviceGetName(devName, sizeof devName - 1, device_)) raise("hipDeviceGetName", e);
  PropsBuffer props;
  std::memset(&props, 0, sizeof props);
  const char* propsCall = api_.propsR0600 ? "hipGetDevicePropertiesR0600" : "hipGetDeviceProperties";
  if (hipError_t e = api_.hipGetDeviceProperties(&props, device_)) raise(propsCall, e);
  char archName[257] = {0};
  std::memcpy(archName, api_.propsR0600 ? props.r0600.gcnArchName : props.r0000.gcnArchName, 256);
  // "gfx942:sramecc+:xnack-": the code-object folder is the processor, the features follow ':'
  std::string full(archName);
  arch_ = full.substr(0, full.find(':'));
  if (arch_.rfind("gfx", 0) != 0 || arch_.size() < 4) {
    fail(ErrorKind::Runtime, std::string(propsCall) + " (" + libraryName_ + ") gave the architecture name '" + full + "', not a gfx target");
  }
  int cus = 0, warp = 0;
  if (hipError_t e = api_.hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device_)) raise("hipDeviceGetAttribute(MultiprocessorCount)", e);
  if (hipError_t e = api_.hipDeviceGetAttribute(&warp, hipDeviceAttributeWarpSize, device_)) raise("hipDeviceGetAttribute(WarpSize)", e);
  units_ = cus > 0 ? cus : 1;
  size_t freeBytes = 0, totalBytes = 0;
  if (hipError_t e = api_.hipMemGetInfo(&freeBytes, &totalBytes)) raise("hipMemGetInfo", e);
  describe_ = std::string(devName[0] ? devName : "AMD GPU") + " (" + full + ", " + std::to_string(cus) + " CUs, wavefront " + std::to_string(warp) + ", " +
              gibText(totalBytes) + ", " + libraryName_ + ")";

  if (hipError_t e = api_.hipStreamCreate(&stream_)) raise("hipStreamCreate", e);
  try {
    loadCodeObjects(options.codeObjects);
  } catch (...) {
    for (auto& o : objects_) {
      if (o.module) api_.hipModuleUnload(o.module);
    }
    api_.hipStreamDestroy(stream_);
    throw;
  }
}

HipRuntime::~HipRuntime() {
  try {
    makeCurrent();
  } catch (...) {
  }
  dropExtension();
  if (stream_) api_.hipStreamSynchronize(stream_);
  dropChecks();
  trimPool();
  for (auto& o : objects_) {
    if (o.module) api_.hipModuleUnload(o.module);
  }
  if (stream_) api_.hipStreamDestroy(stream_);
  // the library stays loaded: a GPU runtime is not unloaded once initialised
}

void HipRuntime::loadCodeObjects(const std::string& root) {
  for (CodeImage& image : readCodeObjects(root, "hsaco", "HIP")) {
    CodeObject o{std::move(image.file), std::move(image.image), nullptr};
    // the image stays alive with the module (hipModuleLoadData may keep referring to it)
    if (hipError_t e = api_.hipModuleLoadData(&o.module, o.image.data()))
      raise("hipModuleLoadData", e, "for " + (std::filesystem::path(root) / arch_ / o.file).string());
    objects_.push_back(std::move(o));
  }
}

void HipRuntime::makeCurrent() {
  if (tlsCurrent == id_) return;
  if (hipError_t e = api_.hipSetDevice(device_)) raise("hipSetDevice", e, "(device " + std::to_string(device_) + ")");
  tlsCurrent = id_;
}

hipFunction_t HipRuntime::function(const char* name) {
  return static_cast<hipFunction_t>(cachedFunction(name, [&]() -> void* {
    for (const auto& o : objects_) {
      hipFunction_t f = nullptr;
      hipError_t e = api_.hipModuleGetFunction(&f, o.module, name);
      if (e == hipSuccess && f) return f;
      if (e != hipSuccess && e != hipErrorNotFound) raise("hipModuleGetFunction", e, std::string("for kernel ") + name + " in " + o.file);
    }
    return nullptr;
  }));
}

void HipRuntime::launchByName(const char* name, int64_t threads, void** args) {
  if (threads <= 0) return;
  launchGrid(name, launchBlocks(threads), kBlock, args);
}

void HipRuntime::launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) {
  if (blocks <= 0) return;
  launchGrid(name, blocks, static_cast<unsigned>(blockThreads), args);
}

void HipRuntime::launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args) {
  makeCurrent();
  hipFunction_t f = function(name);
  hipError_t e = api_.hipModuleLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, blockThreads, 1, 1, 0, stream_, args, nullptr);
  if (e != hipSuccess) raise("hipModuleLaunchKernel", e, std::string("for kernel ") + name);
}

void HipRuntime::rawSynchronize() {
  makeCurrent();
  if (hipError_t e = api_.hipStreamSynchronize(stream_)) raise("hipStreamSynchronize", e);
  raiseReleaseError();
}

DeviceMemoryInfo HipRuntime::memoryInfo() {
  makeCurrent();
  size_t freeBytes = 0, totalBytes = 0;
  if (hipError_t e = api_.hipMemGetInfo(&freeBytes, &totalBytes)) raise("hipMemGetInfo", e, "(device " + std::to_string(device_) + ")");
  return {freeBytes, totalBytes};
}

void HipRuntime::rawCopyIn(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // hipMemcpy runs on the null stream, which waits for this (blocking) stream's work first
  if (hipError_t e = api_.hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice)) raise("hipMemcpy", e, "(host to device, " + std::to_string(bytes) + " bytes)");
}

void HipRuntime::rawCopyOut(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // the kernels' errors surface here, named as the stream's, before the copy reads their output
  if (hipError_t e = api_.hipStreamSynchronize(stream_)) raise("hipStreamSynchronize", e);
  if (hipError_t e = api_.hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost)) raise("hipMemcpy", e, "(device to host, " + std::to_string(bytes) + " bytes)");
}

void HipRuntime::rawFill(void* dst, uint8_t byte, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  if (hipError_t e = api_.hipMemset(dst, byte, bytes)) raise("hipMemset", e, "(" + std::to_string(bytes) + " bytes)");
}

void* HipRuntime::rawAllocate(size_t bytes) {
  makeCurrent();
  void* p = nullptr;
  hipError_t e = api_.hipMalloc(&p, bytes);
  if (e == hipErrorOutOfMemory) {
    fail(ErrorKind::OutOfMemory, name() + " device out of memory: hipMalloc of " + std::to_string(bytes) + " bytes failed: " + errorText(e));
  }
  if (e != hipSuccess) raise("hipMalloc", e, "(" + std::to_string(bytes) + " bytes)");
  if (!p) fail(ErrorKind::Runtime, "hipMalloc of " + std::to_string(bytes) + " bytes returned no memory");
  return p;
}

void HipRuntime::rawRelease(void* p) {
  hipError_t e = hipSuccess;
  try {
    makeCurrent();
    e = api_.hipFree(p);
  } catch (const std::exception& ex) {
    keepReleaseError(ex.what());
    return;
  }
  // a hipFree error (raised by release, which must not throw) is kept for the next synchronize
  if (e != hipSuccess) keepReleaseError("hipFree failed: " + errorText(e));
}

std::shared_ptr<GpuRuntime> openHipRuntime(const OpenOptions& options) {
  std::string name, tried;
  void* lib = openHipLibrary(&name, &tried);
  if (!lib) fail(ErrorKind::Unsupported, "no HIP runtime found: tried " + tried + " (set HCSP_HIP_LIB to the library's path)");
  HipApi api;
  bindSymbol(lib, name, "hipGetDeviceCount", api.hipGetDeviceCount);
  bindSymbol(lib, name, "hipSetDevice", api.hipSetDevice);
  bindSymbol(lib, name, "hipDeviceGetAttribute", api.hipDeviceGetAttribute);
  bindSymbol(lib, name, "hipDeviceGetName", api.hipDeviceGetName);
  // ROCm 6+: the versioned entry point of the R0600 layout; ROCm 5: the only one, R0000 layout
  api.hipGetDeviceProperties = reinterpret_cast<hipGetDeviceProperties_t>(dlsym(lib, "hipGetDevicePropertiesR0600"));
  api.propsR0600 = api.hipGetDeviceProperties != nullptr;
  if (!api.propsR0600) bindSymbol(lib, name, "hipGetDeviceProperties", api.hipGetDeviceProperties);
  bindSymbol(lib, name, "hipMalloc", api.hipMalloc);
  bindSymbol(lib, name, "hipFree", api.hipFree);
  bindSymbol(lib, name, "hipMemcpy", api.hipMemcpy);
  bindSymbol(lib, name, "hipMemset", api.hipMemset);
  bindSymbol(lib, name, "hipMemGetInfo", api.hipMemGetInfo);
  bindSymbol(lib, name, "hipStreamCreate", api.hipStreamCreate);
  bindSymbol(lib, name, "hipStreamDestroy", api.hipStreamDestroy);
  bindSymbol(lib, name, "hipStreamSynchronize", api.hipStreamSynchronize);
  bindSymbol(lib, name, "hipModuleLoadData", api.hipModuleLoadData);
  bindSymbol(lib, name, "hipModuleUnload", api.hipModuleUnload);
  bindSymbol(lib, name, "hipModuleGetFunction", api.hipModuleGetFunction);
  bindSymbol(lib, name, "hipModuleLaunchKernel", api.hipModuleLaunchKernel);
  bindSymbol(lib, name, "hipGetErrorString", api.hipGetErrorString);
  api.hipHostMalloc = reinterpret_cast<hipHostMalloc_t>(dlsym(lib, "hipHostMalloc"));
  api.hipHostFree = reinterpret_cast<hipHostFree_t>(dlsym(lib, "hipHostFree"));
  api.hipMemcpyAsync = reinterpret_cast<hipMemcpyAsync_t>(dlsym(lib, "hipMemcpyAsync"));
  return std::make_shared<HipRuntime>(lib, name, api, options);
}

}  // namespace hcsp::gpu
