// GPU kernels of the GEMMs in the reference's order (GemmMode::Exact): `linear`
// (layers/linearMath.ts), its grouped form (each row against its group's weight: the MoE's
// experts, one launch for all) and `fp8LinearPtpc` (layers/fp8Linear.ts). Each output is summed by
// one thread over k = 0..K-1 in order, one fp32 add at a time, so a GPU run is bit-exact with
// the CPU reference; the bf16 kernels tile the operands in shared memory (below), each thread
// keeping 16 such sums. The product of two bf16 (or two e4m3) values has at most 16 significant
// bits: the reference's fround(acc + x*w), product and sum in double, equals the exact sum
// rounded once, which is what a fused multiply-add computes (the host GEMM's argument,
// host/gemm/gemm_kernels.h); a separate fp32 multiply would round a product below fp32's
// normal range. So these kernels write an FMA on purpose (HCSP_EXACT_PRODUCT_FMA); everything else
// rounds as written (contraction is off on every target).
#include "gemm.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp8.h"
#include "bf16_run.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

namespace {

/** one output of `linear`: bf(sum_k xr[k] * wr[k]), k = 0..inF-1 in order (every bf16 GEMM kernel here computes its outputs with this) */
HCSP_HD uint16_t linearDot(const uint16_t* xr, const uint16_t* wr, int64_t inF) {
  float acc = 0.0f;
  for (int64_t k = 0; k < inF; k++) acc = HCSP_EXACT_PRODUCT_FMA(bf16ToF32(xr[k]), bf16ToF32(wr[k]), acc);
  return f32ToBf16(acc);
}

/** linearDot reading 8 bf16 at a time, the same adds in the same order: xr and wr 16-byte aligned, inF a multiple of 8 */
HCSP_HD uint16_t linearDotV8(const uint16_t* xr, const uint16_t* wr, int64_t inF) {
  const HcspBf16x8* xv8 = reinterpret_cast<const HcspBf16x8*>(xr);
  const HcspBf16x8* wv8 = reinterpret_cast<const HcspBf16x8*>(wr);
  float acc = 0.0f;
  for (int64_t gk = 0; gk < inF / 8; gk++) {
    const HcspBf16x8 xv = xv8[gk];
    const HcspBf16x8 wv = wv8[gk];
    // little-endian words: element 2j is the low half of word j, 2j+1 the high half
    for (int j = 0; j < 4; j++) {
      acc = HCSP_EXACT_PRODUCT_FMA(hcspLowBf16(xv.v[j]), hcspLowBf16(wv.v[j]), acc);
      acc = HCSP_EXACT_PRODUCT_FMA(hcspHighBf16(xv.v[j]), hcspHighBf16(wv.v[j]), acc);
    }
  }
  return f32ToBf16(acc);
}

}  // namespace

