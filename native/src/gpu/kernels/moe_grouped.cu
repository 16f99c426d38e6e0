// The MoE experts' fast grouped GEMMs (kernels 'fast'; moe_grouped.h has the contract). As in
// aiter's fused MoE and vLLM's fused_moe, the rows are sorted by expert and every M-tile
// belongs to one expert (a tile table on the device instead of their padded sorted ids), so
// a block stages one expert's weight slab once for up to 64 rows, and no tile is computed
// twice for two experts as the exact grouped kernel computes a straddling tile. The gate-up
// GEMM gathers x through the routed rows' token ids itself and ends in the SwiGLU, so neither
// the gathered rows nor the gate-up output exist in memory.
#include "moe_grouped.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "bf16_run.h"
#include "routed_rows.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

namespace {

/** a thread's rows of the tile */
constexpr int ROWS = 4;
/** a thread's weight rows in each half of the tile */
constexpr int COLS = 4;
constexpr int HALF_N = HCSP_MOE_TILE_N / 2;
/** threads along a half's columns; the 16 rows of threads run along the tile's rows */
constexpr int COL_THREADS = HALF_N / COLS;
static_assert(COL_THREADS * (HCSP_MOE_TILE_M / ROWS) == HCSP_MOE_BLOCK_THREADS, "one thread per 4 x (4 + 4) outputs");
constexpr int RUNS_PER_ROW = HCSP_MOE_TILE_K / HCSP_BF16_RUN;
static_assert(HCSP_MOE_TILE_M * RUNS_PER_ROW == HCSP_MOE_BLOCK_THREADS, "x's slab: one word per thread");
/** w's slab: this many words per thread */
constexpr int W_SLOTS = HCSP_MOE_TILE_N * RUNS_PER_ROW / HCSP_MOE_BLOCK_THREADS;
/** slab strides ([k][row], fp32): a side plus 4 floats, a 16-byte multiple */
constexpr int XS_STRIDE = HCSP_MOE_TILE_M + 4;
constexpr int WS_STRIDE = HCSP_MOE_TILE_N + 4;

/** the fp32 sums of one thread: rows ROWS x (half A's COLS, half B's COLS) */
struct Acc {
  float a[ROWS][COLS];
  float b[ROWS][COLS];
};

/**
 * One tile by the whole block (every thread calls it: it waits at barriers): the routed rows
 * [rowBegin, rowEnd) (at most TILE_M; rowAt(r) is row r's x, the rows past rowEnd staged as
 * zeros) against weight rows wA + j and wB + j, j < HALF_N (null past the weight: zeros),
 * each [inF] bf16. Returns this thread's sums, reassociated over the k tiles: each tile's k
 * in order in a fresh FMA chain, then one add into the sum.
 */
template <bool V8, class RowAt>
HCSP_DEVICE Acc tileSums(const RowAt& rowAt, int64_t rowBegin, int64_t rowEnd, const uint16_t* wA, int64_t aCols, const uint16_t* wB, int64_t bCols,
                         int64_t inF, float* xs, float* ws) {
  const int thread = HCSP_BLOCK_THREAD();
  const int tx = thread % COL_THREADS;
  const int ty = thread / COL_THREADS;
  const int xRow = thread / RUNS_PER_ROW;
  const int xKc = (thread % RUNS_PER_ROW) * HCSP_BF16_RUN;
  const uint16_t* xr = rowBegin + xRow < rowEnd ? rowAt(rowBegin + xRow) : nullptr;
  const uint16_t* wr[W_SLOTS];
  int wCol[W_SLOTS];
  int wKc[W_SLOTS];
  for (int i = 0; i < W_SLOTS; i++) {
    const int word = thread + i * HCSP_MOE_BLOCK_THREADS;
    wCol[i] = word / RUNS_PER_ROW;
    wKc[i] = (word % RUNS_PER_ROW) * HCSP_BF16_RUN;
    const int j = wCol[i] % HALF_N;
    wr[i] = wCol[i] < HALF_N ? (j < aCols ? wA + j * inF : nullptr) : (j < bCols ? wB + j * inF : nullptr);
  }
  Acc acc;
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) acc.a[i][j] = acc.b[i][j] = 0.0f;
  // the next slab's words are loaded before this slab's sums run (their latency behind them)
  HcspBf16x8 xNext = hcspLoadRun<V8>(xr, xKc, inF);
  HcspBf16x8 wNext[W_SLOTS];
  for (int i = 0; i < W_SLOTS; i++) wNext[i] = hcspLoadRun<V8>(wr[i], wKc[i], inF);
  for (int64_t k0 = 0; k0 < inF; k0 += HCSP_MOE_TILE_K) {
    HCSP_BARRIER();  // every thread is done reading the slabs it overwrites now
    hcspStageRun(xs, XS_STRIDE, xRow, xKc, xNext);
    for (int i = 0; i < W_SLOTS; i++) hcspStageRun(ws, WS_STRIDE, wCol[i], wKc[i], wNext[i]);
    HCSP_BARRIER();
    const int64_t kNext = k0 + HCSP_MOE_TILE_K;
    if (kNext < inF) {
      xNext = hcspLoadRun<V8>(xr, kNext + xKc, inF);
      for (int i = 0; i < W_SLOTS; i++) wNext[i] = hcspLoadRun<V8>(wr[i], kNext + wKc[i], inF);
    }
    // the tile's k past inF staged zeros: their products add nothing to a fresh chain's sum
    // but -0 + 0, so they are left out as the reference has no such adds
    const int kn = inF - k0 < HCSP_MOE_TILE_K ? static_cast<int>(inF - k0) : HCSP_MOE_TILE_K;
    Acc part;
    for (int i = 0; i < ROWS; i++)
      for (int j = 0; j < COLS; j++) part.a[i][j] = part.b[i][j] = 0.0f;
    for (int kk = 0; kk < kn; kk++) {
      float xv[ROWS], av[COLS], bv[COLS];
      for (int i = 0; i < ROWS; i++) xv[i] = xs[kk * XS_STRIDE + ty * ROWS + i];
      for (int j = 0; j < COLS; j++) av[j] = ws[kk * WS_STRIDE + tx * COLS + j];
      for (int j = 0; j < COLS; j++) bv[j] = ws[kk * WS_STRIDE + HALF_N + tx * COLS + j];
      for (int i = 0; i < ROWS; i++) {
        for (int j = 0; j < COLS; j++) {
          part.a[i][j] = HCSP_EXACT_PRODUCT_FMA(xv[i], av[j], part.a[i][j]);
          part.b[i][j] = HCSP_EXACT_PRODUCT_FMA(xv[i], bv[j], part.b[i][j]);
        }
      }
    }
    for (int i = 0; i < ROWS; i++) {
      for (int j = 0; j < COLS; j++) {
        acc.a[i][j] = acc.a[i][j] + part.a[i][j];
        acc.b[i][j] = acc.b[i][j] + part.b[i][j];
      }
    }
  }
  return acc;
}

