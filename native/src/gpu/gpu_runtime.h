// A GPU as the native backend sees it: a Device (device/device.h: its memory, allocations
// counted and limited as the host device's; its ops, the launchers of gpu_op_registry.h; a
// stream to synchronize) that launches kernels by name from the code objects built for it.
// Implementations: vendor_runtime.h (ROCm and NVIDIA: one runtime over the HIP and CUDA ABI
// tables of hip_runtime.h and cuda_runtime.h, libraries loaded at run time) and
// emulated_runtime.cc (the kernel sources compiled for the host and run on its threads: the
// kernels' arithmetic checked on a machine without a GPU, through the same launchers and
// memory accounting).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../device/device.h"
#include "../host/errors.h"
#include "../host/memory.h"
#include "device_checks.h"
#include "kernel_fallbacks.h"

namespace hcsp::gpu {

/**
 * Which kernels a GPU op launches. Exact: the reference-order kernels, bit-exact with the CPU
 * reference (the debugging path). Fast: the production algorithms (chunked GatedDeltaNet,
 * tiled attention, grouped MoE), which reorder long sums and are compared with the reference
 * within their declared tolerance. An op with one kernel launches it in both modes.
 */
enum class KernelMode { Exact, Fast };

/** a device's memory as its runtime reports it now */
struct DeviceMemoryInfo {
  uint64_t freeBytes;
  uint64_t totalBytes;
};

class GpuRuntime : public Device, public std::enable_shared_from_this<GpuRuntime> {
 public:
  /** the code-object target: gfx942, sm_90, host */
  virtual std::string arch() const = 0;
  bool emulated() const { return kind() == "emulated"; }
  /** free and total memory of the device now (hipMemGetInfo, cuMemGetInfo_v2; the host's for the emulated device) */
  virtual DeviceMemoryInfo memoryInfo() = 0;

  /**
   * Launches kernel `name` over `threads` grid-stride threads (the runtime picks the grid);
   * `args` are the addresses of its arguments in order (hipModuleLaunchKernel's kernelParams).
   * Errors name the call and the kernel.
   */
  virtual void launchByName(const char* name, int64_t threads, void** args) = 0;
  /**
   * Launches block kernel `name` (vendor.h) as `blocks` blocks of `blockThreads` threads
   * (checked by launchBlocks below); `args` as launchByName's. Errors name the call and the kernel.
   */
  virtual void launchBlocksByName(const char* name, int64_t blocks, int blockThreads, void** args) = 0;
  /** runs an emulated kernel on the host's threads (emulated runtime only) */
  virtual void runEmulated(const std::function<void()>& body) = 0;
  /** runs an emulated block kernel: every thread of every block runs body (emulated runtime only; emulated_blocks.h) */
  virtual void runEmulatedBlocks(const char* name, int64_t blocks, int blockThreads, const std::function<void()>& body) = 0;
  /** the op's launcher from gpu_op_registry.h, or an Unsupported error naming the op (gpu_runtime.cc) */
  void checkOp(const std::string& op, bool collective) const override;
  /** the op's launcher: its kernels launched onto this GPU's stream (gpu_runtime.cc) */
  Outputs runOp(const std::string& op, const Inputs& inputs, const Attrs& attrs, GemmMode gemm) override;
  /** the collective's launcher, every rank simulated on this one GPU (gpu_runtime.cc) */
  std::vector<Outputs> runCollective(const std::string& op, const std::vector<Inputs>& inputs, const Attrs& attrs, GemmMode gemm) override;
  /** waits for the stream; raises its errors (counted: a host sync) */
  void synchronize() final {
    countSync();
    rawSynchronize();
  }
  /** synchronize(), then the device checks' verdict (device_checks.h): the first failed check's error, naming its node */
  void synchronizeChecked() final {
    try {
      synchronize();
    } catch (...) {
      checks_.drop(*this);
      throw;
    }
    checks_.raiseFirst(*this);
  }
  /** the op's kernels were only queued: the run waits for them, and their checks, before handing out its outputs */
  void completeRun() final { synchronizeChecked(); }
  /** which kernels this device's ops launch (chosen when it is opened: OpenOptions::kernels) */
  KernelMode kernels() const { return kernels_; }
  void setKernels(KernelMode mode) { kernels_ = mode; }
  /** slots for a check on data by the running node's kernels (DeviceChecks::add) */
  unsigned long long* deviceCheck(const std::string& op, int64_t positions, int slots, DeviceChecks::Raise raise) {
    return checks_.add(*this, op, positions, slots, std::move(raise));
  }
  /** a fast-kernel op that runs its exact kernel here, and why (said once on stderr: kernel_fallbacks.h) */
  void exactKernelFor(const std::string& op, const std::string& reason) { fallbacks_.note(op, reason, kind()); }
  const std::vector<KernelFallback>& kernelFallbacks() const { return fallbacks_.list(); }

