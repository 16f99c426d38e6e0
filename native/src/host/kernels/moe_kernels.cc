// Host kernels of the MoE ops (core graph/ops/moeOps.ts), operation for operation as
// reference/kernels/moeKernels.ts and layers/moe/moeMath.ts: softmax (its sum over the experts
// in canonical order v1, numerics/canonical_sum.h) and top-k routing in fp32 with the reference's tie rules (ties=torch-cpu: libstdc++'s own algorithms,
// numerics/torch_cpu_topk.h), the routed sum of a rank's experts (each expert's GEMMs through gemm::linearBf16, the `linear` op's order; contributions added
// per token in ascending expert index), the SwiGLU and the shared-expert combine.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../gemm/linear.h"
#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/torch_cpu_topk.h"
#include "kernel_args.h"
#include "moe_pairs.h"
#include "../../ops/moe_checks.h"

namespace hcsp {
namespace {

// the checks and their messages are shared with the GPU launchers (ops/moe_checks.h)

/** JavaScript's Math.max of two numbers: NaN if either is, +0 over -0 */
inline float jsMax(float a, float b) {
  if (a != a || b != b) return std::numeric_limits<float>::quiet_NaN();
  if (a == 0.0f && b == 0.0f) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/** scratch bytes counted against the device's memory limit while a kernel holds them */
struct ScratchGuard {
  int64_t bytes;
  explicit ScratchGuard(int64_t b) : bytes(b) { reserveScratch(bytes); }
  ~ScratchGuard() { releaseScratch(bytes); }
};

Outputs moeRoute(const Inputs& in, const KernelContext& ctx) {
  const ops::MoeRouteArgs a = ops::checkMoeRoute(in, ctx.attrs);
  const int64_t T = a.T, E = a.E, topK = a.topK;
  const bool normTopkProb = a.normTopkProb;
  const Tensor& logits = a.logits;
  TensorPtr ids = makeTensor(DType::I32, {T, topK});
  TensorPtr weights = makeTensor(DType::BF16, {T, topK});
  const uint16_t* ld = logits.bf16();
  int32_t* idd = ids->data<int32_t>();
  uint16_t* wd = weights->bf16();
  ctx.pool.parallelFor(T, 16, [&](int64_t t0, int64_t t1) {
    std::vector<float> p(E), chosenP(topK);
    std::vector<uint8_t> taken(E);
    std::vector<std::pair<float, int64_t>> queue;
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* row = ld + t * E;
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t e = 0; e < E; e++) max = jsMax(max, bf16ToF32(row[e]));
      for (int64_t e = 0; e < E; e++) p[e] = fp32::expF32(bf16ToF32(row[e]) - max);
      // the softmax's sum over the experts in canonical order v1
      const float* pe = p.data();
      const float sum = canonical::sumTerms(E, [pe](float acc, int64_t e) { return acc + pe[e]; });
      for (int64_t e = 0; e < E; e++) p[e] = p[e] / sum;
      int32_t* rowIds = idd + t * topK;
      if (a.torchCpuTies) {
        topk::torchCpuTopk(p.data(), E, topK, rowIds, queue);
      } else {
        std::fill(taken.begin(), taken.end(), 0);
        for (int64_t k = 0; k < topK; k++) {
          int64_t best = -1;
          // strict > keeps the lower index on ties; NaN probabilities are never chosen first
          for (int64_t e = 0; e < E; e++) {
            if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
          }
          taken[best] = 1;
          rowIds[k] = static_cast<int32_t>(best);
        }
      }
      for (int64_t k = 0; k < topK; k++) chosenP[k] = p[rowIds[k]];
      float norm = 0.0f;
      for (int64_t k = 0; k < topK; k++) norm = norm + chosenP[k];
      for (int64_t k = 0; k < topK; k++) wd[t * topK + k] = f32ToBf16(normTopkProb ? chosenP[k] / norm : chosenP[k]);
    }
  });
  return {ids, weights};
}

/** h = bf(bf(silu(gate)) * up) of rows [gate (I) | up (I)] */
void swiGlu(const uint16_t* gateUp, int64_t rows, int64_t inter, uint16_t* h, const KernelContext& ctx) {
  ctx.pool.parallelFor(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inter)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const uint16_t* base = gateUp + t * 2 * inter;
      for (int64_t i = 0; i < inter; i++) {
        const float act = roundBf16(fp32::siluF32(bf16ToF32(base[i])));
        h[t * inter + i] = f32ToBf16(act * bf16ToF32(base[inter + i]));
      }
    }
  });
}