/** the tile's routed rows: tile n's [rowBegin, rowEnd) and its expert */
struct TileRows {
  int64_t expert;
  int64_t begin;
  int64_t end;
};

HCSP_HD TileRows tileRows(const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, int64_t n) {
  const int64_t e = tileExpert[n];
  const int64_t begin = tileRow[n];
  const int64_t last = first[e + 1];
  return {e, begin, last - begin < HCSP_MOE_TILE_M ? last : begin + HCSP_MOE_TILE_M};
}

template <bool V8>
HCSP_DEVICE void gateUpTiles(const uint16_t* x, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow,
                             const int32_t* tileCount, const uint16_t* w, uint16_t* h, int64_t hidden, int64_t inter) {
  HCSP_SHARED(float, xs, HCSP_MOE_TILE_K* XS_STRIDE);
  HCSP_SHARED(float, ws, HCSP_MOE_TILE_K* WS_STRIDE);
  const int64_t colTiles = (inter + HALF_N - 1) / HALF_N;
  const int64_t work = static_cast<int64_t>(*tileCount) * colTiles;
  const int thread = HCSP_BLOCK_THREAD();
  const int tx = thread % COL_THREADS;
  const int ty = thread / COL_THREADS;
  // the bounds are the block's, so every thread reaches every barrier
  for (int64_t b = HCSP_BLOCK_ID(); b < work; b += HCSP_BLOCK_COUNT()) {
    const TileRows t = tileRows(first, tileExpert, tileRow, b / colTiles);
    const int64_t c = b % colTiles * HALF_N;
    const uint16_t* we = w + t.expert * 2 * inter * hidden;
    const int64_t cols = inter - c < HALF_N ? inter - c : HALF_N;
    const auto rowAt = [&](int64_t r) { return x + static_cast<int64_t>(rowToken[r]) * hidden; };
    const Acc acc = tileSums<V8>(rowAt, t.begin, t.end, we + c * hidden, cols, we + (inter + c) * hidden, cols, hidden, xs, ws);
    for (int i = 0; i < ROWS; i++) {
      const int64_t r = t.begin + ty * ROWS + i;
      if (r >= t.end) continue;
      for (int j = 0; j < COLS; j++) {
        const int64_t col = tx * COLS + j;
        if (col >= cols) continue;
        // moe.cu's SwiGLU of the two bf16 GEMM outputs
        const float act = roundBf16(hcsp::fp32::siluF32(roundBf16(acc.a[i][j])));
        h[r * inter + c + col] = f32ToBf16(act * roundBf16(acc.b[i][j]));
      }
    }
  }
}

