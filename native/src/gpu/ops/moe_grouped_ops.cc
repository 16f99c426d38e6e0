// The fast experts' launches (kernels/moe_grouped.h): the tile table, then one grouped GEMM
// launch per projection, each grid sized for the most tiles the routed rows can cut into (the
// tile count is on the device: blocks past it find no work).
#include <cstdint>

#include "../gpu_runtime.h"
#include "../kernels/moe_grouped.h"

namespace hcsp::gpu {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int64_t gridOf(int64_t tiles, int64_t colTiles) {
  const int64_t blocks = tiles * colTiles;
  return blocks < INT32_MAX ? blocks : INT32_MAX;
}

}  // namespace

void moeGroupedExpertsBf16(GpuRuntime& rt, const uint16_t* x, const int32_t* rowToken, const int32_t* first, int64_t maxRows, int64_t numLocal, int64_t hidden,
                           int64_t inter, const uint16_t* gateUp, const uint16_t* down, int32_t* tileExpert, int32_t* tileRow, int32_t* tileCount, uint16_t* h,
                           uint16_t* o) {
  HCSP_LAUNCH(rt, hcsp_moe_grouped_tiles, 1, first, tileExpert, tileRow, tileCount, numLocal);
  const int64_t tiles = moeGroupedMaxTiles(maxRows, numLocal);
  if (tiles == 0 || hidden == 0 || inter == 0) return;
  const int64_t upGrid = gridOf(tiles, (inter + HCSP_MOE_TILE_N / 2 - 1) / (HCSP_MOE_TILE_N / 2));
  if (hidden % 8 == 0 && aligned16(x) && aligned16(gateUp)) {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_moe_grouped_gate_up_v8, upGrid, HCSP_MOE_BLOCK_THREADS, x, rowToken, first, tileExpert, tileRow, tileCount, gateUp, h, hidden,
                       inter);
  } else {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_moe_grouped_gate_up, upGrid, HCSP_MOE_BLOCK_THREADS, x, rowToken, first, tileExpert, tileRow, tileCount, gateUp, h, hidden,
                       inter);
  }
  const int64_t downGrid = gridOf(tiles, (hidden + HCSP_MOE_TILE_N - 1) / HCSP_MOE_TILE_N);
  if (inter % 8 == 0 && aligned16(h) && aligned16(down)) {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_moe_grouped_down_v8, downGrid, HCSP_MOE_BLOCK_THREADS, h, first, tileExpert, tileRow, tileCount, down, o, inter, hidden);
  } else {
    HCSP_LAUNCH_BLOCKS(rt, hcsp_moe_grouped_down, downGrid, HCSP_MOE_BLOCK_THREADS, h, first, tileExpert, tileRow, tileCount, down, o, inter, hidden);
  }
}

}  // namespace hcsp::gpu
