// The fast kernel of attnCausalQsa (kernels 'fast'): flash-style attention over the QSA kept
// keys (FlashAttention-2's forward: a query tile against key tiles in shared memory, an online
// softmax in fp32). The kept keys are the op's: row t attends to the tokens of its listed
// blocks and then its tail floor((t+1)/ratio)*ratio .. t; the selection is per token, shared by
// every head. Rows of one query tile keep different blocks, so each key tile carries one 32-bit
// mask per row (its kept keys in the tile); a key tile no row keeps is not loaded at all.
//
// Rounding against the reference (attentionMath.ts attnOverKeys): a score is the reference's
// bits (bf16 x bf16 is exact in fp32, so the d-order FMA chain rounds as fr(dot + q*k) does,
// then fr(dot * scale)); the differences are the online softmax's (p_j = exp(fr(s_j - m)) with m
// the running max, earlier tiles rescaled by exp(m_old - m_new) when it grows), the sum l
// (tile partials of 4, then 8 lanes, then l = fma(l, alpha, tile)) and the p.v sums (each
// tile's from zero, one FMA per key in key order, then acc = fma(acc, alpha, tile): a blocked
// sum) against the reference's canonical l and sequential fr(acc + fr(p v)) over every key.
#include "attention_tiled.h"

#include "../../numerics/bf16.h"
#include "../../numerics/fp32_math.h"

using hcsp::bf16ToF32;
using hcsp::f32ToBf16;

#if defined(HCSP_GPU_CUDA) || defined(HCSP_GPU_HIP)
#define HCSP_TILED_UNROLL _Pragma("unroll")
#else
#define HCSP_TILED_UNROLL
#endif

namespace {

constexpr int ROWS = HCSP_TILED_ATTN_ROWS;
constexpr int LANES = HCSP_TILED_ATTN_LANES;
constexpr int KEYS = HCSP_TILED_ATTN_KEYS;
constexpr int THREADS = HCSP_TILED_ATTN_THREADS;
constexpr int MAX_HD = HCSP_TILED_ATTN_MAX_HD;
/** a staged row's pitch in bf16 elements: rows start one 4-byte bank apart, so a row group's lanes (different keys) do not share a bank */
constexpr int PITCH = MAX_HD + 2;
/** the pitch of the probability tile (floats) */
constexpr int P_PITCH = KEYS + 1;
constexpr int KEYS_PER_LANE = KEYS / LANES;
constexpr int DIMS_PER_LANE = MAX_HD / LANES;
static_assert(KEYS == 32, "a tile's mask of one row is one 32-bit word");
/** a lane's keys lane, lane + LANES, ... as mask bits (shifted by the lane) */
constexpr uint32_t LANE_KEYS = 0x01010101u;
static_assert(KEYS_PER_LANE == 4 && LANES == 8, "LANE_KEYS spells 4 keys 8 apart");
static_assert(KEYS % LANES == 0 && MAX_HD % LANES == 0, "keys and dims split evenly over a row's lanes");

/** the bits of key positions [lo, hi) in the tile starting at j0 (clipped to it) */
HCSP_HD uint32_t maskRange(int64_t lo, int64_t hi, int64_t j0) {
  if (lo < j0) lo = j0;
  if (hi > j0 + KEYS) hi = j0 + KEYS;
  if (lo >= hi) return 0u;
  const int64_t n = hi - lo;
  const uint32_t ones = n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
  return ones << (lo - j0);
}

/** positions first .. first + n - 1 of head `head` of a [T, heads * hd] bf16 tensor into a shared tile of PITCH-wide rows */
HCSP_HD void stageRows(uint16_t* tile, const uint16_t* src, int64_t first, int64_t n, int64_t heads, int64_t head, int64_t hd, int tid) {
  for (int64_t e = tid; e < n * hd; e += THREADS) {
    const int64_t row = e / hd;
    const int64_t d = e - row * hd;
    tile[row * PITCH + d] = src[((first + row) * heads + head) * hd + d];
  }
}

}  // namespace

