// moeExpertsFp8Ptpc's argument checks (reference/kernels/moeKernels.ts with
// layers/moe/moeFp8Math.ts), shared by the host kernel (host/kernels/moe_fp8_kernels.cc) and
// the GPU launcher (gpu/ops/moe_fp8_ops.cc): attributes and the inputs' metadata (never data)
// in the reference's order, with the reference's messages.
#pragma once
#include <cstdint>
#include <string>

#include "../host/fp8_format.h"
#include "../host/kernels/kernel_args.h"
#include "moe_checks.h"
#include "quant_checks.h"

namespace hcsp::ops {

struct MoeExpertsFp8Args {
  const Tensor& xq;
  const Tensor& sx;
  const Tensor& ids;
  const Tensor& weights;
  const Tensor& qGateUp;
  const Tensor& sGateUp;
  const Tensor& qDown;
  const Tensor& sDown;
  const Fp8Format& format;
  QuantStyle style;
  /** scaleOrder 'weightFirst' (else 'tokenFirst') */
  bool weightFirst;
  int64_t T, H, topK, firstExpert, numLocal, inter;
};

/** moeFp8Math's checkLength: `moe fp8: <what> has N values, expected M` */
inline void moeFp8CheckLength(const char* what, int64_t n, int64_t expected) {
  if (n != expected) fail(ErrorKind::Shape, std::string("moe fp8: ") + what + " has " + std::to_string(n) + " values, expected " + std::to_string(expected));
}

inline MoeExpertsFp8Args checkMoeExpertsFp8(const Inputs& in, const Attrs& attrs) {
  const std::string op = "moeExpertsFp8Ptpc";
  const Fp8Format& format = fp8Format(attrs.string("format", "undefined"));
  const QuantStyle style = quantStyle(op, attrs);
  const Tensor& ids = input(in, 2, "ids", op, DType::I32);
  const Tensor& weights = input(in, 3, "weights", op, DType::BF16);
  for (size_t p : {0, 1, 4, 5, 6, 7}) {
    if (p >= in.size() || !in[p]) fail(ErrorKind::Shape, op + ": input " + std::to_string(p) + " is missing");
  }
  const Tensor &xq = *in[0], &sx = *in[1], &qGateUp = *in[4], &sGateUp = *in[5], &qDown = *in[6], &sDown = *in[7];
  const auto [T, H] = moeDims2(xq, op + " xq");
  const auto [idRows, topK] = moeDims2(ids, op + " ids");
  if (idRows != T || weights.shape() != ids.shape()) {
    fail(ErrorKind::Shape,
         op + ": xq " + shapeStr(xq.shape()) + ", ids " + shapeStr(ids.shape()) + " and weights " + shapeStr(weights.shape()) + " do not match");
  }
  const DType want = fp8DType(format);
  const std::pair<const Tensor*, const char*> fp8s[] = {{&xq, "xq"}, {&qGateUp, "qGateUp"}, {&qDown, "qDown"}};
  for (const auto& [t, name] : fp8s) {
    if (t->dtype() != want) fail(ErrorKind::DType, op + ": " + name + " is " + dtypeName(t->dtype()) + ", expected " + dtypeName(want));
  }
  const std::pair<const Tensor*, const char*> scales[] = {{&sx, "sx"}, {&sGateUp, "sGateUp"}, {&sDown, "sDown"}};
  for (const auto& [t, name] : scales) {
    if (t->dtype() != DType::F32) fail(ErrorKind::DType, op + ": " + name + " must be f32, got " + dtypeName(t->dtype()));
  }
  const int64_t firstExpert = attrs.integer("firstExpert");
  const int64_t numLocal = attrs.integer("numLocal");
  const int64_t inter = attrs.integer("intermediate");
  const std::string order = attrs.string("scaleOrder", "undefined");
  if (order != "weightFirst" && order != "tokenFirst") fail(ErrorKind::Attr, "moe fp8: unknown scale order '" + order + "'");
  moeFp8CheckLength("xq", xq.numel(), T * H);
  moeFp8CheckLength("x scales", sx.numel(), T);
  moeFp8CheckLength("routing ids", ids.numel(), T * topK);
  moeFp8CheckLength("routing weights", weights.numel(), T * topK);
  moeFp8CheckLength("stacked gate_up", qGateUp.numel(), numLocal * 2 * inter * H);
  moeFp8CheckLength("stacked gate_up scales", sGateUp.numel(), numLocal * 2 * inter);
  moeFp8CheckLength("stacked down", qDown.numel(), numLocal * H * inter);
  moeFp8CheckLength("stacked down scales", sDown.numel(), numLocal * H);
  return {xq, sx, ids, weights, qGateUp, sGateUp, qDown, sDown, format, style, order == "weightFirst", T, H, topK, firstExpert, numLocal, inter};
}

}  // namespace hcsp::ops