Outputs moeSwiGlu(const Inputs& in, const KernelContext& ctx) {
  const ops::MoeSwiGluArgs a = ops::checkMoeSwiGlu(in, ctx.attrs);
  const int64_t T = a.T, inter = a.inter;
  const Tensor& gateUp = a.gateUp;
  TensorPtr h = makeTensor(DType::BF16, {T, inter});
  swiGlu(gateUp.bf16(), T, inter, h->bf16(), ctx);
  return {h};
}

Outputs moeExperts(const Inputs& in, const KernelContext& ctx) {
  const ops::MoeExpertsArgs a = ops::checkMoeExperts(in, ctx.attrs);
  const int64_t T = a.T, H = a.H, topK = a.topK, firstExpert = a.firstExpert, numLocal = a.numLocal, inter = a.inter;
  const RoutedWork r = routedWork(a.ids, T, H, topK, firstExpert, numLocal);
  if (r.work.most == 0) return {r.routed};
  float* acc = r.routed->data<float>();
  const uint16_t* wd = a.weights.bf16();

  // one expert's rows at a time: gathered x, gate_up, h, o (bf16 bits)
  const int64_t scratchElems = r.work.most * (H + 2 * inter + inter + H);
  ScratchGuard guard(scratchElems * 2);
  std::vector<uint16_t> xe(r.work.most * H), gu(r.work.most * 2 * inter), h(r.work.most * inter), o(r.work.most * H);
  const uint16_t* xd = a.x.bf16();
  for (int64_t local = 0; local < numLocal; local++) {
    const std::vector<int64_t>& mine = r.work.pairs[local];
    const int64_t n = static_cast<int64_t>(mine.size());
    if (n == 0) continue;
    for (int64_t i = 0; i < n; i++) std::memcpy(xe.data() + i * H, xd + (mine[i] / topK) * H, H * 2);
    const uint16_t* wGu = a.gateUp.bf16() + local * 2 * inter * H;
    const uint16_t* wDown = a.down.bf16() + local * H * inter;
    gemm::linearBf16(xe.data(), n, H, wGu, 2 * inter, gu.data(), ctx, &a.gateUp);
    swiGlu(gu.data(), n, inter, h.data(), ctx);
    gemm::linearBf16(h.data(), n, inter, wDown, H, o.data(), ctx, &a.down);
    // acc_t += bf(o * w) in pair order; split by columns, so a token listed twice stays in order
    ctx.pool.parallelFor(H, 256, [&](int64_t j0, int64_t j1) {
      for (int64_t i = 0; i < n; i++) {
        const int64_t tk = mine[i];
        const int64_t t = tk / topK;
        const float w = bf16ToF32(wd[tk]);
        float* acc_t = acc + t * H;
        const uint16_t* oi = o.data() + i * H;
        if (a.bf16Accumulate) {
          // hf-eager: HF's bf16 index_add_ accumulator, each add rounded
          for (int64_t j = j0; j < j1; j++) acc_t[j] = roundBf16(acc_t[j] + roundBf16(bf16ToF32(oi[j]) * w));
        } else {
          for (int64_t j = j0; j < j1; j++) acc_t[j] = acc_t[j] + roundBf16(bf16ToF32(oi[j]) * w);
        }
      }
    });
  }
  return {r.routed};
}

Outputs moeCombine(const Inputs& in, const KernelContext& ctx) {
  const ops::MoeCombineArgs a = ops::checkMoeCombine(in, ctx.attrs);
  const int64_t T = a.T, H = a.H;
  TensorPtr y = makeTensor(DType::BF16, {T, H});
  const float* rd = a.routed.data<float>();
  const uint16_t* sd = a.shared.bf16();
  const uint16_t* gd = a.gateLogit.bf16();
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(T, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, H)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float g = roundBf16(fp32::sigmoidF32(bf16ToF32(gd[t])));
      for (int64_t j = 0; j < H; j++) {
        const int64_t i = t * H + j;
        const float s = roundBf16(bf16ToF32(sd[i]) * g);
        yd[i] = f32ToBf16(roundBf16(rd[i]) + s);
      }
    }
  });
  return {y};
}

}  // namespace

HCSP_KERNEL(moeRoute, moeRoute);
HCSP_KERNEL(moeExperts, moeExperts);
HCSP_KERNEL(moeSwiGlu, moeSwiGlu);
HCSP_KERNEL(moeCombine, moeCombine);

}  // namespace hcsp
