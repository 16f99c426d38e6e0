// Declarations of moe_grouped.cu's kernels: the fast grouped GEMMs of the MoE's experts
// (kernels 'fast', issue 24), for their launcher (ops/moe_ops.cc) and for other expert kernels
// that want the same tiles (an FP8 MoE can build its tile table with hcsp_moe_grouped_tiles).
//
// The routed rows are moe.cu's layout: grouped by local expert, expert e's rows
// [first[e], first[e + 1]), the count first[numLocal], all on the device. The tile table cuts
// each expert's rows into M-tiles of HCSP_MOE_TILE_M rows that never straddle two experts (the
// last tile of an expert is partly empty); a block computes one tile's rows against
// HCSP_MOE_TILE_N weight rows, k staged HCSP_MOE_TILE_K at a time in shared memory, 256 threads
// each owning 4 rows x 8 weight rows. Each output is an fp32 sum reassociated over the k
// tiles: a fresh FMA chain over each tile's k (in order), added to the running sum once per
// tile, the order a matrix-instruction or split-k kernel adds in. So the bits differ from
// the reference's one chain over k = 0..K-1 (a declared tolerance: backend-rocm
// fastKernelsPrecision.ts), and do not depend on the grid.
#pragma once
#include "../vendor.h"

#define HCSP_MOE_TILE_M 64
/** weight rows per tile: two halves of 64 (gate and up for the gate-up GEMM, two column runs for down) */
#define HCSP_MOE_TILE_N 128
#define HCSP_MOE_TILE_K 32
/** the block size of the grouped GEMM kernels */
#define HCSP_MOE_BLOCK_THREADS 256

/**
 * The M-tiles of the routed rows: for local expert e ascending and rows r = first[e],
 * first[e] + TILE_M, ... < first[e + 1]: tileExpert[n] = e, tileRow[n] = r; *tileCount = n.
 * At most maxRows / TILE_M + numLocal tiles (hcsp::gpu::moeGroupedMaxTiles). One thread.
 */
HCSP_GLOBAL void hcsp_moe_grouped_tiles(const int32_t* first, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, int64_t numLocal);
/**
 * The experts' gate-up GEMM with the SwiGLU fused: for routed row r of tile n (expert e),
 * g = bf(x[rowToken[r]] . gateUp[e * 2I + c]), u = bf(x[rowToken[r]] . gateUp[e * 2I + I + c]),
 * h[r, c] = bf(bf(silu(g)) * u) (moe.cu's SwiGLU). x bf16 [T, hidden] (gathered here: no copy
 * of the routed rows), gateUp bf16 [numLocal * 2I, hidden], h bf16 [maxRows, inter]. Block
 * kernel of HCSP_MOE_BLOCK_THREADS threads; a block per (tile, 64 columns of h), blocks
 * striding over *tileCount x ceil(inter / 64). _v8: x and gateUp 16-byte aligned, hidden a
 * multiple of 8.
 */
HCSP_GLOBAL void hcsp_moe_grouped_gate_up(const uint16_t* x, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow,
                                          const int32_t* tileCount, const uint16_t* gateUp, uint16_t* h, int64_t hidden, int64_t inter);
HCSP_GLOBAL void hcsp_moe_grouped_gate_up_v8(const uint16_t* x, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert,
                                             const int32_t* tileRow, const int32_t* tileCount, const uint16_t* gateUp, uint16_t* h, int64_t hidden,
                                             int64_t inter);
/**
 * The experts' down GEMM: o[r, j] = bf(h[r] . down[e * hidden + j]) for the routed rows of
 * tile n (expert e). h bf16 [maxRows, inter], down bf16 [numLocal * hidden, inter], o bf16
 * [maxRows, hidden]. A block per (tile, 128 columns of o); _v8: h and down 16-byte aligned,
 * inter a multiple of 8.
 */
HCSP_GLOBAL void hcsp_moe_grouped_down(const uint16_t* h, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, const int32_t* tileCount,
                                       const uint16_t* down, uint16_t* o, int64_t inter, int64_t hidden);
HCSP_GLOBAL void hcsp_moe_grouped_down_v8(const uint16_t* h, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, const int32_t* tileCount,
                                          const uint16_t* down, uint16_t* o, int64_t inter, int64_t hidden);

#if !defined(__CUDACC__) && !defined(__HIP__)
#include <cstdint>
namespace hcsp::gpu {
class GpuRuntime;
/** the most M-tiles maxRows routed rows over numLocal experts cut into (each expert's last tile may be partial) */
inline int64_t moeGroupedMaxTiles(int64_t maxRows, int64_t numLocal) { return maxRows / HCSP_MOE_TILE_M + numLocal; }
/**
 * The fast experts (device pointers; the layout's first [numLocal + 1] and rowToken, x [T,
 * hidden], gateUp, down as moeExperts takes them; tile scratch: tileExpert and tileRow
 * [moeGroupedMaxTiles], tileCount [1]; h [maxRows, inter], o [maxRows, hidden]): the tile
 * table, then one launch of the gate-up + SwiGLU GEMM and one of the down GEMM, each grid
 * sized for the most tiles, the device's tile count bounding the work.
 */
void moeGroupedExpertsBf16(GpuRuntime& rt, const uint16_t* x, const int32_t* rowToken, const int32_t* first, int64_t maxRows, int64_t numLocal, int64_t hidden,
                           int64_t inter, const uint16_t* gateUp, const uint16_t* down, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, uint16_t* h,
                           uint16_t* o);
}  // namespace hcsp::gpu
#endif
