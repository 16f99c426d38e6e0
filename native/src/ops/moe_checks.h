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

/** the routed experts' x, ids and weights agree: [T, H], [T, topK], [T, topK] (the message names x's port `xName`) */
inline void checkRouting(const std::string& op, const char* xName, const Tensor& x, const Tensor& ids, const Tensor& weights, int64_t T, int64_t idRows) {
  if (idRows != T || weights.shape() != ids.shape()) {
    fail(ErrorKind::Shape,
         op + ": " + xName + " " + shapeStr(x.shape()) + ", ids " + shapeStr(ids.shape()) + " and weights " + shapeStr(weights.shape()) + " do not match");
  }
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
  const auto [T, E] = dims2(logits, "moeRoute logits");
  const int64_t topK = attrs.integer("topK");
  const bool normTopkProb = attrs.boolean("normTopkProb", false);
  checkLengths("moe", {{"router logits", logits.numel(), T * E}});
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
  const auto [T, twoI] = dims2(gateUp, "moeSwiGlu gateUp");
  if (twoI % 2 != 0) fail(ErrorKind::Shape, "moeSwiGlu: gate_up width " + std::to_string(twoI) + " is odd (expected [gate | up])");
  return {gateUp, T, twoI / 2};
}

struct MoeExpertsArgs {
  const Tensor &x, &ids, &weights, &gateUp, &down;
  int64_t T, H, topK, firstExpert, numLocal, inter;
  /** the 'hf-eager' contract: each add of the routed sum rounded to bf16 (absent: false) */
  bool bf16Accumulate;
};

inline MoeExpertsArgs checkMoeExperts(const Inputs& in, const Attrs& attrs) {
  const std::string op = "moeExperts";
  const auto [x, ids, weights, gateUp, down] =
      inputs(in, op, {{"x", DType::BF16}, {"ids", DType::I32}, {"weights", DType::BF16}, {"gateUp", DType::BF16}, {"down", DType::BF16}});
  const auto [T, H] = dims2(x, "moeExperts x");
  const auto [idRows, topK] = dims2(ids, "moeExperts ids");
  checkRouting(op, "x", x, ids, weights, T, idRows);
  const auto [firstExpert, numLocal, inter] = integers(attrs, {"firstExpert", "numLocal", "intermediate"});
  checkLengths("moe", {{"x", x.numel(), T * H},
                       {"routing ids", ids.numel(), T * topK},
                       {"routing weights", weights.numel(), T * topK},
                       {"stacked gate_up", gateUp.numel(), numLocal * 2 * inter * H},
                       {"stacked down", down.numel(), numLocal * H * inter}});
  return {x, ids, weights, gateUp, down, T, H, topK, firstExpert, numLocal, inter, attrs.boolean("bf16Accumulate", false)};
}

struct MoeCombineArgs {
  const Tensor &routed, &shared, &gateLogit;
  int64_t T, H;
};

inline MoeCombineArgs checkMoeCombine(const Inputs& in, const Attrs&) {
  const std::string op = "moeCombine";
  const auto [routed, shared, gateLogit] = inputs(in, op, {{"routed", DType::F32}, {"shared", DType::BF16}, {"gateLogit", DType::BF16}});
  const auto [T, H] = dims2(routed, "moeCombine routed");
  checkLengths("moe",
               {{"routed sum", routed.numel(), T * H}, {"shared expert output", shared.numel(), T * H}, {"shared expert gate logit", gateLogit.numel(), T}});
  return {routed, shared, gateLogit, T, H};
}

}  // namespace hcsp::ops
