// The full-attention ops' argument checks (reference/kernels/attentionKernels.ts with
// attentionMath.ts, qsaIndexer.ts and qsaSelection.ts), shared by the host kernels
// (host/kernels/attention_kernels.cc) and the GPU launchers (gpu/ops/attention_ops.cc): each
// check* reads the op's attributes and its inputs' metadata (shape, dtype; never data) in the
// reference's order, fails with the reference's messages, and returns the validated geometry.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "../host/kernels/kernel_args.h"
#include "topk_ties_checks.h"

namespace hcsp::ops {

namespace attn_text {
inline std::string num(int64_t v) { return std::to_string(v); }

/** a double as JavaScript prints it, near enough for an error message (shortest round trip) */
inline std::string jsNum(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e21) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

/** v / 2 as JavaScript prints it */
inline std::string halfText(int64_t v) {
  if (v % 2 == 0) return num(v / 2);
  return std::string(v < 0 ? "-" : "") + num((v < 0 ? -v : v) / 2) + ".5";
}

inline std::string dimsText(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) out += (i ? "," : "") + num(s[i]);
  return out;
}
}  // namespace attn_text

/** Math.floor(a / b) for b > 0 */
inline int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/** the RoPE tables' shape check of the kernels (attentionKernels.ts checkTables) */
inline void checkTables(const std::string& op, const Tensor& cos, const Tensor& sin, int64_t ropeDims, int64_t rows) {
  using namespace attn_text;
  const bool odd = ropeDims % 2 != 0;
  const int64_t half = ropeDims / 2;
  if (odd || cos.rank() != 2 || sin.rank() != 2 || cos.dim(1) != half || sin.dim(1) != half || cos.dim(0) != rows || sin.dim(0) != rows) {
    fail(ErrorKind::Shape,
         op + ": RoPE tables are [" + dimsText(cos.shape()) + "]/[" + dimsText(sin.shape()) + "], expected [" + num(rows) + "," + halfText(ropeDims) + "]");
  }
}

/** the reference's check of a compressRatio attribute */
inline void checkCompressRatio(const std::string& op, int64_t ratio) {
  if (ratio < 1) fail(ErrorKind::Attr, op + ": compressRatio " + attn_text::num(ratio) + " must be a positive integer");
}

/** the four bf16 inputs of the norm + RoPE ops: the rows, the norm weight and the RoPE tables */
inline auto normRopeInputs(const Inputs& in, const std::string& op, const char* rowsName) {
  return inputs(in, op, {{rowsName, DType::BF16}, {"w", DType::BF16}, {"cos", DType::BF16}, {"sin", DType::BF16}});
}

/** attentionMath.ts checkHeadLayout and the norm weight's length */
inline void checkHeadLayout(int64_t hd, int64_t stride, int64_t offset, int64_t ropeDims, const Tensor& w) {
  using attn_text::num;
  // (a negative offset, which the op's attribute rule refuses, would read before the row; the
  // reference reads undefined there, so it is refused here instead)
  if (offset < 0 || offset + hd > stride) {
    fail(ErrorKind::Attr, "attention: head at offset " + num(offset) + " with dim " + num(hd) + " overruns stride " + num(stride));
  }
  if (ropeDims % 2 != 0 || ropeDims > hd) fail(ErrorKind::Attr, "attention: ropeDims " + num(ropeDims) + " must be even and at most headDim " + num(hd));
  if (w.numel() != hd) fail(ErrorKind::Shape, "attention: norm weight has " + num(w.numel()) + " values, expected " + num(hd));
}

// ---- attnHeadNormRopeBf16 ----------------------------------------------------------------

struct HeadNormRopeArgs {
  const Tensor &x, &w, &cos, &sin;
  int64_t rows, heads, hd, stride, offset, ropeDims;
  float epsF;
};

inline HeadNormRopeArgs checkHeadNormRope(const Inputs& in, const Attrs& attrs) {
  const std::string op = "attnHeadNormRopeBf16";
  const auto [heads, hd, stride, offset, ropeDims] = integers(attrs, {"heads", "headDim", "stride", "offset", "ropeDims"});
  const auto [x, w, cos, sin] = normRopeInputs(in, op, "x");
  const int64_t rows = rows2d(x, "x", op, heads * stride);
  checkTables(op, cos, sin, ropeDims, rows);
  const double eps = attrs.number("eps");
  checkHeadLayout(hd, stride, offset, ropeDims, w);
  return {x, w, cos, sin, rows, heads, hd, stride, offset, ropeDims, static_cast<float>(eps)};
}

