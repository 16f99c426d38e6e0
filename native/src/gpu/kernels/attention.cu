// GPU kernels of the full-attention ops (core graph/ops/attentionOps.ts), step for step as
// the CPU reference (reference/kernels/attentionKernels.ts over layers/attention/
// attentionMath.ts, qsaIndexer.ts and qsaSelection.ts): the per-head RMS1p norm + NeoX RoPE,
// the QSA block keys (pooling, then the norm + RoPE at the blocks' positions), kept counts,
// block scores and the top-width selection, causal GQA attention over each row's kept keys,
// and the sigmoid output gate.
//
// Rounding: where the reference rounds with Math.fround the step is a float operation; where
// JavaScript evaluates x + y * z without rounding the product (the dot products
// fr(dot + q*k)) it is done here in double and rounded once to float, as JavaScript does (the
// product of two floats is exact in double; with contraction off it is never fused). Two sums
// follow the canonical order v1 (reduce.h, numerics/canonical_sum.h): the head norm's sum of
// squares, a block kernel with one 64-thread row group per (row, head) (lane sums by FMA on
// exact bf16 squares, then the butterfly), and the softmax's l, the one-thread attention
// kernel's canonical::sumTerms over its stored p. Every other sum is one thread's, in the
// reference's order.
#include "attention.h"

#include "../../numerics/bf16.h"
#include "../../numerics/canonical_sum.h"
#include "../../numerics/fp32_math.h"
#include "checks.h"
#include "reduce.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;
using hcsp::roundBf16;

namespace {

/** fr(acc + a * b) as JavaScript evaluates it: the product and the sum in double, one rounding */
HCSP_HD float addProductD(float acc, float a, float b) {
  return static_cast<float>(static_cast<double>(acc) + static_cast<double>(a) * static_cast<double>(b));
}

/** fr(sum_d a[d] * b[d]) in d order over bf16 values (attention and indexer dot products) */
HCSP_HD float dotBf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float dot = 0.0f;
  for (int64_t d = 0; d < n; d++) dot = addProductD(dot, bf16ToF32(a[d]), bf16ToF32(b[d]));
  return dot;
}

/** Math.max(x, 0): NaN stays NaN, -0 becomes +0 */
HCSP_HD float max0(float x) { return x != x ? x : (x > 0.0f ? x : 0.0f); }

