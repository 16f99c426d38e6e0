// Host kernel of moeExpertsFp8Ptpc (core graph/ops/moeOps.ts), operation for operation as
// layers/moe/moeFp8Math.ts: per routed (token, expert) pair, the gate-up dot products of the
// fp8 values in fp32 (k in order; each fp8 x fp8 product is exact), both scales in the
// op's order, h = bf(silu(g) * u), h quantized per pair as quantFp8PerToken does, the down
// dot products likewise, and bf(o * w) added per token in ascending expert index.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../fp8_format.h"
#include "kernel_args.h"
#include "moe_pairs.h"
#include "../../ops/moe_fp8_checks.h"

namespace hcsp {
namespace {

/** the 256 fp8 codes decoded (exact in fp32) */
std::vector<float> decodeTable(const Fp8Format& f) {
  std::vector<float> t(256);
  for (int b = 0; b < 256; b++) t[b] = fp8ToF32(static_cast<uint8_t>(b), f);
  return t;
}

/** scratch bytes counted against the device's memory limit while the kernel holds them */
struct ScratchGuard {
  int64_t bytes;
  explicit ScratchGuard(int64_t b) : bytes(b) { reserveScratch(bytes); }
  ~ScratchGuard() { releaseScratch(bytes); }
};

inline float scaled(float acc, float sw, float sx, bool weightFirst) { return weightFirst ? (acc * sw) * sx : (acc * sx) * sw; }

/** sum_k lut[a[k]] * lut[b[k]] in fp32, k in order */
inline float dotFp8(const uint8_t* a, const uint8_t* b, int64_t n, const float* lut) {
  float acc = 0.0f;
  for (int64_t k = 0; k < n; k++) acc = acc + lut[a[k]] * lut[b[k]];
  return acc;
}

/** quantizeBf16RowsFp8 of one bf16 row (the first NaN's |x| is the amax, as torch.amax) */
void quantizeRow(const uint16_t* x, int64_t cols, const Fp8Format& f, ops::QuantStyle style, uint8_t* q, float* scale) {
  float amax = 0.0f;
  bool nan = false;
  for (int64_t j = 0; j < cols && !nan; j++) {
    const float a = std::fabs(bf16ToF32(x[j]));
    if (a != a) {
      amax = a;
      nan = true;
    } else if (a > amax) {
      amax = a;
    }
  }
  float s;
  if (amax == 0.0f) {
    s = 1.0f;
  } else if (style == ops::QuantStyle::Divide) {
    s = amax / f.max;
  } else {
    s = amax * static_cast<float>(1.0 / static_cast<double>(f.max));
  }
  *scale = s;
  const float inv = 1.0f / s;
  for (int64_t j = 0; j < cols; j++) q[j] = f32ToFp8(style == ops::QuantStyle::Divide ? bf16ToF32(x[j]) / s : bf16ToF32(x[j]) * inv, f);
}

Outputs moeExpertsFp8Ptpc(const Inputs& in, const KernelContext& ctx) {
  const ops::MoeExpertsFp8Args a = ops::checkMoeExpertsFp8(in, ctx.attrs);
  const int64_t T = a.T, H = a.H, topK = a.topK, firstExpert = a.firstExpert, numLocal = std::max<int64_t>(0, a.numLocal), inter = a.inter;
  const bool wf = a.weightFirst;
  const RoutedWork r = routedWork(a.ids, T, H, topK, firstExpert, numLocal);
  if (r.work.most == 0) return {r.routed};
  float* acc = r.routed->data<float>();
  const uint16_t* wd = a.weights.bf16();
  const std::vector<float> lut = decodeTable(a.format);
  const float* L = lut.data();
  const uint8_t* xq = a.xq.data<uint8_t>();
  const float* sx = a.sx.data<float>();
  // one expert's pairs at a time: their bf(o * w) contributions [n, H]
  ScratchGuard guard(r.work.most * H * 4);
  std::vector<float> contrib(r.work.most * H);
  for (int64_t local = 0; local < numLocal; local++) {
    const std::vector<int64_t>& mine = r.work.pairs[local];
    const int64_t n = static_cast<int64_t>(mine.size());
    if (n == 0) continue;
    const uint8_t* wGu = a.qGateUp.data<uint8_t>() + local * 2 * inter * H;
    const float* sGu = a.sGateUp.data<float>() + local * 2 * inter;
    const uint8_t* wDown = a.qDown.data<uint8_t>() + local * H * inter;
    const float* sDown = a.sDown.data<float>() + local * H;
    ctx.pool.parallelFor(n, 1, [&](int64_t i0, int64_t i1) {
      std::vector<uint16_t> h(inter);
      std::vector<uint8_t> hq(inter);
      for (int64_t i = i0; i < i1; i++) {
        const int64_t tk = mine[i];
        const int64_t t = tk / topK;
        const uint8_t* xr = xq + t * H;
        for (int64_t c = 0; c < inter; c++) {
          const float g = scaled(dotFp8(xr, wGu + c * H, H, L), sGu[c], sx[t], wf);
          const float u = scaled(dotFp8(xr, wGu + (inter + c) * H, H, L), sGu[inter + c], sx[t], wf);
          h[c] = f32ToBf16(fp32::siluF32(g) * u);
        }
        float sh;
        quantizeRow(h.data(), inter, a.format, a.style, hq.data(), &sh);
        const float w = bf16ToF32(wd[tk]);
        float* ci = contrib.data() + i * H;
        for (int64_t j = 0; j < H; j++) ci[j] = roundBf16(scaled(dotFp8(hq.data(), wDown + j * inter, inter, L), sDown[j], sh, wf) * w);
      }
    });
    // acc_t += contribution in pair order; split by columns, so a token listed twice stays in order
    ctx.pool.parallelFor(H, 256, [&](int64_t j0, int64_t j1) {
      for (int64_t i = 0; i < n; i++) {
        float* at = acc + (mine[i] / topK) * H;
        const float* ci = contrib.data() + i * H;
        for (int64_t j = j0; j < j1; j++) at[j] = at[j] + ci[j];
      }
    });
  }
  return {r.routed};
}

}  // namespace

HCSP_KERNEL(moeExpertsFp8Ptpc, moeExpertsFp8Ptpc);

}  // namespace hcsp
