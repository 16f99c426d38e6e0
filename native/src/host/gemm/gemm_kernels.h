// The exact GEMM's micro-kernels, one per ISA (gemm_avx512.cc, gemm_avx2.cc, gemm_portable.cc),
// behind one tile interface so the blocking driver (linear.cc) is shared. A tile is up to
// MR rows x one weight panel: each lane owns one output and walks k in order, one FMA per k.
// The reference rounds fround(acc + x*w) with the product and sum in double; a product of two
// bf16 (or e4m3) values has at most 16 significant bits, so that double sum rounds to the same
// float as the exact sum, which is what an FMA rounds once. So every ISA gives the same bits.
#pragma once
#include <cstdint>

#include "../cpu_features.h"

namespace hcsp::gemm {

/** rows per tile */
constexpr int MR = 6;

/** what the last k block does with its sums */
enum class Epilogue {
  F32,         // y fp32 = acc
  Bf16,        // y bf16 = bf(acc)
  Bf16Scaled,  // y bf16 = bf(fl(fl(acc * s1) * s2)): fp8 PTPC, the scale order chosen by the caller
};

struct Tile {
  const float* xp;  // x as fp32: row r's k block at xp + r * xStride
  int64_t xStride;
  const float* wp;  // the panel at this k block: [kc][width]
  int64_t kc;
  int mr;           // rows of this tile, 1..MR
  int width;        // the panel's width (floats per k), a multiple of the ISA's vector
  int n;            // valid outputs of the panel, 1..width
  // sums carried between k blocks ([mr][accStride] fp32, padded to the width)
  float* acc;
  int64_t accStride;
  bool first;       // start from +0 (else load acc)
  bool last;        // finish into y (else store acc)
  Epilogue epilogue;
  void* y;          // first output of the tile: row stride yStride elements
  int64_t yStride;
  // Bf16Scaled: per-output scale (n of them) and per-row scale (mr of them); colScaleFirst
  // applies the per-output one first ('weightFirst': the outputs are the weight's channels)
  const float* colScale;
  const float* rowScale;
  bool colScaleFirst;
};

using TileFn = void (*)(const Tile&);

void tileAvx512(const Tile& t);
void tileAvx2(const Tile& t);
void tilePortable(const Tile& t);

/** the panel width and the tail granularity (the vector length) of each ISA's kernel */
struct PanelGeometry {
  int width;
  int vector;
};

inline PanelGeometry panelGeometry(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return {64, 16};
    case Isa::Avx2: return {16, 8};
    case Isa::Portable: return {16, 8};
  }
  return {16, 8};
}

inline TileFn tileFn(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return tileAvx512;
    case Isa::Avx2: return tileAvx2;
    case Isa::Portable: return tilePortable;
  }
  return tilePortable;
}

}  // namespace hcsp::gemm
