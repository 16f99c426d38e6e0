#include "gpu_runtime.h"

#include "gpu_op_registry.h"

namespace hcsp::gpu {

void GpuRuntime::checkOp(const std::string& op, bool collective) const { collective ? (void)findGpuCollectiveOp(op) : (void)findGpuOp(op); }

Outputs GpuRuntime::runOp(const std::string& op, const Inputs& inputs, const Attrs& attrs, GemmMode gemm) {
  return findGpuOp(op)(inputs, GpuContext{*this, shared_from_this(), attrs, gemm});
}

std::vector<Outputs> GpuRuntime::runCollective(const std::string& op, const std::vector<Inputs>& inputs, const Attrs& attrs, GemmMode gemm) {
  return findGpuCollectiveOp(op)(inputs, GpuContext{*this, shared_from_this(), attrs, gemm});
}

}  // namespace hcsp::gpu
