// What a GPU device with code objects has (vendor_runtime.h's, for HIP and CUDA): a library
// opened at run time, the code objects of the device's architecture read from
// <codeObjects>/<arch>/*.<ext>, kernels found by name in them and cached, grid-stride launches of
// 256-thread blocks with grids capped per compute unit / multiprocessor (block launches take the
// kernel's grid), scratch memory counted by the Memory base, a release error kept for the next
// synchronize, and one extension slot per device (blaslt.cc's state). The vendor calls are
// vendor_runtime.h's, through each vendor's ABI table.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_runtime.h"

namespace hcsp::gpu {

/**
 * dlopen (RTLD_NOW | RTLD_LOCAL) of the first of `names` that loads, or of $envVar alone when set.
 * Returns the handle and sets *name, or returns nullptr with *tried listing what was tried.
 */
void* openVendorLibrary(const char* envVar, std::vector<std::string> names, std::string* name, std::string* tried);

/** "<bytes / 2^30 to one decimal> GiB" */
std::string gibText(size_t bytes);

class ModuleRuntime : public GpuRuntime {
 public:
  /** state another part of the addon keeps per device (blaslt.cc's handle and workspace), destroyed before the device */
  struct Extension {
    virtual ~Extension() = default;
  };

  bool hostVisible() const override { return false; }
  std::string describe() const override { return describe_; }
  std::string arch() const override { return arch_; }
  void runEmulated(const std::function<void()>& body) override;
  void runEmulatedBlocks(const char* name, int64_t blocks, int blockThreads, const std::function<void()>& body) override;

  /** device memory outside tensors (workspaces), counted against the limit as `what` */
  void* allocateScratch(size_t bytes, const std::string& what);
  void releaseScratch(void* p, size_t bytes);
  /** makes this device the calling thread's current one (once per thread) */
  virtual void makeCurrent() = 0;
  /** the device's stream, as the vendor's stream handle (hipStream_t, CUstream) */
  virtual void* streamHandle() const = 0;
  /** the extension slot and the lock its user holds while using it */
  std::mutex& extensionMutex() { return extensionMutex_; }
  std::unique_ptr<Extension>& extension() { return extension_; }

 protected:
  /** kernels' block: 256 threads (4 wavefronts of 64, 8 warps of 32; vendor.h's launch bounds) */
  static constexpr unsigned kBlock = 256;
  /** blocks per compute unit / multiprocessor at most: grid-stride kernels cover the rest */
  static constexpr int64_t kBlocksPerUnit = 32;

  struct CodeImage {
    std::string file;
    std::vector<char> image;
  };
  /**
   * the code objects <root>/<arch_>/<name>.<ext>, sorted by name, read; sets the folder and the file
   * list the errors name. `vendor` ("HIP", "CUDA") names them when there are none.
   */
  std::vector<CodeImage> readCodeObjects(const std::string& root, const char* ext, const char* vendor);
  /**
   * kernel `name`'s handle: the cached one, else find()'s (called under the cache's lock; null:
   * the kernel is in none of the code objects, which fails naming them)
   */
  void* cachedFunction(const char* name, const std::function<void*()>& find);
  /** blocks of kBlock threads for `threads` grid-stride threads, at most units_ * kBlocksPerUnit */
  int64_t launchBlocks(int64_t threads) const;
  /** keeps the first error of a release (which must not throw) for the next synchronize */
  void keepReleaseError(const std::string& message);
  /** raises the kept release error, if any, clearing it */
  void raiseReleaseError();
  /** destroys the extension (under its lock): first thing in a runtime's destructor */
  void dropExtension();

  std::string arch_;
  std::string describe_;
  /** compute units (HIP) or multiprocessors (CUDA), at least 1 */
  int units_ = 1;

 private:
  std::string folder_;
  std::vector<std::string> files_;
  std::mutex functionsMutex_;
  std::unordered_map<std::string, void*> functions_;
  std::mutex releaseMutex_;
  std::string releaseError_;
  std::mutex extensionMutex_;
  std::unique_ptr<Extension> extension_;
};

}  // namespace hcsp::gpu
