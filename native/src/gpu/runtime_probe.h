// Finds a GPU runtime library at run time (dlopen), the way the native backend loads every
// vendor library: HIP (libamdhip64, ROCm 7, 6, then Debian's 5) or CUDA (the driver, libcuda), with an
// environment override (HCSP_HIP_LIB, HCSP_CUDA_LIB). Reports what it tried when none loads.
#pragma once
#include <string>

namespace hcsp::gpu {

struct RuntimeProbe {
  bool found;
  std::string library;
  /** devices the runtime reports (0 when it loads but sees none) */
  int devices;
  /** what was tried and why each failed, or the runtime's error */
  std::string detail;
};

/** kind: "hip" or "cuda" */
RuntimeProbe probeRuntime(const std::string& kind);

}  // namespace hcsp::gpu