template <bool V8>
HCSP_DEVICE void downTiles(const uint16_t* h, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, const int32_t* tileCount,
                           const uint16_t* w, uint16_t* o, int64_t inter, int64_t hidden) {
  HCSP_SHARED(float, xs, HCSP_MOE_TILE_K* XS_STRIDE);
  HCSP_SHARED(float, ws, HCSP_MOE_TILE_K* WS_STRIDE);
  const int64_t colTiles = (hidden + HCSP_MOE_TILE_N - 1) / HCSP_MOE_TILE_N;
  const int64_t work = static_cast<int64_t>(*tileCount) * colTiles;
  const int thread = HCSP_BLOCK_THREAD();
  const int tx = thread % COL_THREADS;
  const int ty = thread / COL_THREADS;
  for (int64_t b = HCSP_BLOCK_ID(); b < work; b += HCSP_BLOCK_COUNT()) {
    const TileRows t = tileRows(first, tileExpert, tileRow, b / colTiles);
    const int64_t c = b % colTiles * HCSP_MOE_TILE_N;
    const uint16_t* we = w + t.expert * hidden * inter;
    const int64_t left = hidden - c;
    const int64_t aCols = left < HALF_N ? left : HALF_N;
    const int64_t bCols = left - HALF_N < 0 ? 0 : (left - HALF_N < HALF_N ? left - HALF_N : HALF_N);
    const auto rowAt = [&](int64_t r) { return h + r * inter; };
    const Acc acc = tileSums<V8>(rowAt, t.begin, t.end, we + c * inter, aCols, we + (c + HALF_N) * inter, bCols, inter, xs, ws);
    for (int i = 0; i < ROWS; i++) {
      const int64_t r = t.begin + ty * ROWS + i;
      if (r >= t.end) continue;
      for (int j = 0; j < COLS; j++) {
        const int64_t col = tx * COLS + j;
        if (col < aCols) o[r * hidden + c + col] = f32ToBf16(acc.a[i][j]);
        if (col < bCols) o[r * hidden + c + HALF_N + col] = f32ToBf16(acc.b[i][j]);
      }
    }
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_moe_grouped_tiles(const int32_t* first, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, int64_t numLocal) {
  hcspExpertTiles(first, tileExpert, tileRow, tileCount, numLocal, HCSP_MOE_TILE_M);
}

HCSP_GLOBAL void hcsp_moe_grouped_gate_up(const uint16_t* x, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow,
                                          const int32_t* tileCount, const uint16_t* gateUp, uint16_t* h, int64_t hidden, int64_t inter) {
  gateUpTiles<false>(x, rowToken, first, tileExpert, tileRow, tileCount, gateUp, h, hidden, inter);
}

HCSP_GLOBAL void hcsp_moe_grouped_gate_up_v8(const uint16_t* x, const int32_t* rowToken, const int32_t* first, const int32_t* tileExpert,
                                             const int32_t* tileRow, const int32_t* tileCount, const uint16_t* gateUp, uint16_t* h, int64_t hidden,
                                             int64_t inter) {
  gateUpTiles<true>(x, rowToken, first, tileExpert, tileRow, tileCount, gateUp, h, hidden, inter);
}

HCSP_GLOBAL void hcsp_moe_grouped_down(const uint16_t* h, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, const int32_t* tileCount,
                                       const uint16_t* down, uint16_t* o, int64_t inter, int64_t hidden) {
  downTiles<false>(h, first, tileExpert, tileRow, tileCount, down, o, inter, hidden);
}

HCSP_GLOBAL void hcsp_moe_grouped_down_v8(const uint16_t* h, const int32_t* first, const int32_t* tileExpert, const int32_t* tileRow, const int32_t* tileCount,
                                          const uint16_t* down, uint16_t* o, int64_t inter, int64_t hidden) {
  downTiles<true>(h, first, tileExpert, tileRow, tileCount, down, o, inter, hidden);
}