HCSP_GLOBAL void hcsp_attention_tiled_qsa(const uint16_t* q, const uint16_t* k, const uint16_t* v, const int32_t* blocks, const int32_t* bad, uint16_t* o,
                                          int64_t T, int64_t heads, int64_t kvHeads, int64_t hd, int64_t width, int64_t ratio, float scaleF) {
  HCSP_SHARED(uint16_t, sQ, ROWS* PITCH);
  HCSP_SHARED(uint16_t, sKV, KEYS* PITCH);  // the K tile, then the V tile of the same keys
  HCSP_SHARED(float, sP, ROWS* P_PITCH);
  HCSP_SHARED(float, sMax, ROWS* LANES);
  HCSP_SHARED(float, sSum, ROWS* LANES);
  HCSP_SHARED(uint32_t, sMask, 2 * ROWS);  // double-buffered: a tile's masks are written while the last one's may still be read
  HCSP_SHARED(int32_t, sCursor, ROWS);

  const int tid = HCSP_BLOCK_THREAD();
  const int r = tid / LANES;
  const int lane = tid - r * LANES;
  const int64_t tiles = (T + ROWS - 1) / ROWS;
  const int64_t h = HCSP_BLOCK_ID() % heads;
  const int64_t t0 = (tiles - 1 - HCSP_BLOCK_ID() / heads) * ROWS;
  const int64_t kvh = h / (heads / kvHeads);
  const int64_t rowsHere = T - t0 < ROWS ? T - t0 : ROWS;
  const int64_t keyEnd = t0 + rowsHere;  // the tile's rows see keys 0 .. keyEnd - 1

  stageRows(sQ, q, t0, rowsHere, heads, h, hd, tid);
  if (tid < ROWS) sCursor[tid] = 0;

  float m = -HCSP_INFF();
  float l = 0.0f;
  float acc[DIMS_PER_LANE];
  HCSP_TILED_UNROLL
  for (int u = 0; u < DIMS_PER_LANE; u++) acc[u] = 0.0f;

  int64_t tileIndex = 0;
  for (int64_t j0 = 0; j0 < keyEnd; j0 += KEYS, tileIndex++) {
    uint32_t* mask = sMask + (tileIndex & 1) * ROWS;
    if (tid < ROWS) {
      // row tid's kept keys in [j0, j0 + KEYS): its listed blocks from its cursor (ascending,
      // so a block that runs past the tile stays for the next), then its tail
      const int64_t tr = t0 + tid;
      uint32_t bits = 0u;
      if (tr < T && bad[tr] < 0) {
        const int64_t nb = (tr + 1) / ratio;
        const int64_t listed = width < nb ? width : nb;
        const int32_t* list = blocks + tr * width;
        int32_t cur = sCursor[tid];
        while (cur < listed) {
          const int64_t start = static_cast<int64_t>(list[cur]) * ratio;
          if (start >= j0 + KEYS) break;
          bits |= maskRange(start, start + ratio, j0);
          if (start + ratio > j0 + KEYS) break;
          cur++;
        }
        sCursor[tid] = cur;
        bits |= maskRange(nb * ratio, tr + 1, j0);
      }
      mask[tid] = bits;
    }
    HCSP_BARRIER();
    uint32_t any = 0u;
    for (int i = 0; i < ROWS; i++) any |= mask[i];
    if (any == 0u) continue;  // the same decision in every thread
    const int64_t keysHere = keyEnd - j0 < KEYS ? keyEnd - j0 : KEYS;
    stageRows(sKV, k, j0, keysHere, kvHeads, kvh, hd, tid);
    HCSP_BARRIER();

    // this lane's scores: keys lane, lane + LANES, ... of the tile
    const uint32_t rowMask = mask[r];
    const uint16_t* qr = sQ + r * PITCH;
    // (each key's dot is its own chain in d order; one q element read serves the lane's keys)
    float s[KEYS_PER_LANE];
    HCSP_TILED_UNROLL
    for (int u = 0; u < KEYS_PER_LANE; u++) s[u] = 0.0f;
    if (((rowMask >> lane) & LANE_KEYS) != 0u) {
      for (int64_t d = 0; d < hd; d++) {
        const float qd = bf16ToF32(qr[d]);
        HCSP_TILED_UNROLL
        for (int u = 0; u < KEYS_PER_LANE; u++) s[u] = HCSP_FMAF(qd, bf16ToF32(sKV[(lane + LANES * u) * PITCH + d]), s[u]);
      }
    }
    float laneMax = -HCSP_INFF();
    HCSP_TILED_UNROLL
    for (int u = 0; u < KEYS_PER_LANE; u++) {
      s[u] = s[u] * scaleF;
      if ((rowMask >> (lane + LANES * u)) & 1u) laneMax = s[u] > laneMax ? s[u] : laneMax;
    }
    sMax[r * LANES + lane] = laneMax;
    HCSP_BARRIER();

    // the row's new running max (every lane of the row computes the same), its probabilities
    float tileMax = sMax[r * LANES];
    for (int i = 1; i < LANES; i++) tileMax = sMax[r * LANES + i] > tileMax ? sMax[r * LANES + i] : tileMax;
    const float mNew = tileMax > m ? tileMax : m;
    // mNew == m: nothing to rescale (also a row with no kept key yet: m stays -inf)
    const float alpha = mNew == m ? 1.0f : hcsp::fp32::expF32(m - mNew);
    float laneSum = 0.0f;
    HCSP_TILED_UNROLL
    for (int u = 0; u < KEYS_PER_LANE; u++) {
      const int jj = lane + LANES * u;
      const float p = ((rowMask >> jj) & 1u) ? hcsp::fp32::expF32(s[u] - mNew) : 0.0f;
      sP[r * P_PITCH + jj] = p;
      laneSum = laneSum + p;
    }
    sSum[r * LANES + lane] = laneSum;
    stageRows(sKV, v, j0, keysHere, kvHeads, kvh, hd, tid);  // every score is done (the barrier above)
    HCSP_BARRIER();

    float tileSum = sSum[r * LANES];
    for (int i = 1; i < LANES; i++) tileSum = tileSum + sSum[r * LANES + i];
    l = HCSP_FMAF(l, alpha, tileSum);
    m = mNew;
    const float* pr = sP + r * P_PITCH;
    // the tile's p.v sums from zero (each output dim its own chain in key order; one p read
    // serves the lane's dims), then acc = acc * alpha + tile in one rounding: a blocked sum,
    // whose rounding error grows with keys/32 + 32 terms, not with the keys
    float tileAcc[DIMS_PER_LANE];
    HCSP_TILED_UNROLL
    for (int u = 0; u < DIMS_PER_LANE; u++) tileAcc[u] = 0.0f;
    for (int64_t jj = 0; jj < keysHere; jj++) {
      if (!((rowMask >> jj) & 1u)) continue;  // a key the row does not keep adds nothing (not even 0 * inf)
      const float p = pr[jj];
      const uint16_t* vr = sKV + jj * PITCH + lane;
      HCSP_TILED_UNROLL
      for (int u = 0; u < DIMS_PER_LANE; u++) {
        if (lane + LANES * u < hd) tileAcc[u] = HCSP_FMAF(p, bf16ToF32(vr[LANES * u]), tileAcc[u]);
      }
    }
    HCSP_TILED_UNROLL
    for (int u = 0; u < DIMS_PER_LANE; u++) acc[u] = HCSP_FMAF(acc[u], alpha, tileAcc[u]);
  }

  const int64_t t = t0 + r;
  if (t >= T) return;
  // a row the selection check failed: zeros, as the exact kernel (the run fails at its sync)
  const bool failed = bad[t] >= 0;
  uint16_t* orow = o + (t * heads + h) * hd;
  HCSP_TILED_UNROLL
  for (int u = 0; u < DIMS_PER_LANE; u++) {
    const int64_t d = lane + LANES * u;
    if (d < hd) orow[d] = failed ? uint16_t{0} : f32ToBf16(acc[u] / l);
  }
}
