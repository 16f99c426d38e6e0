// The host device: the C++ kernels of kernel_registry.h, each op one task on the host's
// thread pool (counted as one launch), in the host's own memory (64-byte aligned blocks). Its
// ops return with their results computed, so a sync only counts itself. Its exact GEMM reads
// a weight from the panels packForGemm made (gemm/linear.h), even after the weight's own
// bytes were released.
#pragma once
#include <memory>

#include "../device/device.h"

namespace hcsp {

/** the process's host device; hostMemory() (memory.h) is the same object */
const std::shared_ptr<Device>& hostDevice();

}  // namespace hcsp
