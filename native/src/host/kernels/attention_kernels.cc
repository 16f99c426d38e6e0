// Host kernels of the full-attention ops (core graph/ops/attentionOps.ts), as
// reference/kernels/attentionKernels.ts with the math of layers/attention/attentionMath.ts,
// qsaIndexer.ts and qsaSelection.ts: the per-head RMS1p norm + NeoX RoPE, the QSA block
// keys, kept counts and block selection, causal GQA attention over each row's kept keys,
// and the sigmoid output gate.
//
// Rounding, step for step as the reference: where it rounds with Math.fround the step is a
// float operation here; where JavaScript computes an expression of two operations without
// rounding in between (the dot products fr(dot + q*k)) it is done
// in double and rounded once, as JavaScript does. A single double operation on two floats
// rounded to float equals the float operation (products of floats are exact in double; sums
// and quotients round innocuously twice), so those are written as float operations.
//
// The dot products fr(dot + q*k) of bf16 values run in float when every product of the two
// operands is exact in float (checked per call from the operands' exponent ranges: always so
// for activations of ordinary magnitude); otherwise in double. Either way each dot is one
// sequential sum in d order: the kernels vectorize across keys (or blocks), each lane its
// own key, over the keys laid out in panels of 64 positions (a KV head's keys once per call,
// read in place by the rows that keep every key; a row that drops blocks gathers its kept
// keys into panels of its own), so no sum is reordered. The value sums vectorize across d,
// and the softmax's exps run expF32's own steps per lane (attention_simd.h).
//
// Two reductions follow the canonical order v1 (numerics/canonical_sum.h), not a sequential
// one: the head norm's sum of squares (canonical_sumsq.h, SIMD by the process's ISA) and the
// softmax's l over the kept keys (canonical::sumTerms over p_i, i the key's list index).
//
// Rows are split over the pool (attention and the selection: rows paired small with large so
// the causal triangle's ranges cost alike); each output is computed by one thread in the
// reference's order, so the thread count never changes a result. Errors that the reference
// raises row by row are checked (or collected) in row order, so the first one is reported.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../cpu_features.h"
#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"
#include "../../numerics/torch_cpu_topk.h"
#include "attention_simd.h"
#include "canonical_sumsq.h"
#include "kernel_args.h"
#include "../../ops/attention_checks.h"

