#include "host_device.h"

#include <cstdlib>
#include <cstring>

#include "cpu_features.h"
#include "errors.h"
#include "thread_pool.h"

namespace hcsp {

namespace {

class HostDevice final : public Device {
 public:
  std::string name() const override { return "host"; }
  bool hostVisible() const override { return true; }
  std::string kind() const override { return "host"; }
  std::string describe() const override {
    return std::string("the host's CPU (") + isaName(gemmIsa()) + " GEMM tiles, " + std::to_string(defaultPool().size()) + " threads)";
  }

  void checkOp(const std::string& op, bool collective) const override { collective ? (void)findCollectiveKernel(op) : (void)findKernel(op); }
  Outputs runOp(const std::string& op, const Inputs& inputs, const Attrs& attrs, GemmMode gemm) override {
    countLaunch();
    return findKernel(op)(inputs, KernelContext{attrs, gemm, defaultPool()});
  }
  std::vector<Outputs> runCollective(const std::string& op, const std::vector<Inputs>& inputs, const Attrs& attrs, GemmMode gemm) override {
    countLaunch();
    return findCollectiveKernel(op)(inputs, KernelContext{attrs, gemm, defaultPool()});
  }

  void synchronize() override { countSync(); }
  void completeRun() override {}

  /** linear's w and fp8LinearPtpc's qW, in the exact GEMM (gemm/linear.h: GemmWeightKind) */
  bool readsPackedPanel(const std::string& op, size_t port, GemmMode gemm) const override {
    return gemm == GemmMode::Exact && ((op == "linear" && port == 1) || (op == "fp8LinearPtpc" && port == 2));
  }

 protected:
  void rawCopyIn(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void rawCopyOut(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void rawFill(void* dst, uint8_t byte, size_t bytes) override { std::memset(dst, byte, bytes); }
  void* rawAllocate(size_t bytes) override {
    // whole cache lines: aligned AVX-512 loads, no false sharing between tensors
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) fail(ErrorKind::OutOfMemory, "host device out of memory: the system refused " + std::to_string(bytes) + " bytes");
    return p;
  }
  void rawRelease(void* p) override { std::free(p); }
};

}  // namespace

const std::shared_ptr<Device>& hostDevice() {
  static const std::shared_ptr<Device> device = std::make_shared<HostDevice>();
  return device;
}

const std::shared_ptr<Memory>& hostMemory() {
  static const std::shared_ptr<Memory> memory = hostDevice();
  return memory;
}

}  // namespace hcsp
