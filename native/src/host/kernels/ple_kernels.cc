// Host kernels of the PLE ops (core graph/ops/pleOps.ts) that run on the device:
// pleRms1pNorm, pleGate, pleGatedValue and pleConvSilu, as reference/kernels/pleKernels.ts
// computes them with layers/ple/pleMath.ts, rounding for rounding. (pleNgramIds and
// pleNgramEmbed are host ops: core's graph loop runs them on host tensors itself.)
// Where pleMath.ts computes in JavaScript doubles without Math.fround (sum + v*v, acc + w*x,
// sumsq / groupSize), this computes in double and rounds to float where it rounds. Threads
// split rows; each output is computed by one thread in the reference's order.
#include <algorithm>
#include <cmath>

#include "../numerics/bf16.h"
#include "../numerics/fp32_math.h"
#include "js_text.h"
#include "kernel_args.h"

namespace hcsp {
namespace {

/** rows per parallel range so one range holds about 16K values */
int64_t rowGrain(int64_t width) { return std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, width)); }

/** dims2 of kernelArgs.ts: [rows, cols] of a 2-D tensor; `what` names the op and the port */
void dims2(const Tensor& t, const std::string& what, int64_t& rows, int64_t& cols) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
  rows = t.dim(0);
  cols = t.dim(1);
}

/** divide of pleKernels.ts: width / attrs[name], which must split width into whole groups */
int64_t divide(int64_t width, const Attrs& attrs, const std::string& name, const std::string& what) {
  if (js::isInteger(attrs, name)) {
    const double parts = attrs.number(name);
    if (parts >= 1 && std::fmod(static_cast<double>(width), parts) == 0) return width / static_cast<int64_t>(parts);
  }
  fail(ErrorKind::Shape, what + ": width " + std::to_string(width) + " is not divisible into " + js::text(attrs, name) + " groups");
}

/** checkLength of pleMath.ts */
void checkLength(const char* what, int64_t length, double expected) {
  if (static_cast<double>(length) != expected) {
    fail(ErrorKind::Shape, std::string("ple: ") + what + " has " + std::to_string(length) + " values, expected " + js::number(expected));
  }
}

/** attrs[name] as the JavaScript number arithmetic would see it (NaN unless a finite number) */
double numberOrNaN(const Attrs& attrs, const std::string& name) {
  const js::AttrProbe p = js::probe(attrs, name);
  return p.kind == js::AttrProbe::Kind::Number ? p.number : std::nan("");
}

/**
 * pleRms1pNorm: per row and group, sumsq = fr(sumsq + v*v) in order (the sum in double, then
 * rounded), rstd = rsqrt(fr(fr(sumsq / groupSize) + fr(eps))), y = bf(fr(fr(x * rstd) * fr(1 + w))).
 */
