// The `ties` attribute of moeRoute and qsaSelect (core numerics/topkTies.ts): 'lower-index'
// (absent) or 'torch-cpu' (numerics/torch_cpu_topk.h); anything else fails naming the value.
#pragma once
#include <string>

#include "../host/kernels/kernel_args.h"

namespace hcsp::ops {

/** true for ties=torch-cpu, false for 'lower-index' or absent */
inline bool checkTorchCpuTies(const Attrs& attrs, const std::string& op) {
  const std::string ties = attrs.string("ties", "lower-index");
  if (ties != "lower-index" && ties != "torch-cpu") fail(ErrorKind::Attr, op + ": ties '" + ties + "' must be 'lower-index' or 'torch-cpu'");
  return ties == "torch-cpu";
}

/** the GPU launchers' refusal (the TS backend refuses such a graph at preparation already) */
inline void refuseTorchCpuTiesOnGpu(bool torchCpuTies, const std::string& op) {
  if (torchCpuTies) fail(ErrorKind::Attr, op + " ties=torch-cpu runs on cpu and the host device; the GPU kernels have only the 'lower-index' rule");
}

}  // namespace hcsp::ops
