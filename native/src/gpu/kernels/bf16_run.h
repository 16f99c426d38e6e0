// A run of 8 bf16 values staged into a tiled GEMM's shared slabs (gemm.cu's tiled linear,
// moe_grouped.cu's expert tiles): one 16-byte load per run, written to the slab transposed to
// [k][row] as fp32 (bf16 -> fp32 is exact). And the FMA those GEMMs sum with: the product of two
// bf16 (or two e4m3) values is exact in fp32's 24 bits, so one fused multiply-add is the
// reference's fround(acc + x*w) (product and sum in double, rounded once).
#pragma once
#include "../../numerics/bf16.h"
#include "../vendor.h"

#if defined(HCSP_GPU_CUDA)
#define HCSP_EXACT_PRODUCT_FMA(a, b, c) __fmaf_rn(a, b, c)
#elif defined(HCSP_GPU_HIP)
#define HCSP_EXACT_PRODUCT_FMA(a, b, c) __builtin_fmaf(a, b, c)
#else
// the emulated device: the reference's own formula, product and sum in double rounded once to
// float (the same bits, as above). The host build has no -mfma, so fmaf would be a library call
// around which every accumulator of a register tile is spilled (the tiled kernels ran at half the
// one-thread kernel's speed that way)
#define HCSP_EXACT_PRODUCT_FMA(a, b, c) static_cast<float>(static_cast<double>(c) + static_cast<double>(a) * static_cast<double>(b))
#endif

/** bf16 values per run: one 16-byte word */
constexpr int HCSP_BF16_RUN = 8;

struct alignas(16) HcspBf16x8 {
  uint32_t v[4];
};

/** a word's low and high bf16 as fp32: little-endian, element 2j is the low half of word j */
HCSP_HD float hcspLowBf16(uint32_t u) { return hcsp::bitsFloat(u << 16); }
HCSP_HD float hcspHighBf16(uint32_t u) { return hcsp::bitsFloat(u & 0xffff0000u); }

/**
 * 8 bf16 of row `row` (null: a row outside the tile's, all zeros) from k on, as one 16-byte word;
 * k at or past inF reads zeros. V8: row and k 16-byte aligned, inF a multiple of 8 (so the
 * word is wholly in or wholly out); else 8 bounded 2-byte loads.
 */
template <bool V8>
HCSP_HD HcspBf16x8 hcspLoadRun(const uint16_t* row, int64_t k, int64_t inF) {
  HcspBf16x8 v = {{0u, 0u, 0u, 0u}};
  if (row == nullptr) return v;
  if (V8) {
    if (k < inF) v = *reinterpret_cast<const HcspBf16x8*>(row + k);
  } else {
    for (int e = 0; e < HCSP_BF16_RUN; e++) {
      const uint32_t b = k + e < inF ? row[k + e] : 0u;
      v.v[e / 2] |= b << (16 * (e % 2));
    }
  }
  return v;
}

/** a loaded word into column `col` of a [k][stride] slab at k offsets kc..kc+7, as fp32 */
HCSP_HD void hcspStageRun(float* slab, int stride, int col, int kc, const HcspBf16x8& v) {
  for (int j = 0; j < 4; j++) {
    slab[(kc + 2 * j) * stride + col] = hcspLowBf16(v.v[j]);
    slab[(kc + 2 * j + 1) * stride + col] = hcspHighBf16(v.v[j]);
  }
}
