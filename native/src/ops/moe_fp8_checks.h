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
  const Tensor &xq, &sx, &ids, &weights, &qGateUp, &sGateUp, &qDown, &sDown;
  const Fp8Format& format;
  QuantStyle style;
  /** scaleOrder 'weightFirst' (else 'tokenFirst') */
  bool weightFirst;
  int64_t T, H, topK, firstExpert, numLocal, inter;
};

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
  const auto [T, H] = dims2(xq, op + " xq");
  const auto [idRows, topK] = dims2(ids, op + " ids");
  checkRouting(op, "xq", xq, ids, weights, T, idRows);
  const DType want = fp8DType(format);
  const std::pair<const Tensor*, const char*> fp8s[] = {{&xq, "xq"}, {&qGateUp, "qGateUp"}, {&qDown, "qDown"}};
  for (const auto& [t, name] : fp8s) {
    if (t->dtype() != want) fail(ErrorKind::DType, op + ": " + name + " is " + dtypeName(t->dtype()) + ", expected " + dtypeName(want));
  }
  const std::pair<const Tensor*, const char*> scales[] = {{&sx, "sx"}, {&sGateUp, "sGateUp"}, {&sDown, "sDown"}};
  for (const auto& [t, name] : scales) {
    if (t->dtype() != DType::F32) fail(ErrorKind::DType, op + ": " + name + " must be f32, got " + dtypeName(t->dtype()));
  }
  const auto [firstExpert, numLocal, inter] = integers(attrs, {"firstExpert", "numLocal", "intermediate"});
  const std::string order = attrs.string("scaleOrder", "undefined");
  if (order != "weightFirst" && order != "tokenFirst") fail(ErrorKind::Attr, "moe fp8: unknown scale order '" + order + "'");
  checkLengths("moe fp8", {{"xq", xq.numel(), T * H},
                           {"x scales", sx.numel(), T},
                           {"routing ids", ids.numel(), T * topK},
                           {"routing weights", weights.numel(), T * topK},
                           {"stacked gate_up", qGateUp.numel(), numLocal * 2 * inter * H},
                           {"stacked gate_up scales", sGateUp.numel(), numLocal * 2 * inter},
                           {"stacked down", qDown.numel(), numLocal * H * inter},
                           {"stacked down scales", sDown.numel(), numLocal * H}});
  return {xq, sx, ids, weights, qGateUp, sGateUp, qDown, sDown, format, style, order == "weightFirst", T, H, topK, firstExpert, numLocal, inter};
}

}  // namespace hcsp::ops
