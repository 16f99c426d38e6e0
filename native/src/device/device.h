// A device as the addon runs ops on it: its memory (a tensor's bytes live there, and its
// counters stand for the device's work), an op run by name from that device's own kernels,
// and a sync. Two kinds implement it: the host device (host/host_device.h: the C++ kernels of
// host/kernel_registry.h on the host's threads) and the GPU runtimes (gpu/gpu_runtime.h: the
// launchers of gpu/gpu_op_registry.h on a HIP, CUDA or emulated GPU). The addon holds one
// Device for a call (JsGpu::unwrapDevice: a GpuDevice, or the host device where JavaScript
// passes none) and asks it, never which kind it is. One virtual call per op; the kernels'
// loops run behind it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "../host/attrs.h"
#include "../host/kernel_registry.h"
#include "../host/memory.h"

namespace hcsp {

class Device : public Memory {
 public:
  /** "host", "hip", "cuda" or "emulated" */
  virtual std::string kind() const = 0;
  /** for people: e.g. "AMD Instinct MI308X (gfx942, 80 CUs)" */
  virtual std::string describe() const = 0;

  /** fails (Unsupported, naming the op and the device) where this device has no kernel for the op; called before any work */
  virtual void checkOp(const std::string& op, bool collective) const = 0;
  /** the op's kernels on inputs in port order (null: an absent port) -> outputs in port order; on a GPU, launched onto its stream */
  virtual Outputs runOp(const std::string& op, const Inputs& inputs, const Attrs& attrs, GemmMode gemm) = 0;
  /** a collective over every simulated rank at once, in lockstep: inputs[rank][port] -> outputs[rank][port] */
  virtual std::vector<Outputs> runCollective(const std::string& op, const std::vector<Inputs>& inputs, const Attrs& attrs, GemmMode gemm) = 0;

  /** waits for queued work and raises its errors; counted as a host sync */
  virtual void synchronize() = 0;
  /**
   * synchronize(), then any check the device's kernels made on their data (a GPU's device
   * checks, gpu/device_checks.h): the first failed one's error, naming its node. Called where
   * the queue's worker runs nothing else (a run's sync).
   */
  virtual void synchronizeChecked() { synchronize(); }
  /**
   * a one-shot run's end, before its outputs are handed out: the op's work done and its errors
   * raised (a GPU: synchronizeChecked(); the host device: nothing, its kernels returned done)
   */
  virtual void completeRun() = 0;

  /**
   * whether the op reads input `port` from a weight's packed panel when the weight's own bytes
   * were released after packing (the host device's exact GEMM: host/gemm/panels.h)
   */
  virtual bool readsPackedPanel(const std::string& op, size_t port, GemmMode gemm) const { return false; }
};

}  // namespace hcsp