// ---- qsaBlockKeys ------------------------------------------------------------------------

struct BlockKeysArgs {
  const Tensor &kRaw, &w, &cos, &sin;
  int64_t T, dh, ratio, ropeDims, nb;
  float epsF;
};

inline BlockKeysArgs checkBlockKeys(const Inputs& in, const Attrs& attrs) {
  const std::string op = "qsaBlockKeys";
  const auto [dh, ratio, ropeDims] = integers(attrs, {"headDim", "compressRatio", "ropeDims"});
  const auto [kRaw, w, cos, sin] = normRopeInputs(in, op, "kRaw");
  const int64_t T = rows2d(kRaw, "kRaw", op, dh);
  checkTables(op, cos, sin, ropeDims, T);
  const double eps = attrs.number("eps");
  checkCompressRatio(op, ratio);
  const int64_t nb = T / ratio;
  checkHeadLayout(dh, dh, 0, ropeDims, w);
  return {kRaw, w, cos, sin, T, dh, ratio, ropeDims, nb, static_cast<float>(eps)};
}

// ---- qsaKeptCount ------------------------------------------------------------------------

struct KeptCountArgs {
  const Tensor& blocks;
  int64_t rows, width, ratio;
};

inline KeptCountArgs checkKeptCount(const Inputs& in, const Attrs& attrs) {
  const std::string op = "qsaKeptCount";
  const int64_t ratio = attrs.integer("compressRatio");
  const Tensor& blocks = input(in, 0, "blocks", op, DType::I32);
  requireRank(blocks, 2, "blocks", op);
  checkCompressRatio(op, ratio);
  return {blocks, blocks.dim(0), blocks.dim(1), ratio};
}

// ---- qsaSelect ---------------------------------------------------------------------------

struct QsaSelectArgs {
  const Tensor &q, &kb;
  int64_t rows, nb, nh, dh, ratio, width, tokens;
  /** the first row's position, and the rows before the last token (the rest are SP padding) */
  int64_t r0, real;
  /** ties=torch-cpu: the blocks torch.topk picks (numerics/torch_cpu_topk.h); false: ties to the lower block */
  bool torchCpuTies;
};

inline QsaSelectArgs checkQsaSelect(const Inputs& in, const Attrs& attrs) {
  using namespace attn_text;
  const std::string op = "qsaSelect";
  const double r0d = attrs.number("r0");
  const auto [tokens, nh, dh, ratio, width] = integers(attrs, {"tokens", "nHeads", "headDim", "compressRatio", "width"});
  const auto [q, kb] = inputs(in, op, {{"q", DType::BF16}, {"kb", DType::BF16}});
  const int64_t rows = rows2d(q, "q", op, nh * dh);
  const int64_t nb = rows2d(kb, "kb", op, dh);
  checkCompressRatio(op, ratio);
  if (width < 0) fail(ErrorKind::Attr, op + ": width " + num(width) + " must be a non-negative integer");
  if (nb != floorDiv(tokens, ratio))
    fail(ErrorKind::Shape, op + ": kb has " + num(nb) + " blocks, " + num(tokens) + " tokens make " + num(floorDiv(tokens, ratio)));
  // rows at or past the last token (sequence-parallel padding) select nothing
  if (!(r0d >= 0 && r0d == std::floor(r0d))) {
    const double real = std::max(0.0, std::min(static_cast<double>(rows), static_cast<double>(tokens) - r0d));
    fail(ErrorKind::Attr, "QSA indexer: rows [" + jsNum(r0d) + ", " + jsNum(r0d + real) + ") are not a valid range");
  }
  const int64_t r0 = static_cast<int64_t>(r0d);
  const int64_t real = std::max<int64_t>(0, std::min<int64_t>(rows, tokens - r0));
  return {q, kb, rows, nb, nh, dh, ratio, width, tokens, r0, real, checkTorchCpuTies(attrs, op)};
}

