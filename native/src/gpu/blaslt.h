// The vendor GEMMs of a GPU device (GemmMode::Vendor, VendorInvariant): hipBLASLt on ROCm, cuBLASLt on NVIDIA,
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
//
// rowInvariant (GemmMode::VendorInvariant): one algorithm per (op, N = outF, K = inF, dtype),
// chosen once, from the heuristic's candidates for a fixed representative row count
// (kInvariantPlanRows, whatever M the first call has: the choice never depends on which M came
// first), refusing candidates whose k partition can depend on M (cuBLASLt: SPLITK_NUM > 1 or a
// reduction scheme; hipBLASLt: any that needs workspace, the split-k / stream-K buffers, and
// the uniform summation order requested where the library has it). Every M then runs that
// algorithm: a row's sum is the same kernel's tile loop over the same k, so y's row r has the
// same bits on T rows and on T/tp. Each new M is checked (cuBLASLt: cublasLtMatmulAlgoCheck;
// hipBLASLt: the matmul's own status) and one the algorithm cannot run is an error naming the
// shape, never another algorithm. A (N, K) the library has no such algorithm for runs the
// exact kernel for every M (row-invariant too), said once as for vendor mode.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_runtime.h"

namespace hcsp::gpu {
/** the row count the row-invariant plans are chosen for (a Flash-Next prefill's T) */
constexpr int64_t kInvariantPlanRows = 4096;
/** how many of the heuristic's candidates a row-invariant plan looks through */
constexpr int kInvariantCandidates = 8;

[[nodiscard]] bool vendorLinearBf16(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y,
                                    bool rowInvariant);
[[nodiscard]] bool vendorFp8LinearPtpc(GpuRuntime& rt, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw,
                                       int64_t outF, bool fnuz, uint16_t* y, bool rowInvariant);

/** a GEMM shape the library has no algorithm for, in row-major terms: y[m, n] = x[m, k] . w[n, k]^T */
struct GemmFallback {
  std::string op;     // "linear" or "fp8LinearPtpc"
  int64_t m, n, k;    // rows, outF, inF
  std::string dtype;  // of x and w: "bf16", "fp8e4m3fnuz", "fp8e4m3fn"
};

/** what a device's vendor GEMMs have planned since it opened (all zero before the first, and on the emulated device) */
struct VendorGemmStats {
  int64_t plans = 0;             // shapes with a cached algorithm (a row-invariant plan counts once, for all its M)
  int64_t heuristicQueries = 0;  // calls of the library's heuristic (one per shape planned)
  std::vector<GemmFallback> fallbacks;
  int64_t invariantPlans = 0;      // row-invariant plans with an algorithm
  int64_t invariantRowCounts = 0;  // (plan, M) pairs checked and run by them
  int64_t refusedCandidates = 0;   // heuristic candidates a row-invariant plan refused (split-k, stream-K, workspace)
};
VendorGemmStats vendorGemmStats(GpuRuntime& rt);
}  // namespace hcsp::gpu