 protected:
  virtual void rawSynchronize() = 0;
  /** a device going away: checks never synced give their slots back (first in a runtime's destructor, before trimPool) */
  void dropChecks() { checks_.drop(*this); }

 private:
  DeviceChecks checks_;
  KernelFallbacks fallbacks_;
  KernelMode kernels_ = KernelMode::Exact;
};

namespace detail {
/** launch(argv): the addresses of the tuple's elements in order, null-terminated */
template <class Tuple, class Launch, size_t... I>
void launchTuple(Tuple& t, const Launch& launch, std::index_sequence<I...>) {
  void* argv[] = {static_cast<void*>(&std::get<I>(t))..., nullptr};
  launch(argv);
}
/** a block launch's grid and block as launchBlocks documents them, else an Attr error naming the kernel */
inline void checkBlockLaunch(const char* name, int64_t blocks, int blockThreads) {
  if (blockThreads < 64 || blockThreads > 256 || blockThreads % 64 != 0) {
    fail(ErrorKind::Attr,
         std::string("kernel ") + name + ": a block of " + std::to_string(blockThreads) + " threads (a block launch takes 64, 128, 192 or 256)");
  }
  if (blocks < 0 || blocks > INT32_MAX)
    fail(ErrorKind::Attr, std::string("kernel ") + name + ": a grid of " + std::to_string(blocks) + " blocks (at most 2^31 - 1)");
}
}  // namespace detail

/**
 * One kernel launch: `fn` is the kernel as compiled into this addon (the emulated runtime
 * calls it), `name` the symbol a GPU runtime looks up in its code object. The arguments are
 * converted to the kernel's parameter types first, so the bytes a GPU receives are exactly
 * those the kernel declares.
 */
template <class... P, class... A>
void launch(GpuRuntime& rt, const char* name, void (*fn)(P...), int64_t threads, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  std::tuple<P...> typed(static_cast<P>(std::forward<A>(args))...);
  if (threads <= 0 || rt.dryRun()) return;
  rt.countLaunch();
  if (rt.emulated()) {
    rt.runEmulated([&] { std::apply(fn, typed); });
    return;
  }
  detail::launchTuple(typed, [&](void** argv) { rt.launchByName(name, threads, argv); }, std::index_sequence_for<P...>{});
}

/**
 * One launch of a block kernel (vendor.h): `blocks` blocks (at most 2^31 - 1; none: nothing
 * runs) of `blockThreads` threads, a multiple of 64 up to 256 (whole CDNA wavefronts, whole
 * pairs of NVIDIA warps, within HCSP_GLOBAL's launch bounds). As launch() otherwise.
 */
template <class... P, class... A>
void launchBlocks(GpuRuntime& rt, const char* name, void (*fn)(P...), int64_t blocks, int blockThreads, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  detail::checkBlockLaunch(name, blocks, blockThreads);
  std::tuple<P...> typed(static_cast<P>(std::forward<A>(args))...);
  if (blocks == 0 || rt.dryRun()) return;
  rt.countLaunch();
  if (rt.emulated()) {
    rt.runEmulatedBlocks(name, blocks, blockThreads, [&] { std::apply(fn, typed); });
    return;
  }
  detail::launchTuple(typed, [&](void** argv) { rt.launchBlocksByName(name, blocks, blockThreads, argv); }, std::index_sequence_for<P...>{});
}

}  // namespace hcsp::gpu

/** HCSP_LAUNCH(rt, hcsp_add_bf16, n, a, b, y, n): the kernel by its own name, both ways */
#define HCSP_LAUNCH(rt, kernel, threads, ...) ::hcsp::gpu::launch(rt, #kernel, &kernel, threads, __VA_ARGS__)
/** HCSP_LAUNCH_BLOCKS(rt, hcsp_canonical_sumsq_bf16, blocks, 256, x, out, rows, n): a block kernel, both ways */
#define HCSP_LAUNCH_BLOCKS(rt, kernel, blocks, blockThreads, ...) ::hcsp::gpu::launchBlocks(rt, #kernel, &kernel, blocks, blockThreads, __VA_ARGS__)