namespace hcsp {
namespace {

using attn::PANEL;
using attn::sums;

constexpr float NEG_INF = -std::numeric_limits<float>::infinity();

/** scratch memory held outside tensors, counted against the device's limit */
struct ScratchGuard {
  int64_t bytes;
  explicit ScratchGuard(int64_t b) : bytes(b) { reserveScratch(bytes); }
  ~ScratchGuard() { releaseScratch(bytes); }
  ScratchGuard(const ScratchGuard&) = delete;
  ScratchGuard& operator=(const ScratchGuard&) = delete;
};

/** rows per parallel task for rows of about `work` element operations each */
int64_t grainFor(int64_t work) { return work >= 32768 ? 1 : 32768 / (work < 1 ? 1 : work); }

/** item i of [0, n) -> row: 0, n-1, 1, n-2, ... (contiguous item ranges mix short and long causal rows) */
inline int64_t zigzagRow(int64_t i, int64_t n) { return (i & 1) ? n - 1 - (i >> 1) : (i >> 1); }

// ---- exactness of bf16 x bf16 products in float --------------------------------------

/** The range of E' = max(exponent field, 1) over the nonzero finite values of a bf16 array. */
struct ExpRange {
  int lo = 1 << 20;
  int hi = -(1 << 20);
};

ExpRange expRange(const uint16_t* x, int64_t n) {
  ExpRange r;
  for (int64_t i = 0; i < n; i++) {
    const int e = (x[i] >> 7) & 0xff;
    if (e == 0xff || (x[i] & 0x7fff) == 0) continue;  // inf/NaN products match in float; zeros are exact
    const int ee = e == 0 ? 1 : e;
    r.lo = std::min(r.lo, ee);
    r.hi = std::max(r.hi, ee);
  }
  return r;
}

/**
 * Whether every product of a value of a with a value of b is exact in float: a bf16 value is
 * M * 2^(E' - 134) with M < 2^8, so a product is M * 2^(E'a + E'b - 268) with M < 2^16:
 * representable (down to the subnormal 2^-149) when E'a + E'b >= 119, below 2^128 when
 * E'a + E'b <= 380. Then fr(dot + q*k) = dot + q*k in float.
 */
bool productsExact(const ExpRange& a, const ExpRange& b) {
  if (a.lo > a.hi || b.lo > b.hi) return true;
  return a.lo + b.lo >= 119 && a.hi + b.hi <= 380;
}

/** bf16 rows src[r * srcStride + c] (c < cols, r < rows) -> the panel layout dst[(r / PANEL) * cols * PANEL + c * PANEL + r % PANEL], padding zero */
void toPanels(const uint16_t* src, int64_t rows, int64_t cols, int64_t srcStride, float* dst) {
  const int64_t panels = (rows + PANEL - 1) / PANEL;
  std::fill(dst, dst + panels * cols * PANEL, 0.0f);
  for (int64_t r = 0; r < rows; r++) {
    float* d = dst + (r / PANEL) * cols * PANEL + r % PANEL;
    const uint16_t* s = src + r * srcStride;
    for (int64_t c = 0; c < cols; c++) d[c * PANEL] = bf16ToF32(s[c]);
  }
}

inline int64_t panelFloats(int64_t rows, int64_t cols) { return (rows + PANEL - 1) / PANEL * PANEL * cols; }

/**
 * One row's kept keys (its selected blocks, then the tail of its partial block) from the bf16
 * keys (key j's cols values at src + j * rowStride) into the panel layout dst, in list order,
 * a block's keys at a time (split where a destination panel ends). Blocks of 4 keys are
 * transposed 8 columns at a time with SSE2 (bf16 -> f32 is a 16-bit shift: exact).
 */
void gatherBlocks(const uint16_t* src, int64_t rowStride, int64_t cols, int64_t ratio, const int32_t* blocks, int64_t nSel, int64_t tailBlock, int64_t tailLen,
                  float* dst) {
  int64_t i = 0;
  auto copy = [&](int64_t block, int64_t len) {
    const uint16_t* rows = src + block * ratio * rowStride;
    for (int64_t done = 0; done < len;) {
      const int64_t lane = i % PANEL;
      const int64_t piece = std::min(len - done, PANEL - lane);
      float* d = dst + (i / PANEL) * cols * PANEL + lane;
      const uint16_t* r = rows + done * rowStride;
      int64_t c = 0;
      if (piece == 4) {
        const __m128i zero = _mm_setzero_si128();
        for (; c + 8 <= cols; c += 8) {
          const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + c));
          const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + rowStride + c));
          const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 2 * rowStride + c));
          const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 3 * rowStride + c));
          const __m128i a0 = _mm_unpacklo_epi16(r0, r1), a1 = _mm_unpacklo_epi16(r2, r3);  // columns 0..3
          const __m128i b0 = _mm_unpackhi_epi16(r0, r1), b1 = _mm_unpackhi_epi16(r2, r3);  // columns 4..7
          const __m128i q[4] = {_mm_unpacklo_epi32(a0, a1), _mm_unpackhi_epi32(a0, a1), _mm_unpacklo_epi32(b0, b1), _mm_unpackhi_epi32(b0, b1)};
          for (int h = 0; h < 4; h++) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (c + 2 * h) * PANEL), _mm_unpacklo_epi16(zero, q[h]));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (c + 2 * h + 1) * PANEL), _mm_unpackhi_epi16(zero, q[h]));
          }
        }
      }
      for (; c < cols; c++)
        for (int64_t u = 0; u < piece; u++) d[c * PANEL + u] = bf16ToF32(r[u * rowStride + c]);
      done += piece;
      i += piece;
    }
  };
  // the next block's lines are fetched while this one is copied (the blocks lie anywhere)
  auto prefetch = [&](int64_t block) {
    for (int64_t u = 0; u < ratio; u++) {
      const char* p = reinterpret_cast<const char*>(src + (block * ratio + u) * rowStride);
      for (int64_t off = 0; off < static_cast<int64_t>(cols * sizeof(uint16_t)); off += 64) __builtin_prefetch(p + off);
    }
  };
  for (int64_t b = 0; b < nSel; b++) {
    if (b + 1 < nSel) prefetch(blocks[b + 1]);
    copy(blocks[b], ratio);
  }
  if (tailLen > 0) copy(tailBlock, tailLen);
}