/** floats -> uint32 keys in the order of a Float32Array sort (-0 before +0; no NaN here) */
HCSP_HD uint32_t sortKey(float x) {
  const uint32_t u = hcspFloatBits(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

HCSP_HD float keyFloat(uint32_t key) { return hcspBitsFloat((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key); }

/**
 * A row's kept key positions in list order (qsaSelection.ts qsaKeptPositions on a checked
 * selection): the tokens of its nSel listed blocks, then the tail tailStart .. row.
 */
struct KeptKeys {
  const int32_t* blocks;
  int64_t nSel, ratio, tailStart;
  int64_t seg, j;
  HCSP_HD void reset() {
    seg = 0;
    j = 0;
  }
  HCSP_HD int64_t next() {
    if (seg < nSel) {
      const int64_t pos = static_cast<int64_t>(blocks[seg]) * ratio + j;
      if (++j == ratio) {
        j = 0;
        seg++;
      }
      return pos;
    }
    return tailStart + j++;
  }
};

}  // namespace

// ---- per-head RMS1p norm + NeoX RoPE --------------------------------------------------

HCSP_GLOBAL void hcsp_attention_norm_rope_bf16(const uint16_t* x, const uint16_t* w, const uint16_t* cos, const uint16_t* sin, uint16_t* y, int64_t rows,
                                               int64_t heads, int64_t hd, int64_t stride, int64_t offset, int64_t ropeDims, float epsF, int64_t step) {
  HCSP_SHARED(float, exchange, HCSP_CANONICAL_MAX_ROWS* HCSP_CANONICAL_EXCHANGE);
  const int lane = hcspCanonicalLane();
  const int group = hcspCanonicalRowGroup();
  const int64_t perBlock = HCSP_BLOCK_THREADS() / HCSP_CANONICAL_LANES;
  const int64_t items = rows * heads;
  const int64_t half = ropeDims / 2;
  // the loop's bounds are the block's, so every thread reaches every barrier; a group past the
  // last (row, head) reads and writes nothing
  for (int64_t first = HCSP_BLOCK_ID() * perBlock; first < items; first += HCSP_BLOCK_COUNT() * perBlock) {
    const int64_t i = first + group;  // the (row, head) item r * heads + h
    const bool mine = i < items;
    const uint16_t* xr = x + (mine ? i : 0) * stride + offset;
    // ss = sum_d x*x in canonical order v1: this lane's chunks, then the row group's butterfly
    float part = 0.0f;
    if (mine) {
      part = hcspCanonicalLaneSum(lane, hd, [&](float acc, int64_t d) {
        const float v = bf16ToF32(xr[d]);
        return HCSP_FMAF(v, v, acc);
      });
    }
    const float ss = hcspCanonicalButterfly(part, lane, exchange + group * HCSP_CANONICAL_EXCHANGE);
    if (!mine) continue;
    // r = rsqrt(fr(fr(ss / hd) + eps)); n[d] = bf(fr(x * r) * fr(1 + w)), computed where it is read
    const float mean = static_cast<float>(static_cast<double>(ss) / static_cast<double>(hd));
    const float rs = hcsp::fp32::rsqrtF32(mean + epsF);
    auto normed = [&](int64_t d) { return roundBf16((bf16ToF32(xr[d]) * rs) * (1.0f + bf16ToF32(w[d]))); };
    uint16_t* yr = y + i * hd;
    const int64_t tb = (i / heads) * step * half;
    // the rotation's pairs (k, k + half) and the dims past ropeDims, spread over the lanes
    for (int64_t k = lane; k < half; k += HCSP_CANONICAL_LANES) {
      const float c = bf16ToF32(cos[tb + k]);
      const float s = bf16ToF32(sin[tb + k]);
      const float x1 = normed(k);
      const float x2 = normed(k + half);
      // bf16 x bf16 is exact; one rounding to float, then to bf16
      yr[k] = f32ToBf16(roundBf16(x1 * c) + roundBf16(-x2 * s));
      yr[k + half] = f32ToBf16(roundBf16(x2 * c) + roundBf16(x1 * s));
    }
    for (int64_t d = ropeDims + lane; d < hd; d += HCSP_CANONICAL_LANES) yr[d] = f32ToBf16(normed(d));
  }
}

// ---- QSA block keys: pooling (the norm + RoPE is the kernel above) ----------------------

HCSP_GLOBAL void hcsp_attention_pool_blocks_bf16(const uint16_t* kRaw, uint16_t* pooled, int64_t nb, int64_t dh, int64_t ratio) {
  const float ratioF = static_cast<float>(ratio);
  HCSP_GRID_STRIDE(i, nb * dh) {
    const int64_t b = i / dh;
    const int64_t c = i - b * dh;
    float sum = 0.0f;
    for (int64_t j = 0; j < ratio; j++) sum = sum + bf16ToF32(kRaw[(b * ratio + j) * dh + c]);
    pooled[i] = f32ToBf16(sum / ratioF);
  }
}

// ---- kept counts ---------------------------------------------------------------------------

HCSP_GLOBAL void hcsp_attention_kept_count(const int32_t* blocks, int32_t* kept, int64_t rows, int64_t width, int64_t ratio) {
  HCSP_GRID_STRIDE(t, rows) {
    int64_t listed = 0;
    for (int64_t i = 0; i < width; i++) listed += blocks[t * width + i] >= 0 ? 1 : 0;
    kept[t] = static_cast<int32_t>(listed * ratio + (t + 1 - ((t + 1) / ratio) * ratio));
  }
}

HCSP_GLOBAL void hcsp_attention_fill_i32(int32_t* y, int64_t n, int32_t value) {
  HCSP_GRID_STRIDE(i, n) { y[i] = value; }
}

// ---- QSA block scores and selection --------------------------------------------------------

HCSP_GLOBAL void hcsp_attention_qsa_scores(const uint16_t* q, const uint16_t* kb, float* scores, int64_t r0, int64_t rowBase, int64_t chunkRows, int64_t nb,
                                           int64_t nh, int64_t dh, int64_t ratio, float divisor) {
  HCSP_GRID_STRIDE(i, chunkRows * nb) {
    const int64_t b = i / chunkRows;
    const int64_t r = i - b * chunkRows;
    const int64_t row = rowBase + r;
    const int64_t seen = (r0 + row + 1) / ratio;
    if (b >= (seen < nb ? seen : nb)) continue;
    // score_b = fr((sum_h max(dot_h, 0), h order) / divisor), dot_h in c order
    const uint16_t* qr = q + row * nh * dh;
    const uint16_t* kr = kb + b * dh;
    float score = 0.0f;
    for (int64_t h = 0; h < nh; h++) score = score + max0(dotBf16(qr + h * dh, kr, dh));
    scores[i] = score / divisor;
  }
}

HCSP_GLOBAL void hcsp_attention_qsa_select(const float* scores, int32_t* blocks, unsigned long long* nanFailed, int64_t r0, int64_t rowBase, int64_t chunkRows,
                                           int64_t nb, int64_t width, int64_t ratio) {
  HCSP_GRID_STRIDE(r, chunkRows) {
    const int64_t row = rowBase + r;
    const int64_t visible = (r0 + row + 1) / ratio;  // <= nb: the row is before the last token
    const float* s = scores + r;                     // block b at s[b * chunkRows]
    int64_t nanAt = -1;
    for (int64_t b = 0; b < visible; b++) {
      const float v = s[b * chunkRows];
      if (v != v) {
        nanAt = b;
        break;
      }
    }
    if (nanAt >= 0) hcspCheckFail(nanFailed, row, static_cast<int32_t>(nanAt));
    if (nanAt >= 0 || width == 0) continue;
    int32_t* out = blocks + row * width;
    if (visible <= width) {
      for (int64_t b = 0; b < visible; b++) out[b] = static_cast<int32_t>(b);
      continue;
    }
    // threshold = the width-th largest score (the reference's sorted[visible - width]): the
    // largest key K with at least width scores at or above it, by bisection between the
    // row's smallest and largest keys
    uint32_t lo = 0xffffffffu, hi = 0;
    for (int64_t b = 0; b < visible; b++) {
      const uint32_t k = sortKey(s[b * chunkRows]);
      lo = k < lo ? k : lo;
      hi = k > hi ? k : hi;
    }
    while (lo < hi) {
      const uint32_t mid = static_cast<uint32_t>(lo + (static_cast<uint64_t>(hi - lo) + 1) / 2);
      int64_t atOrAbove = 0;
      for (int64_t b = 0; b < visible && atOrAbove < width; b++) atOrAbove += sortKey(s[b * chunkRows]) >= mid ? 1 : 0;
      if (atOrAbove >= width) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const float threshold = keyFloat(lo);
    // everything above it, then the lowest-index blocks equal to it until width are taken
    int64_t above = 0;
    for (int64_t b = 0; b < visible; b++) above += s[b * chunkRows] > threshold ? 1 : 0;
    int64_t ties = width - above;
    int64_t n = 0;
    for (int64_t b = 0; b < visible; b++) {
      const float v = s[b * chunkRows];
      if (v > threshold || (v == threshold && ties-- > 0)) out[n++] = static_cast<int32_t>(b);
    }
  }
}

// ---- causal GQA attention over the kept keys ----------------------------------------------

HCSP_GLOBAL void hcsp_attention_check_selection(const int32_t* blocks, int32_t* bad, unsigned long long* failed, int64_t rows, int64_t width, int64_t ratio) {
  HCSP_GRID_STRIDE(t, rows) {
    const int64_t nb = (t + 1) / ratio;
    const int64_t n = width < nb ? width : nb;
    const int32_t* row = blocks + t * width;
    int64_t badAt = -1;
    int64_t prev = -1;
    for (int64_t i = 0; i < n; i++) {
      const int64_t b = row[i];
      if (!(b > prev && b < nb)) {
        badAt = i;
        break;
      }
      prev = b;
    }
    for (int64_t i = n; badAt < 0 && i < width; i++) {
      if (row[i] != -1) badAt = i;
    }
    bad[t] = static_cast<int32_t>(badAt);
    if (badAt >= 0) {
      // the entry's index and its value, each the lowest row's
      hcspCheckFail(failed, t, static_cast<int32_t>(badAt));
      hcspCheckFail(failed + 1, t, row[badAt]);
    }
  }
}

/**
 * For query t, head h (KV head h / group), keys j in list order:
 *   s_j = fr(dot_d(q, k_j) * scale);  m = max_j s_j;  p_j = exp(fr(s_j - m));  l = sum_j p_j in canonical order v1
 *   o[d] = bf(fr((sum_j fr(p_j * v_j[d]), list order) / l))
 * The values are accumulated TILE output dims at a time (each o[d] still one sum in j order).
 */
HCSP_GLOBAL void hcsp_attention_causal_qsa(const uint16_t* q, const uint16_t* k, const uint16_t* v, const int32_t* blocks, const int32_t* bad, uint16_t* o,
                                           float* p, int64_t heads, int64_t kvHeads, int64_t hd, int64_t width, int64_t ratio, float scaleF, int64_t itemBase,
                                           int64_t chunkItems, int32_t eager) {
  constexpr int64_t TILE = 8;
  const int64_t group = heads / kvHeads;
  HCSP_GRID_STRIDE(i, chunkItems) {
    const int64_t item = itemBase + i;
    const int64_t t = item / heads;
    const int64_t h = item - t * heads;
    const int64_t kvh = h / group;
    uint16_t* orow = o + item * hd;
    if (bad[t] >= 0) {
      // a malformed selection row reads no keys: zeros, and the run fails at its sync
      for (int64_t d = 0; d < hd; d++) orow[d] = 0;
      continue;
    }
    const int64_t nb = (t + 1) / ratio;
    KeptKeys keys{blocks + t * width, width < nb ? width : nb, ratio, nb * ratio, 0, 0};
    const int64_t count = keys.nSel * ratio + (t + 1 - keys.tailStart);
    const uint16_t* qr = q + item * hd;
    float* pi = p + i;  // key n at pi[n * chunkItems]
    float m = -HCSP_INFF();
    for (int64_t n = 0; n < count; n++) {
      const int64_t j = keys.next();
      const float dot = dotBf16(qr, k + (j * kvHeads + kvh) * hd, hd);
      // hf-eager: matmul(q, k^T) stores bf16, `* scaling` stores bf16 again
      const float s = eager ? roundBf16(roundBf16(dot) * scaleF) : dot * scaleF;
      pi[n * chunkItems] = s;
      if (s > m) m = s;
    }
    for (int64_t n = 0; n < count; n++) pi[n * chunkItems] = hcsp::fp32::expF32(pi[n * chunkItems] - m);
    // l = sum_n p_n in canonical order v1 (n the key's list index)
    const float l = hcsp::canonical::sumTerms(count, [&](float acc, int64_t n) { return acc + pi[n * chunkItems]; });
    if (eager) {
      // hf-eager: torch's softmax multiplies by 1 / l, .to(bf16) stores p; o is then not divided
      const float r = 1.0f / l;
      for (int64_t n = 0; n < count; n++) pi[n * chunkItems] = roundBf16(pi[n * chunkItems] * r);
    }
    for (int64_t d0 = 0; d0 < hd; d0 += TILE) {
      const int64_t wTile = hd - d0 < TILE ? hd - d0 : TILE;
      float acc[TILE];
      for (int64_t u = 0; u < TILE; u++) acc[u] = 0.0f;
      keys.reset();
      for (int64_t n = 0; n < count; n++) {
        const int64_t j = keys.next();
        const uint16_t* vr = v + (j * kvHeads + kvh) * hd + d0;
        const float pn = pi[n * chunkItems];
        if (wTile == TILE) {
          for (int64_t u = 0; u < TILE; u++) acc[u] = acc[u] + pn * bf16ToF32(vr[u]);
        } else {
          for (int64_t u = 0; u < wTile; u++) acc[u] = acc[u] + pn * bf16ToF32(vr[u]);
        }
      }
      for (int64_t u = 0; u < wTile; u++) orow[d0 + u] = f32ToBf16(eager ? acc[u] : acc[u] / l);
    }
  }
}

// ---- output gate -------------------------------------------------------------------------

HCSP_GLOBAL void hcsp_attention_output_gate(const uint16_t* o, const uint16_t* qg, uint16_t* y, int64_t rowsHeads, int64_t hd) {
  HCSP_GRID_STRIDE(e, rowsHeads * hd) {
    const int64_t th = e / hd;
    const int64_t d = e - th * hd;
    const float gate = roundBf16(hcsp::fp32::sigmoidF32(bf16ToF32(qg[th * 2 * hd + hd + d])));
    y[e] = f32ToBf16(bf16ToF32(o[e]) * gate);
  }
}
