// The GEMM ops' argument checks (`linear`: reference/kernels/basicKernels.ts; `fp8LinearPtpc`:
// quantKernels.ts), shared by the host kernels (host/gemm/linear_kernel.cc,
// fp8_linear_kernel.cc) and the GPU launchers (gpu/ops/gemm_ops.cc): each check* reads the
// attributes and the inputs' metadata (shape, dtype; never data) in the reference's order, fails
// with the reference's messages, and returns the validated geometry.
#pragma once
#include <cstdint>
#include <string>

#include "../host/fp8_format.h"
#include "../host/kernels/kernel_args.h"
#include "basic_checks.h"

namespace hcsp::ops {

struct LinearArgs {
  const Tensor &x, &w;
  /** y [rows, outF] = x [rows, inF] w [outF, inF]^T */
  int64_t rows, inF, outF;
};

inline LinearArgs checkLinear(const Inputs& in, const Attrs&) {
  const std::string op = "linear";
  const auto [x, w] = inputs(in, op, {{"x", DType::BF16}, {"w", DType::BF16}});
  const auto [rows, inF] = dims2(x, "linear x");
  const auto [outF, wIn] = dims2(w, "linear w");
  if (wIn != inF) fail(ErrorKind::Shape, "linear: x is " + shapeStr(x.shape()) + " but w is " + shapeStr(w.shape()) + " (in features differ)");
  return {x, w, rows, inF, outF};
}

/** quantKernels.ts fp8Rows: a 2-D fp8 matrix in `format` and its f32 scale per row */
inline int64_t fp8Rows(const Inputs& in, size_t qPort, const std::string& what, const Fp8Format& format) {
  const TensorPtr q = qPort < in.size() ? in[qPort] : nullptr;
  const TensorPtr s = qPort + 1 < in.size() ? in[qPort + 1] : nullptr;
  if (!q || !s) fail(ErrorKind::Shape, what + " and its scales are required");
  const std::string got = std::string(dtypeName(q->dtype())) + " " + shapeStr(q->shape());
  if (q->rank() != 2) fail(ErrorKind::Shape, what + " must be a 2-D " + dtypeName(fp8DType(format)) + " tensor, got " + got);
  if (fp8DType(fp8FormatOfDType(q->dtype())) != fp8DType(format))
    fail(ErrorKind::DType, what + " must be a 2-D " + dtypeName(fp8DType(format)) + " tensor, got " + got);
  const int64_t rows = q->dim(0);
  if (s->dtype() != DType::F32 || s->rank() != 1 || s->dim(0) != rows) {
    fail(s->dtype() != DType::F32 ? ErrorKind::DType : ErrorKind::Shape,
         what + " scales must be f32 [" + std::to_string(rows) + "], got " + dtypeName(s->dtype()) + " " + shapeStr(s->shape()));
  }
  return rows;
}

struct Fp8LinearArgs {
  const Tensor &q, &sx, &qW, &sw;
  const Fp8Format& format;
  int64_t rows, inF, outF;
  /** scaleOrder 'weightFirst' (else 'tokenFirst') */
  bool weightFirst;
};

inline Fp8LinearArgs checkFp8LinearPtpc(const Inputs& in, const Attrs& attrs) {
  // String(undefined) in the reference's messages when an attribute is absent
  const Fp8Format& format = fp8Format(attrs.string("format", "undefined"));
  const int64_t rows = fp8Rows(in, 0, "fp8LinearPtpc q", format);
  const int64_t outF = fp8Rows(in, 2, "fp8LinearPtpc qW", format);
  const Tensor &q = *in[0], &sx = *in[1], &qW = *in[2], &sw = *in[3];
  const int64_t inF = q.dim(1);
  if (qW.dim(1) != inF) fail(ErrorKind::Shape, "fp8LinearPtpc: q has " + std::to_string(inF) + " columns, qW " + std::to_string(qW.dim(1)));
  const std::string order = attrs.string("scaleOrder", "undefined");
  if (order != "weightFirst" && order != "tokenFirst") fail(ErrorKind::Attr, "fp8LinearPtpc: unknown scale order '" + order + "'");
  return {q, sx, qW, sw, format, rows, inF, outF, order == "weightFirst"};
}

}  // namespace hcsp::ops
