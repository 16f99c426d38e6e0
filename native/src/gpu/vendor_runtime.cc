#include "vendor_runtime.h"

#include <dlfcn.h>

#include <filesystem>

#include "../host/errors.h"
#include "cuda_runtime.h"
#include "hip_runtime.h"

namespace hcsp::gpu {

namespace {

std::atomic<uint64_t> nextRuntimeId{1};
/** the runtime whose device this thread has made current (hipSetDevice, cuCtxSetCurrent are per thread) */
thread_local uint64_t tlsCurrent = 0;

}  // namespace

void* VendorSymbols::find(const char* symbol) const { return dlsym(library, symbol); }

void VendorSymbols::missing(const char* symbol) const { fail(ErrorKind::Unsupported, what + " has no " + symbol + " (" + hint + ")"); }

template <class Abi>
std::string VendorRuntime<Abi>::errorText(Error err) const {
  const char* s = Abi::errorString(api_, err);
  return std::string(s && *s ? s : std::string("unknown ") + Abi::kLabel + " error") + " (code " + std::to_string(err) + ")";
}

template <class Abi>
void VendorRuntime<Abi>::raise(const char* call, Error err, const std::string& context) const {
  fail(ErrorKind::Runtime, std::string(call) + " failed" + (context.empty() ? "" : " " + context) + ": " + errorText(err));
}

template <class Abi>
VendorRuntime<Abi>::VendorRuntime(void* library, std::string libraryName, const Api& api, const OpenOptions& options)
    : library_(library), libraryName_(std::move(libraryName)), api_(api), ordinal_(options.device), id_(nextRuntimeId++) {
  constexpr const CallNames& N = Abi::kNames;
  if (Error e = Abi::init(api_)) raise(N.init, e);
  int count = 0;
  if (Error e = Abi::count(api_, &count)) raise(N.count, e);
  if (options.device < 0 || options.device >= count) {
    fail(ErrorKind::Attr, std::string(Abi::kKind) + " device " + std::to_string(options.device) + " does not exist: " + libraryName_ + " sees " +
                              std::to_string(count) + " GPU" + (count == 1 ? "" : "s"));
  }
  if (Error e = Abi::device(api_, options.device, &device_)) raise(N.device, e);
  if (Error e = Abi::retain(api_, device_, &context_)) raise(N.retain, e);
  try {
    makeCurrent();
    DeviceIdentity identity = Abi::identify(*this);
    arch_ = std::move(identity.arch);
    units_ = identity.units > 0 ? identity.units : 1;
    describe_ = std::move(identity.describe);
    if (Error e = Abi::streamCreate(api_, &stream_)) raise(N.streamCreate, e);
    loadCodeObjects(options.codeObjects);
  } catch (...) {
    releaseDevice();
    throw;
  }
}

template <class Abi>
void VendorRuntime<Abi>::releaseDevice() {
  for (auto& o : objects_) {
    if (o.module) Abi::moduleUnload(api_, o.module);
  }
  objects_.clear();
  if (stream_) Abi::streamDestroy(api_, stream_);
  stream_ = nullptr;
  Abi::release(api_, device_);
}

template <class Abi>
VendorRuntime<Abi>::~VendorRuntime() {
  try {
    makeCurrent();
  } catch (...) {
  }
  dropExtension();
  if (stream_) Abi::streamSync(api_, stream_);
  dropChecks();
  trimPool();
  releaseDevice();
  // the library stays loaded: a GPU runtime is not unloaded once initialised
}

template <class Abi>
void VendorRuntime<Abi>::loadCodeObjects(const std::string& root) {
  for (CodeImage& image : readCodeObjects(root, Abi::kCodeExt, Abi::kLabel)) {
    CodeObject o{std::move(image.file), std::move(image.image), nullptr};
    // the image stays alive with the module (the loader may keep referring to it)
    if (Error e = Abi::moduleLoad(api_, &o.module, o.image.data()))
      raise(Abi::kNames.moduleLoad, e, "for " + (std::filesystem::path(root) / arch_ / o.file).string());
    objects_.push_back(std::move(o));
  }
}

template <class Abi>
void VendorRuntime<Abi>::makeCurrent() {
  if (tlsCurrent == id_) return;
  if (Error e = Abi::setCurrent(api_, device_, context_)) raise(Abi::kNames.setCurrent, e, "(device " + std::to_string(ordinal_) + ")");
  tlsCurrent = id_;
}

template <class Abi>
typename Abi::Function VendorRuntime<Abi>::function(const char* name) {
  return static_cast<typename Abi::Function>(cachedFunction(name, [&]() -> void* {
    for (const auto& o : objects_) {
      typename Abi::Function f = nullptr;
      Error e = Abi::getFunction(api_, &f, o.module, name);
      if (e == Abi::kSuccess && f) return f;
      if (e != Abi::kSuccess && e != Abi::kNotFound) raise(Abi::kNames.getFunction, e, std::string("for kernel ") + name + " in " + o.file);
    }
    return nullptr;
  }));
}

template <class Abi>
void VendorRuntime<Abi>::launchByName(const char* name, int64_t threads, void** args) {
  if (threads <= 0) return;
  launchGrid(name, launchBlocks(threads), kBlock, args);
}

template <class Abi>
void VendorRuntime<Abi>::launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) {
  if (blocks <= 0) return;
  launchGrid(name, blocks, static_cast<unsigned>(blockThreads), args);
}

