// The emulated GPU: host memory that is not host-visible to the graph loop (every byte goes
// through copyIn/copyOut, as on a GPU), kernels run by the host's threads.
#pragma once
#include <memory>

#include "gpu_runtime.h"

namespace hcsp::gpu {

std::shared_ptr<GpuRuntime> openEmulatedRuntime();

}  // namespace hcsp::gpu
