// The exact GEMM's micro-kernels, one per ISA (gemm_avx512.cc, gemm_avx2.cc, gemm_portable.cc),
// behind one tile interface so the blocking driver (linear.cc) is shared. A tile is up to
// MR rows x one weight panel: each lane owns one output and walks k in order, one FMA per k.
// The panel holds bf16 bits (panels.h), widened to fp32 (the bits moved into the top half:
// exact), so the operands are the same floats as fp32 panels would be: by the tile in
// registers, or, when many row tiles share a panel's k block, once into fp32 scratch by the
// ISA's WidenFn (linear.cc), which the tiles then read as they read fp32 panels.
// The reference rounds fround(acc + x*w) with the product and sum in double; a product of two
// bf16 (or e4m3) values has at most 16 significant bits, so that double sum rounds to the same
// float as the exact sum, which is what an FMA rounds once. So every ISA gives the same bits.
#pragma once
#include <cstdint>
#include <type_traits>

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
  const uint16_t* wp;  // the panel at this k block: [kc][width] bf16 bits
  const float* wf;     // or, when not null, the same block widened (WidenFn): [kc][width] fp32, outputs in order
  int64_t kc;
  int mr;     // rows of this tile, 1..MR
  int width;  // the panel's width (elements per k), a multiple of the ISA's vector
  int n;      // valid outputs of the panel, 1..width
  // sums carried between k blocks ([mr][accStride] fp32, padded to the width)
  float* acc;
  int64_t accStride;
  bool first;  // start from +0 (else load acc)
  bool last;   // finish into y (else store acc)
  Epilogue epilogue;
  void* y;  // first output of the tile: row stride yStride elements
  int64_t yStride;
  // Bf16Scaled: per-output scale (n of them) and per-row scale (mr of them); colScaleFirst
  // applies the per-output one first ('weightFirst': the outputs are the weight's channels)
  const float* colScale;
  const float* rowScale;
  bool colScaleFirst;
};

/**
 * f(std::integral_constant<int, R>{}) for R = rows (1..MR, MR for more): a tile's row count as
 * a template argument, so that each ISA's tile is compiled once per row count
 */
template <class F>
void withRows(int rows, F f) {
  switch (rows) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    default:
      return f(std::integral_constant<int, MR>{});
  }
}

using TileFn = void (*)(const Tile&);
/** a panel's k block ([kc][width] bf16 bits, the ISA's layout) as fp32 [kc][width], outputs in order */
using WidenFn = void (*)(const uint16_t* wp, int64_t kc, int width, float* dst);

void tileAvx512(const Tile& t);
void tileAvx2(const Tile& t);
void tilePortable(const Tile& t);
void widenAvx512(const uint16_t* wp, int64_t kc, int width, float* dst);
void widenAvx2(const uint16_t* wp, int64_t kc, int width, float* dst);
void widenPortable(const uint16_t* wp, int64_t kc, int width, float* dst);

/**
 * The panel width and the tail granularity (the vector length) of each ISA's kernel, and
 * whether its vectors are paired: then each full 2 x vector group of a panel's k row holds
 * its first vector's outputs in the even elements and its second's in the odd ones, so one
 * load of 2 x vector bf16 widens with two plain bit operations (a 32-bit lane's low half
 * shifted up, its high half masked) instead of a zero-extension and a shift per vector.
 */
struct PanelGeometry {
  int width;
  int vector;
  bool paired;
};

inline PanelGeometry panelGeometry(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return {64, 16, true};
    case Isa::Avx2:
      return {16, 8, true};
    case Isa::Portable:
      return {16, 8, false};
  }
  return {16, 8, false};
}

/** where output j of a panel `width` wide sits in its k row */
inline int panelSlot(int j, int width, PanelGeometry g) {
  if (!g.paired) return j;
  const int pair = 2 * g.vector, g0 = j / pair * pair;
  if (g0 + pair > width) return j;
  const int i = j - g0;
  return g0 + (i < g.vector ? 2 * i : 2 * (i - g.vector) + 1);
}

struct Kernels {
  TileFn tile;
  WidenFn widen;
};

inline Kernels kernels(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return {tileAvx512, widenAvx512};
    case Isa::Avx2:
      return {tileAvx2, widenAvx2};
    case Isa::Portable:
      return {tilePortable, widenPortable};
  }
  return {tilePortable, widenPortable};
}

}  // namespace hcsp::gemm
