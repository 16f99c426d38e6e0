// Declarations of gemm.cu's kernels (the reference-order GEMMs), for their launchers
// (ops/gemm_ops.cc), and the GEMM entries the other GPU launchers call (the MoE's experts).
#pragma once
#include "../vendor.h"

// The exact bf16 GEMMs are block kernels (vendor.h) tiled in shared memory: a block of
// 64 * R threads (R = 1..4) computes output tiles of HCSP_GEMM_TILE_M(threads) rows x
// HCSP_GEMM_TILE_N columns, k staged HCSP_GEMM_TILE_K at a time, each thread 4 x 4 outputs; a
// grid of fewer blocks than tiles loops over them. Every output still sums k = 0..K-1 in order
// in fp32, one FMA on an exact bf16 product per k (layers/linearMath.ts), so its bits are the
// reference's whatever the block size or grid.
#define HCSP_GEMM_TILE_N 64
#define HCSP_GEMM_TILE_K 32
/** a block of `threads` threads computes this many rows of a tile (16 threads per 4 rows) */
#define HCSP_GEMM_TILE_M(threads) ((threads) / 4)
#define HCSP_GEMM_TILE_M_MAX HCSP_GEMM_TILE_M(256)
/** the floats of one staged slab ([HCSP_GEMM_TILE_K][a tile side + 4]) */
#define HCSP_GEMM_SLAB (HCSP_GEMM_TILE_K * (HCSP_GEMM_TILE_N + 4))

/**
 * y[t,o] = bf(sum_k x[t,k] * w[o,k]), k = 0..inF-1 in order, fp32 (layers/linearMath.ts): x bf16
 * [rows, inF], w bf16 [outF, inF], y bf16 [rows, outF]. Block kernels (above). The _v8 variant
 * stages 8 bf16 per load: x and w 16-byte aligned and inF a multiple of 8.
 */
HCSP_GLOBAL void hcsp_gemm_linear_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF);
HCSP_GLOBAL void hcsp_gemm_linear_bf16_v8(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF);
/**
 * The grouped `linear`: y[t,o] = linear's output of x[t,:] and row o of w's group rowGroup[t]
 * (w stacks the groups' [outF, inF] weights), for t < *rows only: the row count is read on
 * the device. Block kernels as above, each output summed exactly as hcsp_gemm_linear_bf16 sums
 * it (the same tile routine), so a row's bits are those of `linear` on its group's weight; a
 * tile whose rows span several groups is computed once per run of one group's rows (fastest
 * with rows sorted by group, as the MoE's are). The _v8 variant as above.
 */
HCSP_GLOBAL void hcsp_gemm_grouped_bf16(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                        int64_t outF);
HCSP_GLOBAL void hcsp_gemm_grouped_bf16_v8(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                           int64_t outF);
/**
 * `linear` with one thread per output (a grid-stride kernel; v8: reading 8 bf16 at a time, as
 * _v8 above): the exact GEMM before the tiled kernels, kept as their baseline for the tests and
 * the timings (testKernel 'gemmLinearBf16'); no op launches it.
 */
HCSP_GLOBAL void hcsp_gemm_linear_bf16_one_thread(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF, int32_t v8);

/**
 * FP8 PTPC (layers/fp8Linear.ts): acc = sum_k dec(q[t,k]) * dec(qW[o,k]) in k order (fp32);
 * y = bf(fl(fl(acc * sw[o]) * sx[t])) when weightFirst, else bf(fl(fl(acc * sx[t]) * sw[o])).
 * fnuz: e4m3fnuz, else e4m3fn. One thread per output.
 */
HCSP_GLOBAL void hcsp_gemm_fp8_ptpc(const uint8_t* q, const float* sx, const uint8_t* qW, const float* sw, uint16_t* y, int64_t rows, int64_t inF, int64_t outF,
                                    int32_t fnuz, int32_t weightFirst);

#if !defined(__CUDACC__) && !defined(__HIP__)
#include <cstdint>
namespace hcsp::gpu {
struct GpuContext;
class GpuRuntime;
/**
 * The bf16 GEMM of a GPU launcher (device pointers; x [rows, inF], w [outF, inF], y [rows, outF]):
 * g.gemm == GemmMode::Exact runs the tiled reference-order kernel (bit-exact with the CPU
 * reference), GemmMode::Vendor the vendor BLASLt (blaslt.h); other modes fail. Nothing to do for an empty y.
 */
void gemmLinearBf16(const GpuContext& g, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y);
/** the tiled exact kernel alone, in blocks of blockThreads threads (0: the launcher's choice for `rows`), `blocks` of them (0: one per tile) */
void gemmLinearBf16Exact(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y, int blockThreads = 0,
                         int64_t blocks = 0);
/**
 * The grouped bf16 GEMM (hcsp_gemm_grouped_bf16; device pointers: x [maxRows, inF], w [groups *
 * outF, inF], rowGroup [maxRows], *rows <= maxRows, y [maxRows, outF]): one launch sized for
 * maxRows, the device's row count bounding the work. It is the exact kernel in every mode the
 * GPU devices have: a vendor GEMM needs its M on the host (grouped vendor GEMMs: issue 24).
 */
void gemmGroupedLinearBf16(const GpuContext& g, const uint16_t* x, int64_t maxRows, int64_t inF, const uint16_t* w, int64_t outF, const int32_t* rowGroup,
                           const int32_t* rows, uint16_t* y);
/** its kernel alone; blockThreads and blocks as gemmLinearBf16Exact's */
void gemmGroupedLinearBf16Exact(GpuRuntime& rt, const uint16_t* x, int64_t maxRows, int64_t inF, const uint16_t* w, int64_t outF, const int32_t* rowGroup,
                                const int32_t* rows, uint16_t* y, int blockThreads = 0, int64_t blocks = 0);
/** the one-thread-per-output baseline (hcsp_gemm_linear_bf16_one_thread; tests and timings only) */
void gemmLinearBf16OneThread(GpuRuntime& rt, const uint16_t* x, int64_t rows, int64_t inF, const uint16_t* w, int64_t outF, uint16_t* y);
/** The FP8 PTPC GEMM likewise (q, qW in e4m3fnuz when fnuz, else e4m3fn; sx [rows], sw [outF] f32). */
void gemmFp8LinearPtpc(const GpuContext& g, const uint8_t* q, const float* sx, int64_t rows, int64_t inF, const uint8_t* qW, const float* sw, int64_t outF,
                       bool fnuz, bool weightFirst, uint16_t* y);
}  // namespace hcsp::gpu
#endif