Outputs pleRms1pNorm(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "pleRms1pNorm";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  int64_t rows, width;
  dims2(x, "pleRms1pNorm x", rows, width);
  const int64_t groupSize = divide(width, ctx.attrs, "groups", op);
  const int64_t groups = width / groupSize;
  const Tensor& weight = input(in, 1, "weight", op, DType::BF16);
  checkLength("norm weight", weight.numel(), static_cast<double>(width));
  const float epsF = static_cast<float>(ctx.attrs.number("eps"));
  std::vector<float> scale(width);
  for (int64_t j = 0; j < width; j++) scale[j] = 1.0f + bf16ToF32(weight.bf16()[j]);
  TensorPtr y = makeTensor(DType::BF16, x.shape());
  const uint16_t* xd = x.bf16();
  uint16_t* yd = y->bf16();
  ctx.pool.parallelFor(rows, rowGrain(width), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      for (int64_t g = 0; g < groups; g++) {
        const int64_t base = t * width + g * groupSize;
        float sumsq = 0;
        for (int64_t j = 0; j < groupSize; j++) {
          const double v = bf16ToF32(xd[base + j]);
          sumsq = static_cast<float>(static_cast<double>(sumsq) + v * v);
        }
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
 * pleGate: per row t and stream s, acc = fr(acc + bf(k_j * q_j)) in j order,
 * score = bf(bf(acc) / sqrt(H)), root = bf(sqrt(bf(max(|score|, 1e-6)))),
 * gate = bf(sigmoid(sign(score) * root)), sign(0) (and NaN) = 0.
 */
Outputs pleGate(const Inputs& in, const KernelContext& ctx) {
  const std::string op = "pleGate";
  const Tensor& k = input(in, 0, "k", op, DType::BF16);
  int64_t rows, width;
  dims2(k, "pleGate k", rows, width);
  const int64_t hidden = divide(width, ctx.attrs, "streams", op);
  const int64_t streams = width / hidden;
  const Tensor& q = input(in, 1, "q", op, DType::BF16);
  checkLength("normed queries", q.numel(), static_cast<double>(rows * streams * hidden));
  const float sqrtH = fp32::sqrtF32(static_cast<float>(hidden));
  TensorPtr gate = makeTensor(DType::BF16, {rows, streams});
  const uint16_t* kd = k.bf16();
  const uint16_t* qd = q.bf16();
  uint16_t* gd = gate->bf16();
  ctx.pool.parallelFor(rows * streams, rowGrain(hidden), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t o = r * hidden;
      float acc = 0;
      for (int64_t j = 0; j < hidden; j++) acc = acc + roundBf16(bf16ToF32(kd[o + j]) * bf16ToF32(qd[o + j]));
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
  const std::string op = "pleGatedValue";
  const Tensor& value = input(in, 1, "value", op, DType::BF16);
  int64_t rows, hidden;
  dims2(value, "pleGatedValue value", rows, hidden);
  const double streamsAttr = numberOrNaN(ctx.attrs, "streams");
  const Tensor& gate = input(in, 0, "gate", op, DType::BF16);
  checkLength("gate", gate.numel(), static_cast<double>(rows) * streamsAttr);
  if (!(std::floor(streamsAttr) == streamsAttr && streamsAttr >= 0)) {
    fail(ErrorKind::Attr, "pleGatedValue: attr streams must be a non-negative integer, got " + js::json(ctx.attrs, "streams"));
  }
  const int64_t streams = static_cast<int64_t>(streamsAttr);
  TensorPtr y = makeTensor(DType::BF16, {rows, streams * hidden});
  const uint16_t* gt = gate.bf16();
  const uint16_t* vd = value.bf16();
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
  const std::string op = "pleConvSilu";
  const Tensor& g = input(in, 1, "g", op, DType::BF16);
  int64_t rows, channels;
  dims2(g, "pleConvSilu g", rows, channels);
  const Tensor& weight = input(in, 2, "weight", op, DType::BF16);
  if (weight.rank() != 3 || weight.dim(0) != channels || weight.dim(1) != 1) {
    fail(ErrorKind::Shape, "pleConvSilu: weight " + shapeStr(weight.shape()) + " is not [" + std::to_string(channels) + ", 1, K]");
  }
  const int64_t kernel = weight.dim(2);
  const Tensor& gNormed = input(in, 0, "gNormed", op, DType::BF16);
  checkLength("normed values", gNormed.numel(), static_cast<double>(rows * channels));
  const double dilationAttr = numberOrNaN(ctx.attrs, "dilation");
  if (!(std::floor(dilationAttr) == dilationAttr && dilationAttr >= 1)) {
    fail(ErrorKind::Attr, "ple: conv dilation " + js::text(ctx.attrs, "dilation") + " must be a positive integer");
  }
  const int64_t dilation = dilationAttr > 9.0e15 ? int64_t(9e15) : static_cast<int64_t>(dilationAttr);
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

}  // namespace

HCSP_KERNEL(pleRms1pNorm, pleRms1pNorm);
HCSP_KERNEL(pleGate, pleGate);
HCSP_KERNEL(pleGatedValue, pleGatedValue);
HCSP_KERNEL(pleConvSilu, pleConvSilu);

}  // namespace hcsp
