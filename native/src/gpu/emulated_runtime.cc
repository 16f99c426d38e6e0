#include "emulated_runtime.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "../host/errors.h"
#include "../host/thread_pool.h"
#include "emulated_blocks.h"

namespace hcsp::gpu {

thread_local int64_t emulatedThreadId = 0;
thread_local int64_t emulatedThreadCount = 1;

namespace {

class EmulatedRuntime : public GpuRuntime {
 public:
  ~EmulatedRuntime() override {
    dropChecks();
    trimPool();
  }
  std::string name() const override { return "emulated"; }
  std::string kind() const override { return "emulated"; }
  std::string describe() const override { return "the GPU kernel sources compiled for the host, on " + std::to_string(defaultPool().size()) + " threads"; }
  std::string arch() const override { return "host"; }
  // the graph loop must copy, as it would with a GPU's memory
  bool hostVisible() const override { return false; }
  void rawCopyIn(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void rawCopyOut(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void rawFill(void* dst, uint8_t byte, size_t bytes) override { std::memset(dst, byte, bytes); }

  void launchByName(const char* name, int64_t, void**) override {
    fail(ErrorKind::Runtime, std::string("emulated runtime: kernel ") + name + " must be called, not launched by name");
  }
  void launchBlocksByName(const char* name, int64_t, int, void**) override {
    fail(ErrorKind::Runtime, std::string("emulated runtime: kernel ") + name + " must be called, not launched by name");
  }
  void runEmulatedBlocks(const char* name, int64_t blocks, int blockThreads, const std::function<void()>& body) override {
    runBlocksEmulated(name, blocks, blockThreads, body);
  }

  void runEmulated(const std::function<void()>& body) override {
    const int64_t threads = defaultPool().size();
    defaultPool().parallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; t++) {
        emulatedThreadId = t;
        emulatedThreadCount = threads;
        body();
      }
      emulatedThreadId = 0;
      emulatedThreadCount = 1;
    });
  }

  void rawSynchronize() override {}

  // its memory is the host's: MemAvailable (what the kernel can give without swapping), else the free pages
  DeviceMemoryInfo memoryInfo() override {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    uint64_t freeBytes = static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
      if (line.rfind("MemAvailable:", 0) == 0) {
        freeBytes = std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;  // "MemAvailable:   123456 kB"
        break;
      }
    }
    return {freeBytes, static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page};
  }

 protected:
  void* rawAllocate(size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) fail(ErrorKind::OutOfMemory, "emulated device out of memory: the system refused " + std::to_string(bytes) + " bytes");
    return p;
  }
  void rawRelease(void* p) override { std::free(p); }
};

}  // namespace

std::shared_ptr<GpuRuntime> openEmulatedRuntime() { return std::make_shared<EmulatedRuntime>(); }

}  // namespace hcsp::gpu
