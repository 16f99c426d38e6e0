// The GPU devices' ops: for each declared op a launcher (ops/<family>_ops.cc) that checks
// shapes and attributes as the host kernel does, allocates its outputs in the GPU's memory
// and launches the family's kernels (kernels/<family>.cu). The same launchers serve HIP,
// CUDA and the emulated runtime.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../host/kernel_registry.h"
#include "gpu_runtime.h"

namespace hcsp::gpu {

struct GpuContext {
  GpuRuntime& rt;
  std::shared_ptr<GpuRuntime> runtime;
  const Attrs& attrs;
  GemmMode gemm;
  /**
   * rows per block (64 threads each) of a row-per-group block kernel (reduce.h) over `rows`
   * row groups: HCSP_GPU_BLOCK_ROWS (1-4) where set, so that a test can hold a kernel to the
   * same bits under each block size, else hcspRowsPerBlock's choice
   */
  int blockRows(int64_t rows) const;
  /** the production kernels (KernelMode::Fast) rather than the reference-order ones */
  bool fastKernels() const { return rt.kernels() == KernelMode::Fast; }
  /** an output or scratch tensor in this GPU's memory that the op's kernels write whole before reading */
  TensorPtr alloc(DType dtype, Shape shape) const { return std::make_shared<Tensor>(dtype, std::move(shape), runtime, Init::Uninitialized); }
  /** one that starts at zero (an accumulator, a list filled in part) */
  TensorPtr allocZeroed(DType dtype, Shape shape) const { return std::make_shared<Tensor>(dtype, std::move(shape), runtime); }
};

using GpuOp = std::function<Outputs(const Inputs&, const GpuContext&)>;
/** a collective over ranks simulated on this one GPU: inputs[rank][port] -> outputs[rank][port] */
using GpuCollectiveOp = std::function<std::vector<Outputs>(const std::vector<Inputs>&, const GpuContext&)>;

void registerGpuOp(const char* op, GpuOp fn);
void registerGpuCollectiveOp(const char* op, GpuCollectiveOp fn);
const GpuOp& findGpuOp(const std::string& op);
const GpuCollectiveOp& findGpuCollectiveOp(const std::string& op);
std::vector<std::string> gpuOpNames();
std::vector<std::string> gpuCollectiveOpNames();

struct GpuOpRegistrar {
  GpuOpRegistrar(const char* op, GpuOp fn) { registerGpuOp(op, std::move(fn)); }
  GpuOpRegistrar(const char* op, GpuCollectiveOp fn, bool) { registerGpuCollectiveOp(op, std::move(fn)); }
};

}  // namespace hcsp::gpu

#define HCSP_GPU_OP(op, fn) static ::hcsp::gpu::GpuOpRegistrar hcspGpuOp_##op(#op, ::hcsp::gpu::GpuOp(fn))
#define HCSP_GPU_COLLECTIVE_OP(op, fn) static ::hcsp::gpu::GpuOpRegistrar hcspGpuCollective_##op(#op, ::hcsp::gpu::GpuCollectiveOp(fn), true)
