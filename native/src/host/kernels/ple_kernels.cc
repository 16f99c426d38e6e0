// Host kernels of the PLE ops (core graph/ops/pleOps.ts) that run on the device:
// pleRms1pNorm, pleGate, pleGatedValue and pleConvSilu, as reference/kernels/pleKernels.ts
// computes them with layers/ple/pleMath.ts, rounding for rounding; pleNgramIds (a host op the
// native devices run themselves: DeviceOps.runsHostOp) as layers/ple/pleHash.ts, with the GPU
// kernels' per-position code (numerics/ple_ngram.h), and pleNgramEmbedShard, the
// vocab-parallel table's lookup. (pleNgramEmbed, the gathered table's, stays in core's loop.)
// Where pleMath.ts computes in JavaScript doubles without Math.fround (acc + w*x,
// sumsq / groupSize), this computes in double and rounds to float where it rounds. Threads
// split rows; each output is computed by one thread in the reference's order: the norm's sum
// of squares and the gate's dot in canonical order v1 (numerics/canonical_sum.h; the squares
// on the vector unit, canonical_sumsq.h), the conv's taps in index order. The checks and
// their messages are shared with the GPU launchers (ops/ple_checks.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/ple_ngram.h"
#include "canonical_sumsq.h"
#include "js_text.h"
#include "kernel_args.h"
#include "../../ops/ple_checks.h"

namespace hcsp {
namespace {

/** rows per parallel range so one range holds about 16K values */
int64_t rowGrain(int64_t width) { return std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, width)); }

/**
 * pleRms1pNorm: per row and group, sumsq = sum v*v in canonical order v1 (exact squares, one
 * rounding per add), rstd = rsqrt(fr(fr(sumsq / groupSize) + fr(eps))), y = bf(fr(fr(x * rstd) * fr(1 + w))).
 */
Outputs pleRms1pNorm(const Inputs& in, const KernelContext& ctx) {
  const ops::PleNormArgs a = ops::checkPleRms1pNorm(in, ctx.attrs);
  const int64_t rows = a.rows, width = a.width, groupSize = a.groupSize, groups = a.groups;
  const float epsF = a.epsF;
  std::vector<float> scale(width);
  for (int64_t j = 0; j < width; j++) scale[j] = 1.0f + bf16ToF32(a.weight.bf16()[j]);
  TensorPtr y = makeTensor(DType::BF16, a.x.shape());
  const uint16_t* xd = a.x.bf16();
  uint16_t* yd = y->bf16();
  const Isa isa = gemmIsa();
  ctx.pool.parallelFor(rows, rowGrain(width), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t g = 0; g < groups; g++) {
        const int64_t base = t * width + g * groupSize;
        const float sumsq = canonical::sumSquaresBf16(isa, xd + base, groupSize);
        const float mean = static_cast<float>(static_cast<double>(sumsq) / static_cast<double>(groupSize));
        const float rstd = fp32::rsqrtF32(mean + epsF);
        for (int64_t j = 0; j < groupSize; j++) yd[base + j] = f32ToBf16((bf16ToF32(xd[base + j]) * rstd) * scale[g * groupSize + j]);
      }
    }
  });
  return {y};
}

/** clamp_min of the signed square root: PLE_GATE_SQRT_FLOOR = fr(1e-6) */
constexpr float PLE_GATE_SQRT_FLOOR = static_cast<float>(1e-6);

/**
 * pleGate: per row t and stream s, acc = the fp32 sum of bf(k_j * q_j) in canonical order v1,
 * score = bf(bf(acc) / sqrt(H)), root = bf(sqrt(bf(max(|score|, 1e-6)))),
 * gate = bf(sigmoid(sign(score) * root)), sign(0) (and NaN) = 0.
 */
