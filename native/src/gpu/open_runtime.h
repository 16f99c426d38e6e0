// Opens a GPU device by kind: "emulated", "hip" (device index, folder of gfx code objects)
// or "cuda" (device index, folder of cubins). Errors name what was tried.
#pragma once
#include <memory>
#include <string>

#include "gpu_runtime.h"

namespace hcsp::gpu {

struct OpenOptions {
  int device = 0;
  /** the folder holding <arch>/<family>.hsaco|.cubin (native/build/gpu by default) */
  std::string codeObjects;
  /** the ops' kernels: the reference-order ones unless asked for the production ones */
  KernelMode kernels = KernelMode::Exact;
};

std::shared_ptr<GpuRuntime> openRuntime(const std::string& kind, const OpenOptions& options);

}  // namespace hcsp::gpu
