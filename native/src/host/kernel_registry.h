// The host device's kernels, one per declared op (core's graph/ops), registered by their
// family files (kernels/<family>_kernels.cc) at load time and run by the host device
// (host_device.h). The addon lists them so the TypeScript side can check coverage against
// core's op registry.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attrs.h"
#include "tensor.h"

namespace hcsp {

class ThreadPool;

/**
 * How a GEMM is computed: the reference's k order (bit-exact), OpenBLAS on the host device,
 * or the GPU vendor's BLASLt (hipBLASLt / cuBLASLt) on a GPU device (other orders): Vendor lets
 * the library choose per shape (M included), VendorInvariant pins one algorithm per (N, K,
 * dtype) for every M, so a row's bits do not depend on how many rows the GEMM has (gpu/blaslt.h).
 */
enum class GemmMode { Exact, Blas, Vendor, VendorInvariant };

/** the mode's name as the addon and the CLI spell it */
inline const char* gemmModeName(GemmMode m) {
  switch (m) {
    case GemmMode::Exact:
      return "exact";
    case GemmMode::Blas:
      return "blas";
    case GemmMode::Vendor:
      return "vendor";
    case GemmMode::VendorInvariant:
      return "vendor-invariant";
  }
  return "?";
}

struct KernelContext {
  const Attrs& attrs;
  GemmMode gemm;
  ThreadPool& pool;
};

/** inputs in the op's port order (null = absent port) -> outputs in port order (null = absent) */
using Inputs = std::vector<TensorPtr>;
using Outputs = std::vector<TensorPtr>;
using Kernel = std::function<Outputs(const Inputs&, const KernelContext&)>;
/** a collective over every rank at once, in lockstep: inputs[rank][port] -> outputs[rank][port] */
using CollectiveKernel = std::function<std::vector<Outputs>(const std::vector<Inputs>&, const KernelContext&)>;

void registerKernel(const char* op, Kernel kernel);
void registerCollectiveKernel(const char* op, CollectiveKernel kernel);
const Kernel& findKernel(const std::string& op);
const CollectiveKernel& findCollectiveKernel(const std::string& op);
std::vector<std::string> kernelNames();
std::vector<std::string> collectiveKernelNames();

struct KernelRegistrar {
  KernelRegistrar(const char* op, Kernel kernel) { registerKernel(op, std::move(kernel)); }
  KernelRegistrar(const char* op, CollectiveKernel kernel, bool) { registerCollectiveKernel(op, std::move(kernel)); }
};

}  // namespace hcsp

#define HCSP_KERNEL(op, fn) static ::hcsp::KernelRegistrar hcspKernel_##op(#op, ::hcsp::Kernel(fn))
#define HCSP_COLLECTIVE_KERNEL(op, fn) static ::hcsp::KernelRegistrar hcspCollective_##op(#op, ::hcsp::CollectiveKernel(fn), true)
