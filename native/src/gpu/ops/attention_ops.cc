// Launchers of the full-attention ops on the GPU devices (kernels/attention.cu), with the
// host kernels' checks and messages (host/kernels/attention_kernels.cc, which mirror
// reference/kernels/attentionKernels.ts). The checks the reference makes on data (a NaN block
// score, a malformed selection) run as kernels writing one flag per row; the launcher reads
// the flags back and reports the first row's, as the reference would.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "../../host/kernels/kernel_args.h"
#include "../gpu_op_registry.h"
#include "../kernels/attention.h"

namespace hcsp::gpu {
namespace {

/** the most bytes one launch's per-thread scratch may take; larger work runs in chunks */
constexpr int64_t SCRATCH_BUDGET = int64_t{256} << 20;

std::string num(int64_t v) { return std::to_string(v); }

/** a double as JavaScript prints it, near enough for an error message (shortest round trip) */
std::string jsNum(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e21) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

/** Math.floor(a / b) for b > 0 */
int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/** v / 2 as JavaScript prints it */
std::string halfText(int64_t v) {
  if (v % 2 == 0) return num(v / 2);
  return std::string(v < 0 ? "-" : "") + num((v < 0 ? -v : v) / 2) + ".5";
}

std::string dimsText(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) out += (i ? "," : "") + num(s[i]);
  return out;
}

/** rows per chunk so that rows x perRowBytes stays within the scratch budget (at least 1) */
int64_t chunkFor(int64_t total, int64_t perRowBytes) {
  const int64_t fit = SCRATCH_BUDGET / std::max<int64_t>(perRowBytes, 1);
  return std::max<int64_t>(1, std::min(total, fit));
}

/** n int32 flags back from the device (after the queued kernels) */
std::vector<int32_t> readFlags(const GpuContext& g, const Tensor& t, int64_t n) {
  std::vector<int32_t> host(static_cast<size_t>(n));
  g.rt.synchronize();
  if (n > 0) g.rt.copyOut(host.data(), t.raw(), static_cast<size_t>(n) * sizeof(int32_t));
  return host;
}

/** the RoPE tables' shape check of the kernels (attentionKernels.ts checkTables) */
void checkTables(const std::string& op, const Tensor& cos, const Tensor& sin, int64_t ropeDims, int64_t rows) {
  const bool odd = ropeDims % 2 != 0;
  const int64_t half = ropeDims / 2;
  if (odd || cos.rank() != 2 || sin.rank() != 2 || cos.dim(1) != half || sin.dim(1) != half || cos.dim(0) != rows || sin.dim(0) != rows) {
    fail(ErrorKind::Shape, op + ": RoPE tables are [" + dimsText(cos.shape()) + "]/[" + dimsText(sin.shape()) + "], expected [" + num(rows) + "," +
                               halfText(ropeDims) + "]");
  }
}

/** attentionMath.ts checkHeadLayout and the norm weight's length */
void checkHeadLayout(int64_t hd, int64_t stride, int64_t offset, int64_t ropeDims, const Tensor& w) {
  if (offset + hd > stride) {
    fail(ErrorKind::Attr, "attention: head at offset " + num(offset) + " with dim " + num(hd) + " overruns stride " + num(stride));
  }
  if (ropeDims % 2 != 0 || ropeDims > hd) fail(ErrorKind::Attr, "attention: ropeDims " + num(ropeDims) + " must be even and at most headDim " + num(hd));
  if (w.numel() != hd) fail(ErrorKind::Shape, "attention: norm weight has " + num(w.numel()) + " values, expected " + num(hd));
}

Outputs attnHeadNormRopeBf16(const Inputs& in, const GpuContext& g) {
  const std::string op = "attnHeadNormRopeBf16";
  const int64_t heads = g.attrs.integer("heads");
  const int64_t hd = g.attrs.integer("headDim");
  const int64_t stride = g.attrs.integer("stride");
  const int64_t offset = g.attrs.integer("offset");
  const int64_t ropeDims = g.attrs.integer("ropeDims");
  const Tensor& x = input(in, 0, "x", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  const Tensor& cos = input(in, 2, "cos", op, DType::BF16);
  const Tensor& sin = input(in, 3, "sin", op, DType::BF16);
  const int64_t rows = rows2d(x, "x", op, heads * stride);
  checkTables(op, cos, sin, ropeDims, rows);
  const float epsF = static_cast<float>(g.attrs.number("eps"));
  checkHeadLayout(hd, stride, offset, ropeDims, w);
  TensorPtr y = g.alloc(DType::BF16, {rows, heads * hd});
  HCSP_LAUNCH(g.rt, hcsp_attention_norm_rope_bf16, rows * heads, x.bf16(), w.bf16(), cos.bf16(), sin.bf16(), y->bf16(), rows, heads, hd, stride, offset,
              ropeDims, epsF, int64_t{1});
  return {y};
}

Outputs qsaBlockKeys(const Inputs& in, const GpuContext& g) {
  const std::string op = "qsaBlockKeys";
  const int64_t dh = g.attrs.integer("headDim");
  const int64_t ratio = g.attrs.integer("compressRatio");
  const int64_t ropeDims = g.attrs.integer("ropeDims");
  const Tensor& kRaw = input(in, 0, "kRaw", op, DType::BF16);
  const Tensor& w = input(in, 1, "w", op, DType::BF16);
  const Tensor& cos = input(in, 2, "cos", op, DType::BF16);
  const Tensor& sin = input(in, 3, "sin", op, DType::BF16);
  const int64_t T = rows2d(kRaw, "kRaw", op, dh);
  checkTables(op, cos, sin, ropeDims, T);
  const float epsF = static_cast<float>(g.attrs.number("eps"));
  if (ratio < 1) fail(ErrorKind::Attr, op + ": compressRatio " + num(ratio) + " must be a positive integer");
  const int64_t nb = T / ratio;
  checkHeadLayout(dh, dh, 0, ropeDims, w);
  TensorPtr kb = g.alloc(DType::BF16, {nb, dh});
  if (nb == 0 || dh == 0) return {kb};
  // pool_b = bf(fr(sum_j k_raw[b*ratio + j], j order) / ratio), then RMS1p + RoPE at position b * ratio
  TensorPtr pooled = g.alloc(DType::BF16, {nb, dh});
  HCSP_LAUNCH(g.rt, hcsp_attention_pool_blocks_bf16, nb * dh, kRaw.bf16(), pooled->bf16(), nb, dh, ratio);
  HCSP_LAUNCH(g.rt, hcsp_attention_norm_rope_bf16, nb, pooled->bf16(), w.bf16(), cos.bf16(), sin.bf16(), kb->bf16(), nb, int64_t{1}, dh, dh, int64_t{0}, ropeDims,
              epsF, ratio);
  return {kb};
}

Outputs qsaKeptCount(const Inputs& in, const GpuContext& g) {
  const std::string op = "qsaKeptCount";
  const int64_t ratio = g.attrs.integer("compressRatio");
  const Tensor& blocks = input(in, 0, "blocks", op, DType::I32);
  requireRank(blocks, 2, "blocks", op);
  if (ratio < 1) fail(ErrorKind::Attr, op + ": compressRatio " + num(ratio) + " must be a positive integer");
  const int64_t rows = blocks.dim(0), width = blocks.dim(1);
  TensorPtr kept = g.alloc(DType::I32, {rows});
  HCSP_LAUNCH(g.rt, hcsp_attention_kept_count, rows, blocks.data<int32_t>(), kept->data<int32_t>(), rows, width, ratio);
  return {kept};
}

Outputs qsaSelect(const Inputs& in, const GpuContext& g) {
  const std::string op = "qsaSelect";
  const double r0d = g.attrs.number("r0");
  const int64_t tokens = g.attrs.integer("tokens");
  const int64_t nh = g.attrs.integer("nHeads");
  const int64_t dh = g.attrs.integer("headDim");
  const int64_t ratio = g.attrs.integer("compressRatio");
  const int64_t width = g.attrs.integer("width");
  const Tensor& q = input(in, 0, "q", op, DType::BF16);
  const Tensor& kb = input(in, 1, "kb", op, DType::BF16);
  const int64_t rows = rows2d(q, "q", op, nh * dh);
  const int64_t nb = rows2d(kb, "kb", op, dh);
  if (ratio < 1) fail(ErrorKind::Attr, op + ": compressRatio " + num(ratio) + " must be a positive integer");
  if (width < 0) fail(ErrorKind::Attr, op + ": width " + num(width) + " must be a non-negative integer");
  if (nb != floorDiv(tokens, ratio)) fail(ErrorKind::Shape, op + ": kb has " + num(nb) + " blocks, " + num(tokens) + " tokens make " + num(floorDiv(tokens, ratio)));
  // rows at or past the last token (sequence-parallel padding) select nothing
  if (!(r0d >= 0 && r0d == std::floor(r0d))) {
    const double real = std::max(0.0, std::min(static_cast<double>(rows), static_cast<double>(tokens) - r0d));
    fail(ErrorKind::Attr, "QSA indexer: rows [" + jsNum(r0d) + ", " + jsNum(r0d + real) + ") are not a valid range");
  }
  const int64_t r0 = static_cast<int64_t>(r0d);
  const int64_t real = std::max<int64_t>(0, std::min<int64_t>(rows, tokens - r0));

  TensorPtr out = g.alloc(DType::I32, {rows, width});
  int32_t* blocks = out->data<int32_t>();
  HCSP_LAUNCH(g.rt, hcsp_attention_fill_i32, rows * width, blocks, rows * width, int32_t{-1});
  if (real == 0 || nb == 0) return {out};

  // divisor = fr(Math.sqrt(headDim))
  const float divisor = static_cast<float>(std::sqrt(static_cast<double>(dh)));
  TensorPtr nanBlock = g.alloc(DType::I32, {real});
  const int64_t chunk = chunkFor(real, nb * static_cast<int64_t>(sizeof(float)));
  TensorPtr scores = g.alloc(DType::F32, {chunk, nb});
  for (int64_t base = 0; base < real; base += chunk) {
    const int64_t n = std::min(chunk, real - base);
    HCSP_LAUNCH(g.rt, hcsp_attention_qsa_scores, n * nb, q.bf16(), kb.bf16(), scores->data<float>(), r0, base, n, nb, nh, dh, ratio, divisor);
    HCSP_LAUNCH(g.rt, hcsp_attention_qsa_select, n, scores->data<float>(), blocks, nanBlock->data<int32_t>(), r0, base, n, nb, width, ratio);
  }
  const std::vector<int32_t> nan = readFlags(g, *nanBlock, real);
  for (int64_t r = 0; r < real; r++) {
    if (nan[r] >= 0) fail(ErrorKind::Runtime, "QSA indexer: row " + num(r0 + r) + " block " + num(nan[r]) + " scored NaN");
  }
  return {out};
}

Outputs attnCausalQsa(const Inputs& in, const GpuContext& g) {
  const std::string op = "attnCausalQsa";
  const int64_t heads = g.attrs.integer("heads");
  const int64_t kvHeads = g.attrs.integer("kvHeads");
  const int64_t hd = g.attrs.integer("headDim");
  const int64_t width = g.attrs.integer("width");
  const Tensor& q = input(in, 0, "q", op, DType::BF16);
  const Tensor& k = input(in, 1, "k", op, DType::BF16);
  const Tensor& v = input(in, 2, "v", op, DType::BF16);
  const Tensor& blocksT = input(in, 3, "blocks", op, DType::I32);
  const int64_t T = rows2d(q, "q", op, heads * hd);
  if (rows2d(k, "k", op, kvHeads * hd) != T || rows2d(v, "v", op, kvHeads * hd) != T || rows2d(blocksT, "blocks", op, width) != T) {
    fail(ErrorKind::Shape, op + ": k/v/blocks have " + num(k.dim(0)) + "/" + num(v.dim(0)) + "/" + num(blocksT.dim(0)) + " rows, q has " + num(T));
  }
  const int64_t ratio = g.attrs.integer("compressRatio");
  const float scaleF = static_cast<float>(g.attrs.number("scale"));
  if (!(width > 0) || !(ratio > 0)) {
    fail(ErrorKind::Attr, "QSA selection: r0 0, rows " + num(T) + ", width " + num(width) + ", compressRatio " + num(ratio) + " are not valid");
  }
  if (kvHeads == 0 || heads % kvHeads != 0) fail(ErrorKind::Attr, "attention: heads " + num(heads) + " are not a multiple of KV heads " + num(kvHeads));
  const int32_t* blocks = blocksT.data<int32_t>();

  // qsaSelection.ts qsaKeptPositions's checks, every row; the first failing row is reported
  if (T > 0) {
    TensorPtr bad = g.alloc(DType::I32, {T});
    HCSP_LAUNCH(g.rt, hcsp_attention_check_selection, T, blocks, bad->data<int32_t>(), T, width, ratio);
    const std::vector<int32_t> flags = readFlags(g, *bad, T);
    for (int64_t row = 0; row < T; row++) {
      const int64_t i = flags[row];
      if (i < 0) continue;
      int32_t entry = 0;
      g.rt.copyOut(&entry, blocks + row * width + i, sizeof entry);
      const int64_t nb = (row + 1) / ratio;
      const int64_t n = std::min(width, nb);
      if (i < n) {
        fail(ErrorKind::Shape, "QSA selection: row " + num(row) + " entry " + num(i) + " is block " + num(entry) + ", expected ascending blocks in [0, " + num(nb) + ")");
      }
      fail(ErrorKind::Shape, "QSA selection: row " + num(row) + " entry " + num(i) + " is " + num(entry) + ", expected -1 past its " + num(n) + " blocks");
    }
  }

  TensorPtr out = g.alloc(DType::BF16, {T, heads * hd});
  if (T == 0 || heads == 0 || hd == 0) return {out};
  // each (row, head) keeps its scores/probabilities, at most min(T, width * ratio + ratio - 1) of them
  const int64_t keptMax = std::min(T, (width + 1) * ratio);
  const int64_t items = T * heads;
  const int64_t chunk = chunkFor(items, keptMax * static_cast<int64_t>(sizeof(float)));
  TensorPtr p = g.alloc(DType::F32, {chunk, keptMax});
  for (int64_t base = 0; base < items; base += chunk) {
    const int64_t n = std::min(chunk, items - base);
    HCSP_LAUNCH(g.rt, hcsp_attention_causal_qsa, n, q.bf16(), k.bf16(), v.bf16(), blocks, out->bf16(), p->data<float>(), heads, kvHeads, hd, width, ratio, scaleF,
                base, n);
  }
  return {out};
}

Outputs attnOutputGate(const Inputs& in, const GpuContext& g) {
  const std::string op = "attnOutputGate";
  const int64_t heads = g.attrs.integer("heads");
  const int64_t hd = g.attrs.integer("headDim");
  const Tensor& o = input(in, 0, "o", op, DType::BF16);
  const Tensor& qg = input(in, 1, "qg", op, DType::BF16);
  const int64_t T = rows2d(o, "o", op, heads * hd);
  if (rows2d(qg, "qg", op, heads * 2 * hd) != T) fail(ErrorKind::Shape, op + ": qg has " + num(qg.dim(0)) + " rows, o has " + num(T));
  TensorPtr y = g.alloc(DType::BF16, {T, heads * hd});
  HCSP_LAUNCH(g.rt, hcsp_attention_output_gate, T * heads * hd, o.bf16(), qg.bf16(), y->bf16(), T * heads, hd);
  return {y};
}

}  // namespace

HCSP_GPU_OP(attnHeadNormRopeBf16, attnHeadNormRopeBf16);
HCSP_GPU_OP(qsaBlockKeys, qsaBlockKeys);
HCSP_GPU_OP(qsaKeptCount, qsaKeptCount);
HCSP_GPU_OP(qsaSelect, qsaSelect);
HCSP_GPU_OP(attnCausalQsa, attnCausalQsa);
HCSP_GPU_OP(attnOutputGate, attnOutputGate);

}  // namespace hcsp::gpu