Outputs pleGate(const Inputs& in, const KernelContext& ctx) {
  const ops::PleGateArgs a = ops::checkPleGate(in, ctx.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  const Tensor& k = a.k;
  const Tensor& q = a.q;
  const float sqrtH = fp32::sqrtF32(static_cast<float>(hidden));
  TensorPtr gate = makeTensor(DType::BF16, {rows, streams});
  const uint16_t* kd = k.bf16();
  const uint16_t* qd = q.bf16();
  uint16_t* gd = gate->bf16();
  ctx.pool.parallelFor(rows * streams, rowGrain(hidden), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t o = r * hidden;
      const float acc = canonical::sumTerms(hidden, [&](float sum, int64_t j) { return sum + roundBf16(bf16ToF32(kd[o + j]) * bf16ToF32(qd[o + j])); });
      const float score = roundBf16(roundBf16(acc) / sqrtH);
      const float mag = std::fabs(score);
      const float clamped = mag != mag ? mag : (mag > PLE_GATE_SQRT_FLOOR ? mag : PLE_GATE_SQRT_FLOOR);  // Math.max: NaN wins
      const float root = roundBf16(fp32::sqrtF32(roundBf16(clamped)));
      const float g = score > 0 ? root : score < 0 ? -root : 0.0f;
      gd[r] = f32ToBf16(fp32::sigmoidF32(g));
    }
  });
  return {gate};
}

/** pleGatedValue: G[t, s*H + j] = bf(gate[t,s] * value[t,j]) */
Outputs pleGatedValue(const Inputs& in, const KernelContext& ctx) {
  const ops::PleGatedValueArgs a = ops::checkPleGatedValue(in, ctx.attrs);
  const int64_t rows = a.rows, hidden = a.hidden, streams = a.streams;
  TensorPtr y = makeTensor(DType::BF16, {rows, streams * hidden});
  const uint16_t* gt = a.gate.bf16();
  const uint16_t* vd = a.value.bf16();
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(rows, rowGrain(streams * hidden), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t s = 0; s < streams; s++) {
        const float gs = bf16ToF32(gt[t * streams + s]);
        const int64_t o = (t * streams + s) * hidden;
        for (int64_t j = 0; j < hidden; j++) yd[o + j] = f32ToBf16(gs * bf16ToF32(vd[t * hidden + j]));
      }
    }
  });
  return {y};
}

/**
 * pleConvSilu: conv[t,c] = sum_i w[c,i] * Gn[t - (K-1-i)*dilation, c] from tap 0, acc =
 * fr(acc + w*x) (the add in double, then rounded; taps before the start skipped),
 * out = bf(G + bf(silu(bf(conv)))).
 */
Outputs pleConvSilu(const Inputs& in, const KernelContext& ctx) {
  const ops::PleConvArgs a = ops::checkPleConvSilu(in, ctx.attrs);
  const int64_t rows = a.rows, channels = a.channels, kernel = a.kernel, dilation = a.dilation;
  const Tensor& g = a.g;
  const Tensor& weight = a.weight;
  const Tensor& gNormed = a.gNormed;
  const uint16_t* wd = weight.bf16();
  const uint16_t* gn = gNormed.bf16();
  const uint16_t* gd = g.bf16();
  TensorPtr y = makeTensor(DType::BF16, {rows, channels});
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(rows, rowGrain(channels * std::max<int64_t>(1, kernel)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t c = 0; c < channels; c++) {
        float acc = 0;
        for (int64_t i = 0; i < kernel; i++) {
          const int64_t back = (kernel - 1 - i);
          if (back > 0 && dilation > t / back) continue;  // src = t - back*dilation < 0
          const int64_t src = t - back * dilation;
          acc = static_cast<float>(static_cast<double>(acc) + static_cast<double>(bf16ToF32(wd[c * kernel + i])) * bf16ToF32(gn[src * channels + c]));
        }
        const float act = roundBf16(fp32::siluF32(roundBf16(acc)));
        yd[t * channels + c] = f32ToBf16(bf16ToF32(gd[t * channels + c]) + act);
      }
    }
  });
  return {y};
}

/**
 * The first failure of a loop split over the pool's threads (each range scans in order): the
 * lowest position noted and its detail, what the reference's one in-order loop reports first.
 */
