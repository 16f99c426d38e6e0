// The MoE ops' argument checks (reference/kernels/moeKernels.ts with layers/moe/moeMath.ts),
// shared by the host kernels (host/kernels/moe_kernels.cc) and the GPU launchers
// (gpu/ops/moe_ops.cc): each check* reads the attributes and the inputs' metadata (shape, dtype;
// never data: the routing ids' values are the kernels' to read) in the reference's order, fails
// with the reference's messages, and returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "../host/kernels/kernel_args.h"
#include "topk_ties_checks.h"

namespace hcsp::ops {

/** moeMath's checkLength: `moe: <what> has N values, expected M` */
inline void moeCheckLength(const char* what, int64_t n, int64_t expected) {
  if (n != expected) fail(ErrorKind::Shape, std::string("moe: ") + what + " has " + std::to_string(n) + " values, expected " + std::to_string(expected));
}

/** kernelArgs.dims2: [rows, cols] of a 2-D tensor, `what` naming the op and the port */
inline std::pair<int64_t, int64_t> moeDims2(const Tensor& t, const std::string& what) {
  if (t.rank() != 2) fail(ErrorKind::Shape, what + ": expected a 2-D tensor, got " + shapeStr(t.shape()));
  return {t.dim(0), t.dim(1)};
}

struct MoeRouteArgs {
  const Tensor& logits;
  int64_t T, E, topK;
  bool normTopkProb;
  /** ties=torch-cpu: the experts torch.topk picks, in its order (numerics/torch_cpu_topk.h); false: ties to the lower expert */
  bool torchCpuTies;
};

inline MoeRouteArgs checkMoeRoute(const Inputs& in, const Attrs& attrs) {
  const std::string op = "moeRoute";
  const Tensor& logits = input(in, 0, "logits", op, DType::BF16);
  const auto [T, E] = moeDims2(logits, "moeRoute logits");
  const int64_t topK = attrs.integer("topK");
  const bool normTopkProb = attrs.boolean("normTopkProb", false);
  moeCheckLength("router logits", logits.numel(), T * E);
  if (topK < 1 || topK > E) fail(ErrorKind::Attr, "moe: topK " + std::to_string(topK) + " must be in [1, " + std::to_string(E) + "]");
  return {logits, T, E, topK, normTopkProb, checkTorchCpuTies(attrs, op)};
}

struct MoeSwiGluArgs {
  const Tensor& gateUp;
  int64_t T, inter;
};

inline MoeSwiGluArgs checkMoeSwiGlu(const Inputs& in, const Attrs&) {
  const std::string op = "moeSwiGlu";
  const Tensor& gateUp = input(in, 0, "gateUp", op, DType::BF16);
  const auto [T, twoI] = moeDims2(gateUp, "moeSwiGlu gateUp");
  if (twoI % 2 != 0) fail(ErrorKind::Shape, "moeSwiGlu: gate_up width " + std::to_string(twoI) + " is odd (expected [gate | up])");
  return {gateUp, T, twoI / 2};
}

struct MoeExpertsArgs {
  const Tensor& x;
  const Tensor& ids;
  const Tensor& weights;
  const Tensor& gateUp;
  const Tensor& down;
  int64_t T, H, topK, firstExpert, numLocal, inter;
  /** the 'hf-eager' contract: each add of the routed sum rounded to bf16 (absent: false) */
  bool bf16Accumulate;
};

inline MoeExpertsArgs checkMoeExperts(const Inputs& in, const Attrs& attrs) {
  const std::string op = "moeExperts";
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& ids = input(in, 1, "ids", op, DType::I32);
  const Tensor& weights = input(in, 2, "weights", op, DType::BF16);
  const Tensor& gateUp = input(in, 3, "gateUp", op, DType::BF16);
  const Tensor& down = input(in, 4, "down", op, DType::BF16);
  const auto [T, H] = moeDims2(x, "moeExperts x");
  const auto [idRows, topK] = moeDims2(ids, "moeExperts ids");
  if (idRows != T || weights.shape() != ids.shape()) {
    fail(ErrorKind::Shape,
         "moeExperts: x " + shapeStr(x.shape()) + ", ids " + shapeStr(ids.shape()) + " and weights " + shapeStr(weights.shape()) + " do not match");
  }
  const int64_t firstExpert = attrs.integer("firstExpert");
  const int64_t numLocal = attrs.integer("numLocal");
  const int64_t inter = attrs.integer("intermediate");
  moeCheckLength("x", x.numel(), T * H);
  moeCheckLength("routing ids", ids.numel(), T * topK);
  moeCheckLength("routing weights", weights.numel(), T * topK);
  moeCheckLength("stacked gate_up", gateUp.numel(), numLocal * 2 * inter * H);
  moeCheckLength("stacked down", down.numel(), numLocal * H * inter);
  return {x, ids, weights, gateUp, down, T, H, topK, firstExpert, numLocal, inter, attrs.boolean("bf16Accumulate", false)};
}

struct MoeCombineArgs {
  const Tensor& routed;
  const Tensor& shared;
  const Tensor& gateLogit;
  int64_t T, H;
};

inline MoeCombineArgs checkMoeCombine(const Inputs& in, const Attrs&) {
  const std::string op = "moeCombine";
  const Tensor& routed = input(in, 0, "routed", op, DType::F32);
  const Tensor& shared = input(in, 1, "shared", op, DType::BF16);
  const Tensor& gateLogit = input(in, 2, "gateLogit", op, DType::BF16);
  const auto [T, H] = moeDims2(routed, "moeCombine routed");
  moeCheckLength("routed sum", routed.numel(), T * H);
  moeCheckLength("shared expert output", shared.numel(), T * H);
  moeCheckLength("shared expert gate logit", gateLogit.numel(), T);
  return {routed, shared, gateLogit, T, H};
}

}  // namespace hcsp::ops