// ---- per-head RMS1p norm + NeoX RoPE (attentionMath.ts attnHeadNormRopeBf16) -----------

struct NormRope {
  int64_t heads, hd, stride, offset, ropeDims;
  const float* onePlusW;  // fr(1 + w[d])
  float epsF;
  const uint16_t* cos;
  const uint16_t* sin;
  Isa isa;  // the sum of squares' vector path
};

/**
 * One head: x (bf16, hd values) -> y (bf16, hd values), table row tb = position * half.
 * ss = sum_d x*x in canonical order v1 (each add one rounding: bf16 squares are exact);
 * r = rsqrt(fr(fr(ss / hd) + eps)); n[d] = bf(fr(x*r) * fr(1 + w)); then the rotation.
 */
inline void normRopeHead(const NormRope& p, const uint16_t* x, int64_t tb, float* n, uint16_t* y) {
  const int64_t hd = p.hd, half = p.ropeDims / 2;
  const float ss = canonical::sumSquaresBf16(p.isa, x, hd);
  const float mean = static_cast<float>(static_cast<double>(ss) / static_cast<double>(hd));
  const float r = fp32::rsqrtF32(mean + p.epsF);
  for (int64_t d = 0; d < hd; d++) n[d] = roundBf16((bf16ToF32(x[d]) * r) * p.onePlusW[d]);
  for (int64_t i = 0; i < half; i++) {
    const float c = bf16ToF32(p.cos[tb + i]);
    const float s = bf16ToF32(p.sin[tb + i]);
    const float x1 = n[i];
    const float x2 = n[i + half];
    // bf16 x bf16 is exact; one rounding to float, then to bf16
    y[i] = f32ToBf16(roundBf16(x1 * c) + roundBf16(-x2 * s));
    y[i + half] = f32ToBf16(roundBf16(x2 * c) + roundBf16(x1 * s));
  }
  for (int64_t d = p.ropeDims; d < hd; d++) y[d] = f32ToBf16(n[d]);
}

std::vector<float> onePlus(const Tensor& w) {
  std::vector<float> out(w.numel());
  for (int64_t d = 0; d < w.numel(); d++) out[d] = 1.0f + bf16ToF32(w.bf16()[d]);
  return out;
}

Outputs attnHeadNormRopeBf16(const Inputs& in, const KernelContext& ctx) {
  const ops::HeadNormRopeArgs a = ops::checkHeadNormRope(in, ctx.attrs);
  const int64_t rows = a.rows, heads = a.heads, hd = a.hd, stride = a.stride, offset = a.offset, ropeDims = a.ropeDims;
  const Tensor& x = a.x;
  const std::vector<float> opw = onePlus(a.w);
  const NormRope p{heads, hd, stride, offset, ropeDims, opw.data(), a.epsF, a.cos.bf16(), a.sin.bf16(), gemmIsa()};
  TensorPtr y = makeTensor(DType::BF16, {rows, heads * hd});
  const uint16_t* xd = x.bf16();
  uint16_t* yd = y->bf16();
  const int64_t half = ropeDims / 2;
  ctx.pool.parallelFor(rows, grainFor(heads * hd * 4), [&](int64_t r0, int64_t r1) {
    std::vector<float> n(hd);
    for (int64_t r = r0; r < r1; r++) {
      for (int64_t h = 0; h < heads; h++) normRopeHead(p, xd + (r * heads + h) * stride + offset, r * half, n.data(), yd + (r * heads + h) * hd);
    }
  });
  return {y};
}

// ---- QSA block keys (qsaIndexer.ts qsaBlockKeys) -------------------------------------