/** the reference's error for a NaN block score (position row, block b) */
[[noreturn]] inline void failQsaNan(int64_t row, int64_t b) {
  fail(ErrorKind::Runtime, "QSA indexer: row " + attn_text::num(row) + " block " + attn_text::num(b) + " scored NaN");
}

// ---- attnCausalQsa -----------------------------------------------------------------------

struct CausalQsaArgs {
  const Tensor &q, &k, &v, &blocks;
  int64_t T, heads, kvHeads, hd, width, ratio;
  float scaleF;
  /** the 'hf-eager' contract: HF's eager attention roundings (attentionMath.ts attnOverKeys) */
  bool eagerSoftmax;
};

inline CausalQsaArgs checkCausalQsa(const Inputs& in, const Attrs& attrs) {
  using attn_text::num;
  const std::string op = "attnCausalQsa";
  const auto [heads, kvHeads, hd, width] = integers(attrs, {"heads", "kvHeads", "headDim", "width"});
  const auto [q, k, v, blocksT] = inputs(in, op, {{"q", DType::BF16}, {"k", DType::BF16}, {"v", DType::BF16}, {"blocks", DType::I32}});
  const int64_t T = rows2d(q, "q", op, heads * hd);
  if (rows2d(k, "k", op, kvHeads * hd) != T || rows2d(v, "v", op, kvHeads * hd) != T || rows2d(blocksT, "blocks", op, width) != T) {
    fail(ErrorKind::Shape, op + ": k/v/blocks have " + num(k.dim(0)) + "/" + num(v.dim(0)) + "/" + num(blocksT.dim(0)) + " rows, q has " + num(T));
  }
  const int64_t ratio = attrs.integer("compressRatio");
  const float scaleF = static_cast<float>(attrs.number("scale"));
  if (!(width > 0) || !(ratio > 0)) {
    fail(ErrorKind::Attr, "QSA selection: r0 0, rows " + num(T) + ", width " + num(width) + ", compressRatio " + num(ratio) + " are not valid");
  }
  if (kvHeads == 0 || heads % kvHeads != 0) fail(ErrorKind::Attr, "attention: heads " + num(heads) + " are not a multiple of KV heads " + num(kvHeads));
  return {q, k, v, blocksT, T, heads, kvHeads, hd, width, ratio, scaleF, attrs.boolean("eagerSoftmax", false)};
}

/**
 * qsaSelection.ts qsaKeptPositions's error for row's entry i (value entry) of a selection of
 * width entries: within the row's min(width, (row + 1) / ratio) blocks it must be an ascending
 * block, past them -1
 */
[[noreturn]] inline void failKeptEntry(int64_t row, int64_t i, int64_t entry, int64_t width, int64_t ratio) {
  using attn_text::num;
  const int64_t nb = (row + 1) / ratio;
  const int64_t n = std::min(width, nb);
  if (i < n) {
    fail(ErrorKind::Shape,
         "QSA selection: row " + num(row) + " entry " + num(i) + " is block " + num(entry) + ", expected ascending blocks in [0, " + num(nb) + ")");
  }
  fail(ErrorKind::Shape, "QSA selection: row " + num(row) + " entry " + num(i) + " is " + num(entry) + ", expected -1 past its " + num(n) + " blocks");
}

// ---- attnOutputGate ----------------------------------------------------------------------

struct OutputGateArgs {
  const Tensor &o, &qg;
  int64_t T, heads, hd;
};

inline OutputGateArgs checkOutputGate(const Inputs& in, const Attrs& attrs) {
  const std::string op = "attnOutputGate";
  const auto [heads, hd] = integers(attrs, {"heads", "headDim"});
  const auto [o, qg] = inputs(in, op, {{"o", DType::BF16}, {"qg", DType::BF16}});
  const int64_t T = rows2d(o, "o", op, heads * hd);
  if (rows2d(qg, "qg", op, heads * 2 * hd) != T) fail(ErrorKind::Shape, op + ": qg has " + attn_text::num(qg.dim(0)) + " rows, o has " + attn_text::num(T));
  return {o, qg, T, heads, hd};
}

}  // namespace hcsp::ops
