// The vendor GEMMs of a GPU device (GemmMode::Vendor): hipBLASLt on ROCm, cuBLASLt on NVIDIA,
// each library loaded at run time (implemented in blaslt.cc). The launchers of `linear` and
// `fp8LinearPtpc` (ops/gemm_ops.cc) call these when g.gemm == GemmMode::Vendor; the emulated
// runtime refuses vendor mode before a launcher runs, so these only ever see a real GPU.
// All pointers are device pointers (row-major, as the reference's tensors):
//   vendorLinearBf16:    y[rows, outF] (bf16) = x[rows, inF] (bf16) . w[outF, inF]^T (bf16), fp32 accumulation
//   vendorFp8LinearPtpc: y[rows, outF] (bf16) = (q[rows, inF] . qW[outF, inF]^T) * sx[rows] * sw[outF],
//                        q/qW fp8 e4m3 (fnuz: the e4m3fnuz encoding of gfx94x), sx per token, sw per channel (fp32)
// Each shape is planned once per device (descriptors, layouts, the heuristic's algorithm, kept
// until the device closes). They return false, having enqueued nothing, when the library has no
// algorithm for the shape: the caller runs the exact kernel instead (said once per shape on
// stderr and listed in vendorGemmStats). The results are the library's (not bit-exact with the
// reference order); errors raise through fail().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_runtime.h"

namespace hcsp::gpu {
[[nodiscard]] bool vendorLinearBf16(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y);
[[nodiscard]] bool vendorFp8LinearPtpc(GpuRuntime& rt, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw,
                                       int64_t outF, bool fnuz, uint16_t* y);

/** a GEMM shape the library has no algorithm for, in row-major terms: y[m, n] = x[m, k] . w[n, k]^T */
struct GemmFallback {
  std::string op;     // "linear" or "fp8LinearPtpc"
  int64_t m, n, k;    // rows, outF, inF
  std::string dtype;  // of x and w: "bf16", "fp8e4m3fnuz", "fp8e4m3fn"
};

/** what a device's vendor GEMMs have planned since it opened (all zero before the first, and on the emulated device) */
struct VendorGemmStats {
  int64_t plans = 0;             // shapes with a cached algorithm
  int64_t heuristicQueries = 0;  // calls of the library's heuristic (one per shape planned)
  std::vector<GemmFallback> fallbacks;
};
VendorGemmStats vendorGemmStats(GpuRuntime& rt);
}  // namespace hcsp::gpu