Outputs qsaBlockKeys(const Inputs& in, const KernelContext& ctx) {
  const ops::BlockKeysArgs a = ops::checkBlockKeys(in, ctx.attrs);
  const int64_t dh = a.dh, ratio = a.ratio, ropeDims = a.ropeDims, nb = a.nb;
  const std::vector<float> opw = onePlus(a.w);
  const NormRope p{1, dh, dh, 0, ropeDims, opw.data(), a.epsF, a.cos.bf16(), a.sin.bf16(), gemmIsa()};
  TensorPtr kb = makeTensor(DType::BF16, {nb, dh});
  const uint16_t* kd = a.kRaw.bf16();
  uint16_t* out = kb->bf16();
  const int64_t half = ropeDims / 2;
  const float ratioF = static_cast<float>(ratio);
  ctx.pool.parallelFor(nb, grainFor(dh * (ratio + 4)), [&](int64_t b0, int64_t b1) {
    std::vector<uint16_t> pooled(dh);
    std::vector<float> n(dh);
    for (int64_t b = b0; b < b1; b++) {
      // pool_b[c] = bf(fr(sum_j k_raw[b*ratio + j][c], j order) / ratio)
      for (int64_t c = 0; c < dh; c++) {
        float sum = 0.0f;
        for (int64_t j = 0; j < ratio; j++) sum = sum + bf16ToF32(kd[(b * ratio + j) * dh + c]);
        pooled[c] = f32ToBf16(sum / ratioF);
      }
      // roped at position b * ratio
      normRopeHead(p, pooled.data(), b * ratio * half, n.data(), out + b * dh);
    }
  });
  return {kb};
}

// ---- kept counts (attentionKernels.ts qsaKeptCount) -----------------------------------

Outputs qsaKeptCount(const Inputs& in, const KernelContext& ctx) {
  const ops::KeptCountArgs a = ops::checkKeptCount(in, ctx.attrs);
  const int64_t rows = a.rows, width = a.width, ratio = a.ratio;
  const int32_t* b = a.blocks.data<int32_t>();
  TensorPtr kept = makeTensor(DType::I32, {rows});
  int32_t* k = kept->data<int32_t>();
  for (int64_t t = 0; t < rows; t++) {
    int64_t listed = 0;
    for (int64_t i = 0; i < width; i++) listed += b[t * width + i] >= 0 ? 1 : 0;
    k[t] = static_cast<int32_t>(listed * ratio + (t + 1 - ((t + 1) / ratio) * ratio));
  }
  return {kept};
}

// ---- QSA block selection (qsaIndexer.ts qsaBlockScores + qsaSelectBlocks) -------------

/** Math.max(x, 0): NaN stays NaN, -0 becomes +0 */
inline float max0(float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }

Outputs qsaSelect(const Inputs& in, const KernelContext& ctx) {
  const ops::QsaSelectArgs a = ops::checkQsaSelect(in, ctx.attrs);
  const int64_t rows = a.rows, nb = a.nb, nh = a.nh, dh = a.dh, ratio = a.ratio, width = a.width, r0 = a.r0, real = a.real;
  const Tensor& q = a.q;
  const Tensor& kbT_ = a.kb;

  TensorPtr out = makeTensor(DType::I32, {rows, width});
  int32_t* blocks = out->data<int32_t>();
  std::fill(blocks, blocks + rows * width, -1);
  if (real == 0 || nb == 0) return {out};

  // the block keys in panels of PANEL blocks (exact in float)
  ScratchGuard guard(static_cast<int64_t>(sizeof(float)) * (panelFloats(nb, dh) + ctx.pool.size() * (nh * dh + (nh + 2) * nb)));
  std::vector<float> kbP(panelFloats(nb, dh));
  const uint16_t* kbd = kbT_.bf16();
  toPanels(kbd, nb, dh, dh, kbP.data());
  const uint16_t* qd = q.bf16();
  const bool exact = productsExact(expRange(qd, real * nh * dh), expRange(kbd, nb * dh));
  // divisor = fr(Math.sqrt(headDim))
  const float divisor = static_cast<float>(std::sqrt(static_cast<double>(dh)));
  std::vector<int64_t> nanBlock(real, -1);
  const Isa isa = gemmIsa();

  ctx.pool.parallelFor(real, grainFor(nb * nh * dh / 2 + 1), [&](int64_t i0, int64_t i1) {
    std::vector<float> qf(nh * dh), scores(nb), dot(nh * nb), sorted(nb);
    std::vector<std::pair<float, int64_t>> queue;
    for (int64_t i = i0; i < i1; i++) {
      const int64_t r = zigzagRow(i, real);
      const int64_t p = r0 + r;
      const int64_t visible = std::min<int64_t>(nb, (p + 1) / ratio);
      for (int64_t c = 0; c < nh * dh; c++) qf[c] = bf16ToF32(qd[r * nh * dh + c]);
      // dot[h][b] = fr(sum_c q_h[c] * kb_b[c]); score_b = fr((sum_h max(dot, 0), h order) / divisor)
      sums(isa, exact, nh, qf.data(), dh, dh, kbP.data(), PANEL, dh * PANEL, nullptr, visible, dot.data(), nb);
      for (int64_t b = 0; b < visible; b++) {
        float score = 0.0f;
        for (int64_t h = 0; h < nh; h++) score = score + max0(dot[h * nb + b]);
        scores[b] = score / divisor;
      }
      // the top min(width, visible) blocks, ties to the lower index, ascending
      int32_t* o = blocks + r * width;
      bool bad = false;
      for (int64_t b = 0; b < visible; b++) {
        if (scores[b] != scores[b]) {
          nanBlock[r] = b;
          bad = true;
          break;
        }
      }
      // width 0 (refused by the op's attribute rule) selects nothing, as the reference's loops do
      if (bad || width == 0) continue;
      if (visible <= width) {
        for (int64_t b = 0; b < visible; b++) o[b] = static_cast<int32_t>(b);
        continue;
      }
      if (a.torchCpuTies) {
        // the blocks torch.topk picks (HF keeps them as a mask, so only the set counts), ascending
        topk::torchCpuTopk(scores.data(), visible, width, o, queue);
        std::sort(o, o + width);
        continue;
      }
      // threshold = the width-th largest score: everything above it, then the lowest-index
      // blocks equal to it until width are taken
      std::copy(scores.begin(), scores.begin() + visible, sorted.begin());
      std::nth_element(sorted.begin(), sorted.begin() + (visible - width), sorted.begin() + visible);
      const float threshold = sorted[visible - width];
      int64_t above = 0;
      for (int64_t b = 0; b < visible; b++) above += scores[b] > threshold ? 1 : 0;
      int64_t ties = width - above;
      int64_t n = 0;
      for (int64_t b = 0; b < visible; b++) {
        if (scores[b] > threshold || (scores[b] == threshold && ties-- > 0)) o[n++] = static_cast<int32_t>(b);
      }
    }
  });
  for (int64_t r = 0; r < real; r++) {
    if (nanBlock[r] >= 0) ops::failQsaNan(r0 + r, nanBlock[r]);
  }
  return {out};
}

// ---- causal GQA attention over the kept keys (attentionMath.ts attnOverKeys) ----------

struct Selection {
  int64_t rows, width, ratio;
  const int32_t* blocks;
};

/** qsaSelection.ts qsaKeptPositions's checks for every row, in row order */
void checkKeptPositions(const Selection& s) {
  for (int64_t row = 0; row < s.rows; row++) {
    const int64_t nb = (row + 1) / s.ratio;
    const int64_t n = std::min(s.width, nb);
    int64_t prev = -1;
    for (int64_t i = 0; i < n; i++) {
      const int64_t b = s.blocks[row * s.width + i];
      if (!(b > prev && b < nb)) ops::failKeptEntry(row, i, b, s.width, s.ratio);
      prev = b;
    }
    for (int64_t i = n; i < s.width; i++) {
      if (s.blocks[row * s.width + i] != -1) ops::failKeptEntry(row, i, s.blocks[row * s.width + i], s.width, s.ratio);
    }
  }
}

