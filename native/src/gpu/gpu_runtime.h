// A GPU as the native backend sees it: its memory (allocations counted and limited, as the
// host device's), kernel launches by name from the code objects built for it, and a stream
// to synchronize. Implementations: hip_runtime.cc (ROCm, libamdhip64 loaded at run time),
// cuda_runtime.cc (NVIDIA, libcuda loaded at run time) and emulated_runtime.cc (the kernel
// sources compiled for the host and run on its threads: the kernels' arithmetic checked on a
// machine without a GPU, through the same launchers and memory accounting).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "../host/memory.h"
#include "device_checks.h"

namespace hcsp::gpu {

/** a device's memory as its runtime reports it now */
struct DeviceMemoryInfo {
  uint64_t freeBytes;
  uint64_t totalBytes;
};

class GpuRuntime : public Memory {
 public:
  /** "hip", "cuda" or "emulated" */
  virtual std::string kind() const = 0;
  /** e.g. "AMD Instinct MI308X (gfx942, 80 CUs)" */
  virtual std::string describe() const = 0;
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
  /** runs an emulated kernel on the host's threads (emulated runtime only) */
  virtual void runEmulated(const std::function<void()>& body) = 0;
  /** waits for queued work; raises its errors (counted: a host sync) */
  void synchronize() {
    countSync();
    rawSynchronize();
  }
  /**
   * synchronize(), then the device checks' verdict (device_checks.h): the first failed check's
   * error, naming its node. Called where the queue's worker runs nothing else (a run's sync).
   */
  void synchronizeChecked() {
    try {
      synchronize();
    } catch (...) {
      checks_.drop(*this);
      throw;
    }
    checks_.raiseFirst(*this);
  }
  /** slots for a check on data by the running node's kernels (DeviceChecks::add) */
  unsigned long long* deviceCheck(const std::string& op, int64_t positions, int slots, DeviceChecks::Raise raise) {
    return checks_.add(*this, op, positions, slots, std::move(raise));
  }

 protected:
  virtual void rawSynchronize() = 0;
  /** a device going away: checks never synced give their slots back (first in a runtime's destructor, before trimPool) */
  void dropChecks() { checks_.drop(*this); }

 private:
  DeviceChecks checks_;
};

namespace detail {
template <class Tuple, size_t... I>
void launchTuple(GpuRuntime& rt, const char* name, int64_t threads, Tuple& t, std::index_sequence<I...>) {
  void* argv[] = {static_cast<void*>(&std::get<I>(t))..., nullptr};
  rt.launchByName(name, threads, argv);
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
  detail::launchTuple(rt, name, threads, typed, std::index_sequence_for<P...>{});
}

}  // namespace hcsp::gpu

/** HCSP_LAUNCH(rt, hcsp_add_bf16, n, a, b, y, n): the kernel by its own name, both ways */
#define HCSP_LAUNCH(rt, kernel, threads, ...) ::hcsp::gpu::launch(rt, #kernel, &kernel, threads, __VA_ARGS__)
