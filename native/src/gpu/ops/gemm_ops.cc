// Launchers of the GEMMs on the GPU devices, with the checks and messages the host kernels
// share (ops/gemm_checks.h): `linear` and `fp8LinearPtpc`.
// GemmMode::Exact runs the reference-order kernels (kernels/gemm.cu, bf16 ones tiled in shared
// memory; bit-exact with the CPU reference); GemmMode::Vendor the vendor's BLASLt (blaslt.h: hipBLASLt / cuBLASLt, their own
// orders; the emulated device never gets this mode); GemmMode::VendorInvariant the same libraries
// with one algorithm per (N, K, dtype) for every row count (blaslt.h). The grouped GEMM (the MoE's
// experts) is the exact kernel in every mode: its row count is on the device.
#include <string>

#include "../../host/kernels/kernel_args.h"
#include "../../host/fp8_format.h"
#include "../../ops/gemm_checks.h"
#include "../blaslt.h"
#include "../gpu_op_registry.h"
#include "../kernels/gemm.h"

namespace hcsp::gpu {

namespace {

[[noreturn]] void noGemm(const char* op, GemmMode m) {
  fail(ErrorKind::Unsupported, std::string(op) + ": the GPU devices have no '" + gemmModeName(m) + "' GEMM (they have: vendor, vendor-invariant, exact)");
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

namespace {

/**
 * The tiled kernels' block: given, else the fewest row groups of 16 threads (4 rows each, so 16
 * rows per 64 threads) that cover `rows`, up to 256 threads: a GEMM of a few rows (decode, a
 * test's) stages and computes no more rows of zeros than a 64-thread block's 16.
 */
int gemmBlockThreads(int64_t rows, int blockThreads) {
  if (blockThreads != 0) return blockThreads;
  const int64_t quarters = (rows + HCSP_GEMM_TILE_M(64) - 1) / HCSP_GEMM_TILE_M(64);
  return static_cast<int>(quarters < 4 ? quarters * 64 : 256);
}

/** one block per tile unless given (a grid past 2^31 - 1 blocks loops in the kernel) */
int64_t gemmBlocks(int64_t rows, int64_t outF, int blockThreads, int64_t blocks) {
  if (blocks != 0) return blocks;
  const int64_t tileM = HCSP_GEMM_TILE_M(blockThreads);
  const int64_t tiles = (rows + tileM - 1) / tileM * ((outF + HCSP_GEMM_TILE_N - 1) / HCSP_GEMM_TILE_N);
  return tiles < INT32_MAX ? tiles : INT32_MAX;
}

}  // namespace

void gemmLinearBf16Exact(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, int blockThreads,
                         int64_t blocks) {
  if (rows == 0 || outF == 0) return;
  const int threads = gemmBlockThreads(rows, blockThreads);
  const int64_t grid = gemmBlocks(rows, outF, threads, blocks);
  if (inF % 8 == 0 && aligned16(x) && aligned16(w)) {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_gemm_linear_bf16_v8, grid, threads, x, w, y, rows, inF, outF);
  } else {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_gemm_linear_bf16, grid, threads, x, w, y, rows, inF, outF);
  }
}

void gemmLinearBf16OneThread(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y) {
  const bool v8 = inF % 8 == 0 && aligned16(x) && aligned16(w);
  HCSP_LAUNCH(rt, hcsp_gemm_linear_bf16_one_thread, rows * outF, x, w, y, rows, inF, outF, v8 ? 1 : 0);
}

void gemmLinearBf16(const GpuContext& g, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y) {
  if (rows == 0 || outF == 0) return;
  switch (g.gemm) {
    case GemmMode::Vendor:
    case GemmMode::VendorInvariant:
      if (vendorLinearBf16(g.rt, x, rows, inF, w, outF, y, g.gemm == GemmMode::VendorInvariant)) return;
      [[fallthrough]];  // the library has no algorithm for this shape (blaslt.h said so)
    case GemmMode::Exact:
      gemmLinearBf16Exact(g.rt, x, rows, inF, w, outF, y);
      return;
    case GemmMode::Blas:
      break;
  }
  noGemm("linear", g.gemm);
}

void gemmGroupedLinearBf16Exact(GpuRuntime& rt, const uint16_t* x, int64_t maxRows, int64_t inF, const uint16_t* w, int64_t outF, const int32_t* rowGroup,
                                const int32_t* rows, uint16_t* y, int blockThreads, int64_t blocks) {
  if (maxRows == 0 || outF == 0) return;
  // sized for maxRows: the blocks past the device's row count find no tile
  const int threads = gemmBlockThreads(maxRows, blockThreads);
  const int64_t grid = gemmBlocks(maxRows, outF, threads, blocks);
  if (inF % 8 == 0 && aligned16(x) && aligned16(w)) {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_gemm_grouped_bf16_v8, grid, threads, x, w, rowGroup, rows, y, inF, outF);
  } else {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_gemm_grouped_bf16, grid, threads, x, w, rowGroup, rows, y, inF, outF);
  }
}

void gemmGroupedLinearBf16(const GpuContext& g, const uint16_t* x, int64_t maxRows, int64_t inF, const uint16_t* w, int64_t outF, const int32_t* rowGroup,
                           const int32_t* rows, uint16_t* y) {
  if (maxRows == 0 || outF == 0) return;
  if (g.gemm == GemmMode::Blas) noGemm("moeExperts", g.gemm);
  gemmGroupedLinearBf16Exact(g.rt, x, maxRows, inF, w, outF, rowGroup, rows, y);
}

void gemmFp8LinearPtpc(const GpuContext& g, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                       bool fnuz, bool weightFirst, uint16_t* y) {
  if (rows == 0 || outF == 0) return;
  switch (g.gemm) {
    case GemmMode::Vendor:
    case GemmMode::VendorInvariant:
      if (vendorFp8LinearPtpc(g.rt, q, sx, rows, inF, qW, sw, outF, fnuz, y, g.gemm == GemmMode::VendorInvariant)) return;
      [[fallthrough]];  // the library has no algorithm for this shape (blaslt.h said so)
    case GemmMode::Exact:
      HCSP_LAUNCH(g.rt, hcsp_gemm_fp8_ptpc, rows * outF, q, sx, qW, sw, y, rows, inF, outF, fnuz ? 1 : 0, weightFirst ? 1 : 0);
      return;
    case GemmMode::Blas:
      break;
  }
  noGemm("fp8LinearPtpc", g.gemm);
}

namespace {

Outputs linear(const Inputs& in, const GpuContext& g) {
  const ops::LinearArgs a = ops::checkLinear(in, g.attrs);
  TensorPtr y = g.alloc(DType::BF16, {a.rows, a.outF});
  gemmLinearBf16(g, a.x.bf16(), a.rows, a.inF, a.w.bf16(), a.outF, y->bf16());
  return {y};
}

Outputs fp8LinearPtpc(const Inputs& in, const GpuContext& g) {
  const ops::Fp8LinearArgs a = ops::checkFp8LinearPtpc(in, g.attrs);
  TensorPtr y = g.alloc(DType::BF16, {a.rows, a.outF});
  gemmFp8LinearPtpc(g, a.q.data<uint8_t>(), a.sx.data<float>(), a.rows, a.inF, a.qW.data<uint8_t>(), a.sw.data<float>(), a.outF, a.format.fnuz, a.weightFirst,
                    y->bf16());
  return {y};
}

}  // namespace

HCSP_GPU_OP(linear, linear);
HCSP_GPU_OP(fp8LinearPtpc, fp8LinearPtpc);

}  // namespace hcsp::gpu