class FirstFailure {
 public:
  void note(int64_t position, int64_t detail) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (position < position_) {
      position_ = position;
      detail_ = detail;
    }
  }
  bool failed() const { return position_ != std::numeric_limits<int64_t>::max(); }
  int64_t position() const { return position_; }
  int64_t detail() const { return detail_; }

 private:
  std::mutex mutex_;
  int64_t position_ = std::numeric_limits<int64_t>::max();
  int64_t detail_ = 0;
};

/**
 * pleNgramIds: each position's row from at most ngramSize - 1 tokens back (ple_ngram.h), the
 * positions split over the threads. A token outside the vocabulary fails first (the reference
 * checks every token before it hashes), then the first product that leaves int64.
 */
Outputs pleNgramIds(const Inputs& in, const KernelContext& ctx) {
  const ops::PleNgramIdsArgs a = ops::checkPleNgramIds(in, ctx.attrs);
  const int64_t T = a.T, n = a.ngramSize;
  TensorPtr ids = makeTensor(DType::I32, {T, a.heads});
  const int32_t* tokens = a.tokens.data<int32_t>();
  int32_t* out = ids->data<int32_t>();
  FirstFailure badToken, badProduct;
  ctx.pool.parallelFor(T, rowGrain(std::max<int64_t>(1, a.heads) * n), [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0; i < t1; i++) {
      if (!(tokens[i] >= 0 && tokens[i] < a.vocabBound)) badToken.note(i, tokens[i]);
      int32_t badS;
      int64_t badId;
      hcspPleNgramRow(tokens, i, a.eos, a.ngramSize, a.headsPerNgram, a.multipliers.data(), a.maxIds.data(), a.sizes.data(), a.offsets.data(),
                      out + i * a.heads, &badS, &badId);
      if (badS >= 0) badProduct.note(i * n + badS, badId);
    }
  });
  if (badToken.failed()) ops::failPleToken(badToken.detail(), badToken.position(), a.vocabText);
  if (badProduct.failed()) ops::failPleProduct(a.multiplierDigits, badProduct.detail(), static_cast<int32_t>(badProduct.position() % n));
  return {ids};
}

/** pleNgramEmbedShard: per (position, head), its row when the id falls in the slice, else bf16 -0.0; the first id outside the table fails */
Outputs pleNgramEmbedShard(const Inputs& in, const KernelContext& ctx) {
  const ops::PleShardArgs a = ops::checkPleNgramEmbedShard(in, ctx.attrs);
  const int64_t n = a.T * a.heads, hd = a.headDim;
  TensorPtr e = makeTensor(DType::BF16, {a.T, a.heads * hd});
  const int32_t* ids = a.ids.data<int32_t>();
  const uint16_t* table = a.table.bf16();
  uint16_t* out = e->bf16();
  FirstFailure bad;
  ctx.pool.parallelFor(n, rowGrain(hd), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const int64_t id = ids[i];
      const bool inTable = id >= 0 && id < a.tableBound;
      if (!inTable) bad.note(i, id);
      const int64_t local = id - a.rowStart;
      if (inTable && local >= 0 && local < a.rows)
        std::memcpy(out + i * hd, table + local * hd, static_cast<size_t>(hd) * sizeof(uint16_t));
      else
        std::fill(out + i * hd, out + (i + 1) * hd, HCSP_BF16_NEGATIVE_ZERO);
    }
  });
  if (bad.failed()) ops::failPleNgramId(bad.detail(), bad.position(), a.heads, a.tableRowsText);
  return {e};
}

}  // namespace

HCSP_KERNEL(pleNgramIds, pleNgramIds);
HCSP_KERNEL(pleNgramEmbedShard, pleNgramEmbedShard);
HCSP_KERNEL(pleRms1pNorm, pleRms1pNorm);
HCSP_KERNEL(pleGate, pleGate);
HCSP_KERNEL(pleGatedValue, pleGatedValue);
HCSP_KERNEL(pleConvSilu, pleConvSilu);

}  // namespace hcsp