template <class Abi>
void VendorRuntime<Abi>::launchGrid(const char* name, int64_t blocks, unsigned blockThreads, void** args) {
  makeCurrent();
  typename Abi::Function f = function(name);
  if (Error e = Abi::launch(api_, f, static_cast<unsigned>(blocks), blockThreads, stream_, args))
    raise(Abi::kNames.launch, e, std::string("for kernel ") + name);
}

template <class Abi>
void VendorRuntime<Abi>::rawSynchronize() {
  makeCurrent();
  if (Error e = Abi::streamSync(api_, stream_)) raise(Abi::kNames.streamSync, e);
  raiseReleaseError();
}

template <class Abi>
DeviceMemoryInfo VendorRuntime<Abi>::memoryInfo() {
  makeCurrent();
  size_t freeBytes = 0, totalBytes = 0;
  if (Error e = Abi::memInfo(api_, &freeBytes, &totalBytes)) raise(Abi::kNames.memInfo, e, "(device " + std::to_string(ordinal_) + ")");
  return {freeBytes, totalBytes};
}

template <class Abi>
void VendorRuntime<Abi>::rawCopyIn(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // the synchronous copy runs on the null stream, which waits for this (blocking) stream's work first
  if (Error e = Abi::copyIn(api_, dst, src, bytes)) raise(Abi::kNames.copyIn, e, "(" + std::string(Abi::kCopyInWhat) + std::to_string(bytes) + " bytes)");
}

template <class Abi>
void VendorRuntime<Abi>::rawCopyOut(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  // the kernels' errors surface here, named as the stream's, before the copy reads their output
  if (Error e = Abi::streamSync(api_, stream_)) raise(Abi::kNames.streamSync, e);
  if (Error e = Abi::copyOut(api_, dst, src, bytes)) raise(Abi::kNames.copyOut, e, "(" + std::string(Abi::kCopyOutWhat) + std::to_string(bytes) + " bytes)");
}

template <class Abi>
void VendorRuntime<Abi>::rawFill(void* dst, uint8_t byte, size_t bytes) {
  if (bytes == 0) return;
  makeCurrent();
  if (Error e = Abi::fill(api_, dst, byte, bytes)) raise(Abi::kNames.fill, e, "(" + std::to_string(bytes) + " bytes)");
}

template <class Abi>
void* VendorRuntime<Abi>::rawAllocate(size_t bytes) {
  constexpr const CallNames& N = Abi::kNames;
  makeCurrent();
  void* p = nullptr;
  Error e = Abi::malloc(api_, &p, bytes);
  if (e == Abi::kOutOfMemory) {
    fail(ErrorKind::OutOfMemory, name() + " device out of memory: " + N.malloc + " of " + std::to_string(bytes) + " bytes failed: " + errorText(e));
  }
  if (e != Abi::kSuccess) raise(N.malloc, e, "(" + std::to_string(bytes) + " bytes)");
  if (!p) fail(ErrorKind::Runtime, std::string(N.malloc) + " of " + std::to_string(bytes) + " bytes returned no memory");
  return p;
}

template <class Abi>
void VendorRuntime<Abi>::rawRelease(void* p) {
  Error e = Abi::kSuccess;
  try {
    makeCurrent();
    e = Abi::free(api_, p);
  } catch (const std::exception& ex) {
    keepReleaseError(ex.what());
    return;
  }
  // a free's error (raised by release, which must not throw) is kept for the next synchronize
  if (e != Abi::kSuccess) keepReleaseError(std::string(Abi::kNames.free) + " failed: " + errorText(e));
}

template class VendorRuntime<HipAbi>;
template class VendorRuntime<CudaAbi>;

}  // namespace hcsp::gpu