// The tiled kernels: a block computes one output tile of TILE_M(block) x HCSP_GEMM_TILE_N at a
// time (then the block's next tile, blocks striding over the tiles), staging slabs of
// HCSP_GEMM_TILE_K k values of x's and w's rows in shared memory (as fp32, transposed to [k][row]
// so a thread reads its 4 rows' or 4 columns' values as one 16-byte word) and each thread owning
// a 4 x 4 register tile: every one of its 16 sums walks k = 0..K-1 in order, one FMA per k, as
// linearDot does, so the bits do not depend on the tile, the block or the grid.
namespace {

/** thread tile: each thread owns 4 rows x 4 columns of its block's output tile */
constexpr int GEMM_THREAD_TILE = 4;
/** threads along a tile's columns (HCSP_GEMM_TILE_N / 4); the rest of the block runs along its rows */
constexpr int GEMM_COL_THREADS = HCSP_GEMM_TILE_N / GEMM_THREAD_TILE;
/** a staged slab's row of k: the tile's columns plus 4 floats, a 16-byte multiple (the [k][row] writes of 4 threads sharing a row then fall in other banks than
 * the next row's) */
constexpr int GEMM_SLAB_STRIDE = HCSP_GEMM_TILE_N + 4;
/** the staging loads of one tile row's slab */
constexpr int GEMM_RUNS_PER_ROW = HCSP_GEMM_TILE_K / HCSP_BF16_RUN;
/** the staging loads of w's slab (the tile's columns are w's rows) */
constexpr int GEMM_W_WORDS = HCSP_GEMM_TILE_N * GEMM_RUNS_PER_ROW;
/** a thread's share of them at most (a block of 64 threads) */
constexpr int GEMM_W_SLOTS = GEMM_W_WORDS / 64;
static_assert(HCSP_GEMM_TILE_M_MAX <= HCSP_GEMM_TILE_N, "a slab's stride is sized by the wider side");

/**
 * One output tile of y = x w^T by the whole block (every thread must call it: it waits at
 * barriers): rows [tileRow, tileRow + TILE_M) of which rows [rowBegin, rowEnd) are computed and
 * written (the others are staged as zeros), columns [col, col + HCSP_GEMM_TILE_N) of which those
 * below outF. x [., inF] and y [., outF] row-major from row 0, w [outF, inF] (the weight the
 * rows use); xs and ws: the block's shared slabs (HCSP_GEMM_SLAB floats each).
 */
template <bool V8>
HCSP_DEVICE void gemmTile(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t tileRow, int64_t rowBegin, int64_t rowEnd, int64_t col, int64_t inF,
                          int64_t outF, float* xs, float* ws) {
  const int thread = HCSP_BLOCK_THREAD();
  const int threads = HCSP_BLOCK_THREADS();
  const int tx = thread % GEMM_COL_THREADS;
  const int ty = thread / GEMM_COL_THREADS;
  // the staging: x's TILE_M rows are `threads` words a slab (one each), w's HCSP_GEMM_TILE_N rows
  // 256 words (one to four each); consecutive threads read consecutive words of a row
  const int xRow = thread / GEMM_RUNS_PER_ROW;
  const int xKc = (thread % GEMM_RUNS_PER_ROW) * HCSP_BF16_RUN;
  const int64_t xAt = tileRow + xRow;
  const uint16_t* xr = xAt >= rowBegin && xAt < rowEnd ? x + xAt * inF : nullptr;
  // (a block of 192 threads: 2 words each, the last 128 threads' second one past the slab).
  // The loops over a thread's words run GEMM_W_SLOTS times, the unused ones skipped: a constant
  // trip count unrolls, so these arrays stay in registers
  const int wWords = (GEMM_W_WORDS + threads - 1) / threads;
  const uint16_t* wr[GEMM_W_SLOTS];
  int wCol[GEMM_W_SLOTS];
  int wKc[GEMM_W_SLOTS];
  for (int i = 0; i < GEMM_W_SLOTS; i++) {
    const int word = thread + i * threads;
    wCol[i] = i < wWords && word < GEMM_W_WORDS ? word / GEMM_RUNS_PER_ROW : -1;
    wKc[i] = (word % GEMM_RUNS_PER_ROW) * HCSP_BF16_RUN;
    wr[i] = wCol[i] >= 0 && col + wCol[i] < outF ? w + (col + wCol[i]) * inF : nullptr;
  }

  float acc[GEMM_THREAD_TILE][GEMM_THREAD_TILE];
  for (int i = 0; i < GEMM_THREAD_TILE; i++)
    for (int j = 0; j < GEMM_THREAD_TILE; j++) acc[i][j] = 0.0f;
  // the next slab's words are loaded before this slab's sums run (their latency hidden behind them)
  HcspBf16x8 xNext = hcspLoadRun<V8>(xr, xKc, inF);
  HcspBf16x8 wNext[GEMM_W_SLOTS];
  for (int i = 0; i < GEMM_W_SLOTS; i++) wNext[i] = hcspLoadRun<V8>(wr[i], wKc[i], inF);
  for (int64_t k0 = 0; k0 < inF; k0 += HCSP_GEMM_TILE_K) {
    HCSP_BARRIER();  // every thread is done reading the slabs it overwrites now
    hcspStageRun(xs, GEMM_SLAB_STRIDE, xRow, xKc, xNext);
    for (int i = 0; i < GEMM_W_SLOTS; i++)
      if (wCol[i] >= 0) hcspStageRun(ws, GEMM_SLAB_STRIDE, wCol[i], wKc[i], wNext[i]);
    HCSP_BARRIER();
    const int64_t kNext = k0 + HCSP_GEMM_TILE_K;
    if (kNext < inF) {
      xNext = hcspLoadRun<V8>(xr, kNext + xKc, inF);
      for (int i = 0; i < GEMM_W_SLOTS; i++) wNext[i] = hcspLoadRun<V8>(wr[i], kNext + wKc[i], inF);
    }
    // only k < inF is added (a padded k would add +0: harmless, but not the reference's adds)
    const int kn = inF - k0 < HCSP_GEMM_TILE_K ? static_cast<int>(inF - k0) : HCSP_GEMM_TILE_K;
    for (int kk = 0; kk < kn; kk++) {
      float a[GEMM_THREAD_TILE], b[GEMM_THREAD_TILE];
      for (int i = 0; i < GEMM_THREAD_TILE; i++) a[i] = xs[kk * GEMM_SLAB_STRIDE + ty * GEMM_THREAD_TILE + i];
      for (int j = 0; j < GEMM_THREAD_TILE; j++) b[j] = ws[kk * GEMM_SLAB_STRIDE + tx * GEMM_THREAD_TILE + j];
      for (int i = 0; i < GEMM_THREAD_TILE; i++)
        for (int j = 0; j < GEMM_THREAD_TILE; j++) acc[i][j] = HCSP_EXACT_PRODUCT_FMA(a[i], b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < GEMM_THREAD_TILE; i++) {
    const int64_t row = tileRow + ty * GEMM_THREAD_TILE + i;
    if (row < rowBegin || row >= rowEnd) continue;
    for (int j = 0; j < GEMM_THREAD_TILE; j++) {
      const int64_t o = col + tx * GEMM_THREAD_TILE + j;
      if (o < outF) y[row * outF + o] = f32ToBf16(acc[i][j]);
    }
  }
}

/** the tile's rows for this block size: 4 per row of threads */
HCSP_DEVICE int64_t gemmTileRows() { return static_cast<int64_t>(HCSP_BLOCK_THREADS() / GEMM_COL_THREADS) * GEMM_THREAD_TILE; }

template <bool V8>
HCSP_DEVICE void linearTiled(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  HCSP_SHARED(float, xs, HCSP_GEMM_SLAB);
  HCSP_SHARED(float, ws, HCSP_GEMM_SLAB);
  const int64_t tileM = gemmTileRows();
  const int64_t colTiles = (outF + HCSP_GEMM_TILE_N - 1) / HCSP_GEMM_TILE_N;
  const int64_t tiles = (rows + tileM - 1) / tileM * colTiles;
  // the bounds are the block's, so every thread reaches every barrier
  for (int64_t tile = HCSP_BLOCK_ID(); tile < tiles; tile += HCSP_BLOCK_COUNT()) {
    const int64_t tileRow = tile / colTiles * tileM;
    const int64_t rowEnd = rows - tileRow < tileM ? rows : tileRow + tileM;
    gemmTile<V8>(x, w, y, tileRow, tileRow, rowEnd, tile % colTiles * HCSP_GEMM_TILE_N, inF, outF, xs, ws);
  }
}

// A tile's rows may belong to several groups (the MoE's rows are sorted by expert, so a tile
// holds at most a few runs): the block computes the tile once per run of rows of one group,
// against that group's weight, the other rows staged as zeros and not written.
template <bool V8>
HCSP_DEVICE void groupedTiled(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rowCount, uint16_t* y, int64_t inF, int64_t outF) {
  HCSP_SHARED(float, xs, HCSP_GEMM_SLAB);
  HCSP_SHARED(float, ws, HCSP_GEMM_SLAB);
  const int64_t rows = *rowCount;
  const int64_t tileM = gemmTileRows();
  const int64_t colTiles = (outF + HCSP_GEMM_TILE_N - 1) / HCSP_GEMM_TILE_N;
  const int64_t tiles = (rows + tileM - 1) / tileM * colTiles;
  for (int64_t tile = HCSP_BLOCK_ID(); tile < tiles; tile += HCSP_BLOCK_COUNT()) {
    const int64_t tileRow = tile / colTiles * tileM;
    const int64_t tileEnd = rows - tileRow < tileM ? rows : tileRow + tileM;
    for (int64_t begin = tileRow; begin < tileEnd;) {
      const int32_t group = rowGroup[begin];
      int64_t end = begin + 1;
      while (end < tileEnd && rowGroup[end] == group) end++;
      gemmTile<V8>(x, w + static_cast<int64_t>(group) * outF * inF, y, tileRow, begin, end, tile % colTiles * HCSP_GEMM_TILE_N, inF, outF, xs, ws);
      begin = end;
    }
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_gemm_linear_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  linearTiled<false>(x, w, y, rows, inF, outF);
}

HCSP_GLOBAL void hcsp_gemm_linear_bf16_v8(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF) {
  linearTiled<true>(x, w, y, rows, inF, outF);
}

HCSP_GLOBAL void hcsp_gemm_grouped_bf16(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                        int64_t outF) {
  groupedTiled<false>(x, w, rowGroup, rows, y, inF, outF);
}

HCSP_GLOBAL void hcsp_gemm_grouped_bf16_v8(const uint16_t* x, const uint16_t* w, const int32_t* rowGroup, const int32_t* rows, uint16_t* y, int64_t inF,
                                           int64_t outF) {
  groupedTiled<true>(x, w, rowGroup, rows, y, inF, outF);
}

HCSP_GLOBAL void hcsp_gemm_linear_bf16_one_thread(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t inF, int64_t outF, int32_t v8) {
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    y[i] = v8 ? linearDotV8(x + t * inF, w + o * inF, inF) : linearDot(x + t * inF, w + o * inF, inF);
  }
}

HCSP_GLOBAL void hcsp_gemm_fp8_ptpc(const uint8_t* q, const float* sx, const uint8_t* qW, const float* sw, uint16_t* y, int64_t rows, int64_t inF, int64_t outF,
                                    int32_t fnuz, int32_t weightFirst) {
  const hcsp::Fp8Format f = fnuz ? hcsp::E4M3FNUZ : hcsp::E4M3FN;
  HCSP_GRID_STRIDE(i, rows * outF) {
    const int64_t t = i / outF;
    const int64_t o = i - t * outF;
    const uint8_t* xr = q + t * inF;
    const uint8_t* wr = qW + o * inF;
    float acc = 0.0f;
    for (int64_t k = 0; k < inF; k++) acc = HCSP_EXACT_PRODUCT_FMA(hcsp::fp8ToF32(xr[k], f), hcsp::fp8ToF32(wr[k], f), acc);
    const float scaled = weightFirst ? (acc * sw[o]) * sx[t] : (acc * sx[t]) * sw[o];
    y[i] = f32ToBf16(scaled);
  }
}