/** row t's kept positions, ascending (a validated selection): its blocks' tokens, then the tail */
inline int64_t keptPositions(const Selection& s, int64_t row, int32_t* out) {
  const int64_t ratio = s.ratio;
  const int64_t nb = (row + 1) / ratio;
  const int64_t n = std::min(s.width, nb);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t b = s.blocks[row * s.width + i];
    for (int64_t j = 0; j < ratio; j++) out[count++] = static_cast<int32_t>(b * ratio + j);
  }
  for (int64_t j = nb * ratio; j <= row; j++) out[count++] = static_cast<int32_t>(j);
  return count;
}

Outputs attnCausalQsa(const Inputs& in, const KernelContext& ctx) {
  const ops::CausalQsaArgs a = ops::checkCausalQsa(in, ctx.attrs);
  const int64_t T = a.T, heads = a.heads, kvHeads = a.kvHeads, hd = a.hd, width = a.width, ratio = a.ratio;
  const float scaleF = a.scaleF;
  const bool eager = a.eagerSoftmax;
  const Tensor& q = a.q;
  const Tensor& k = a.k;
  const Tensor& v = a.v;
  const Selection sel{T, width, ratio, a.blocks.data<int32_t>()};
  checkKeptPositions(sel);

  TensorPtr out = makeTensor(DType::BF16, {T, heads * hd});
  if (T == 0 || heads == 0 || hd == 0) {
    // zero-sized output; o[d] for hd = 0 has no values either
    return {out};
  }
  const int64_t group = heads / kvHeads;
  // keys per KV head in panels of PANEL positions, kP[kvh]: [T / PANEL][hd][PANEL] (the dense rows read
  // them in place; a row that drops blocks gathers its keys into panels of its own); values as float rows
  const bool sparse = T / ratio > width;
  const int64_t kvPanel = panelFloats(T, hd);
  const int64_t perThread = (sparse ? panelFloats(std::min(T, (width + 1) * ratio), hd) : 0) + group * T + 2 * group * hd + T;
  ScratchGuard guard(static_cast<int64_t>(sizeof(float)) * (kvHeads * kvPanel + T * kvHeads * hd + ctx.pool.size() * perThread));
  std::vector<float> kP(kvHeads * kvPanel), vf(T * kvHeads * hd);
  const uint16_t* kd = k.bf16();
  const uint16_t* vd = v.bf16();
  ctx.pool.parallelFor(kvHeads, 1, [&](int64_t h0, int64_t h1) {
    for (int64_t kvh = h0; kvh < h1; kvh++) {
      toPanels(kd + kvh * hd, T, hd, kvHeads * hd, kP.data() + kvh * kvPanel);
    }
  });
  ctx.pool.parallelFor(T, grainFor(kvHeads * hd), [&](int64_t j0, int64_t j1) {
    for (int64_t i = j0 * kvHeads * hd; i < j1 * kvHeads * hd; i++) vf[i] = bf16ToF32(vd[i]);
  });
  const uint16_t* qd = q.bf16();
  const bool exact = productsExact(expRange(qd, q.numel()), expRange(kd, k.numel()));
  uint16_t* od = out->bf16();
  const Isa isa = gemmIsa();

  ctx.pool.parallelFor(T, 1, [&](int64_t i0, int64_t i1) {
    std::vector<int32_t> keys(T);
    std::vector<float> kc, s(group * T), acc(group * hd), qf(group * hd), l(group);
    for (int64_t item = i0; item < i1; item++) {
      const int64_t t = zigzagRow(item, T);
      const int64_t n = keptPositions(sel, t, keys.data());
      const bool dense = n == t + 1;  // ascending distinct positions <= t: all of 0..t
      for (int64_t kvh = 0; kvh < kvHeads; kvh++) {
        const float* kbase;
        if (dense) {
          kbase = kP.data() + kvh * kvPanel;
        } else {
          // the kept keys in panels of their own, list order
          const int64_t nb = (t + 1) / ratio;
          if (static_cast<int64_t>(kc.size()) < panelFloats(n, hd)) kc.resize(panelFloats(n, hd));
          gatherBlocks(kd + kvh * hd, kvHeads * hd, hd, ratio, sel.blocks + t * width, std::min(width, nb), nb, t + 1 - nb * ratio, kc.data());
          kbase = kc.data();
        }
        for (int64_t g = 0; g < group; g++) {
          const uint16_t* qrow = qd + (t * heads + kvh * group + g) * hd;
          for (int64_t d = 0; d < hd; d++) qf[g * hd + d] = bf16ToF32(qrow[d]);
        }
        // s_i = fr(dot_d(q, k_i) * scale)
        sums(isa, exact, group, qf.data(), hd, hd, kbase, PANEL, hd * PANEL, nullptr, n, s.data(), T);
        for (int64_t g = 0; g < group; g++) {
          float* sg = s.data() + g * T;
          if (eager) {
            // hf-eager: matmul(q, k^T) stores bf16, `* scaling` stores bf16 again
            for (int64_t i = 0; i < n; i++) sg[i] = roundBf16(roundBf16(sg[i]) * scaleF);
          } else {
            for (int64_t i = 0; i < n; i++) sg[i] = sg[i] * scaleF;
          }
        }
        // m = max s_i; p_i = exp(fr(s_i - m)); l = sum p_i in canonical order v1 (i the list index)
        for (int64_t g = 0; g < group; g++) {
          float* sg = s.data() + g * T;
          float m = NEG_INF;
          for (int64_t i = 0; i < n; i++) {
            if (sg[i] > m) m = sg[i];
          }
          attn::expShifted(isa, sg, n, m);
          l[g] = canonical::sumTerms(n, [sg](float acc, int64_t i) { return acc + sg[i]; });
          if (eager) {
            // hf-eager: torch's softmax multiplies by 1 / l, .to(bf16) stores p
            const float r = 1.0f / l[g];
            for (int64_t i = 0; i < n; i++) sg[i] = roundBf16(sg[i] * r);
          }
        }
        // o[d] = bf(fr((sum_i fr(p_i * v_i[d]), list order) / l))
        sums(isa, true, group, s.data(), T, n, vf.data() + kvh * hd, kvHeads * hd, PANEL, keys.data(), hd, acc.data(), hd);
        for (int64_t g = 0; g < group; g++) {
          uint16_t* orow = od + (t * heads + kvh * group + g) * hd;
          const float* a = acc.data() + g * hd;
          for (int64_t d = 0; d < hd; d++) orow[d] = f32ToBf16(eager ? a[d] : a[d] / l[g]);
        }
      }
    }
  });
  return {out};
}

// ---- output gate (attentionMath.ts attnOutputGate) ------------------------------------

Outputs attnOutputGate(const Inputs& in, const KernelContext& ctx) {
  const ops::OutputGateArgs a = ops::checkOutputGate(in, ctx.attrs);
  const int64_t T = a.T, heads = a.heads, hd = a.hd;
  TensorPtr y = makeTensor(DType::BF16, {T, heads * hd});
  const uint16_t* od = a.o.bf16();
  const uint16_t* gd = a.qg.bf16();
  uint16_t* yd = y->bf16();
  // y = bf(o * bf(sigmoid(gate))), the gate at columns [hd, 2hd) of each head's [query | gate]
  ctx.pool.parallelFor(T * heads, grainFor(hd * 8), [&](int64_t a, int64_t b) {
    for (int64_t th = a; th < b; th++) {
      for (int64_t d = 0; d < hd; d++) {
        const float gate = roundBf16(fp32::sigmoidF32(bf16ToF32(gd[th * 2 * hd + hd + d])));
        yd[th * hd + d] = f32ToBf16(bf16ToF32(od[th * hd + d]) * gate);
      }
    }
  });
  return {y};
}

}  // namespace

HCSP_KERNEL(attnHeadNormRopeBf16, attnHeadNormRopeBf16);
HCSP_KERNEL(qsaBlockKeys, qsaBlockKeys);
HCSP_KERNEL(qsaKeptCount, qsaKeptCount);
HCSP_KERNEL(qsaSelect, qsaSelect);
HCSP_KERNEL(attnCausalQsa, attnCausalQsa);
HCSP_KERNEL(attnOutputGate, attnOutputGate);

}  // namespace hcsp
