// The per-element summation orders of the summing collectives, as core's
// collectives/reduceOrder.ts and ringAllReduce.ts define them (numerics.md "How collectives
// add"): bf16 partials (bit patterns, one buffer per rank), every fp32 add correctly rounded,
// bf16 rounding where the algorithm stores a bf16 value (each ring hop / chain link, or once
// at the end of a one-shot fp32 accumulation). Private to the host kernels; the simulated
// collectives (collective_kernels.cc) use it now, real communicators can use it later.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../errors.h"
#include "../../numerics/bf16.h"
#include "js_text.h"

namespace hcsp::reduce {

enum class Algorithm { Ring, OneShot, Ordered };

/** core's REDUCE_ALGORITHMS, in its order */
inline const char* const ALGORITHM_NAMES[] = {"ring", "oneshot", "ordered"};

/** 'ring' | 'oneshot' | 'ordered' -> the algorithm; false for any other name */
inline bool parseAlgorithm(const std::string& name, Algorithm& out) {
  if (name == "ring")
    out = Algorithm::Ring;
  else if (name == "oneshot")
    out = Algorithm::OneShot;
  else if (name == "ordered")
    out = Algorithm::Ordered;
  else
    return false;
  return true;
}

/** Channels (rings run in parallel): RING_DEFAULT_CHANNELS of ringAllReduce.ts. */
constexpr int64_t RING_DEFAULT_CHANNELS = 2;
/** Elements per chunk: RING_DEFAULT_CHUNK_ELEMS (NCCL SIMPLE all-reduce chunk of 2 MiB bf16). */
constexpr int64_t RING_DEFAULT_CHUNK_ELEMS = 1048576;
/** A partial loop's per-block size is rounded up to this many elements (RING_ALIGN_ELEMS). */
constexpr int64_t RING_ALIGN_ELEMS = 16;

/** fp32 add of two bf16 values, rounded to bf16 (one ring hop / chain link) */
inline uint16_t addBf16(uint16_t a, uint16_t b) { return f32ToBf16(bf16ToF32(a) + bf16ToF32(b)); }

/**
 * Ring order for the chunk owned by ring position `owner`: acc = x[owner+1];
 * acc = bf(x[owner+2] + acc); ...; acc = bf(x[owner] + acc) (indices mod tp). Elements
 * [start, end) of the sum go to out[0 .. end-start). tp = 1 passes the bits through.
 */
inline void reduceRingInto(const uint16_t* const* partials, int tp, int owner, int64_t start, int64_t end, uint16_t* out) {
  if (owner < 0 || owner >= tp)
    fail(ErrorKind::Attr, "reduceRingInto: owner " + std::to_string(owner) + " is not a ring position in [0, " + std::to_string(tp) + ")");
  const uint16_t* first = partials[(owner + 1) % tp];
  for (int64_t i = start; i < end; i++) {
    uint16_t acc = first[i];
    for (int hop = 2; hop <= tp; hop++) acc = addBf16(partials[(owner + hop) % tp][i], acc);
    out[i - start] = acc;
  }
}

/** One-shot: fp32 accumulation in rank order 0..tp-1, one bf16 rounding at the end; tp = 1 passes the bits through. */
inline void reduceOneShotInto(const uint16_t* const* partials, int tp, int64_t start, int64_t end, uint16_t* out) {
  if (tp == 1) {
    if (end > start) std::memcpy(out, partials[0] + start, (end - start) * sizeof(uint16_t));
    return;
  }
  for (int64_t i = start; i < end; i++) {
    float acc = bf16ToF32(partials[0][i]);
    for (int r = 1; r < tp; r++) acc = acc + bf16ToF32(partials[r][i]);
    out[i - start] = f32ToBf16(acc);
  }
}

/** Ordered chain in rank order: acc = x0; acc = bf(acc + x1); ...; acc = bf(acc + x[tp-1]). */
inline void reduceOrderedInto(const uint16_t* const* partials, int tp, int64_t start, int64_t end, uint16_t* out) {
  for (int64_t i = start; i < end; i++) {
    uint16_t acc = partials[0][i];
    for (int r = 1; r < tp; r++) acc = addBf16(acc, partials[r][i]);
    out[i - start] = acc;
  }
}

/** Elements [start, end) of the sum in `algorithm`'s order into out[0 ..); `owner` matters only for Ring. */
inline void reduceInto(Algorithm algorithm, int owner, const uint16_t* const* partials, int tp, int64_t start, int64_t end, uint16_t* out) {
  switch (algorithm) {
    case Algorithm::Ring:
      reduceRingInto(partials, tp, owner, start, end, out);
      return;
    case Algorithm::OneShot:
      reduceOneShotInto(partials, tp, start, end, out);
      return;
    case Algorithm::Ordered:
      reduceOrderedInto(partials, tp, start, end, out);
      return;
  }
}

struct RingBlock {
  int64_t start;  // first element, inclusive
  int64_t end;    // last element, exclusive (clipped to the buffer length)
  int owner;      // ring position (= rank) whose ring order sums the block
  int64_t channel;
};

/**
 * The block layout of a ring all-reduce of n elements over tp ranks (ringAllReduce.ts
 * ringBlocks, NCCL chunk ownership): loops of channels*tp*chunkElems elements; in a loop at
 * offset L, realChunk = min(chunkElems, alignUp(ceil((n-L) / (channels*tp)), 16)) and block
 * b (channel b / tp) of realChunk elements is owned by ring position b % tp.
 * `blockAt(i)` gives the block holding element i without listing the blocks.
 */
class RingLayout {
 public:
  /** checks as ringBlocks; channels and chunkElems as the attribute's (integral) values */
  RingLayout(int64_t n, int tp, double channels, double chunkElems) : n_(n), tp_(tp) {
    if (n < 0) fail(ErrorKind::Size, "ring all-reduce: element count must be a non-negative integer, got " + std::to_string(n));
    checkPositive(tp, "tp");
    checkPositive(channels, "channels");
    checkPositive(chunkElems, "chunkElems");
    // Values past n + RING_ALIGN_ELEMS change no block (realChunk <= alignUp(n, 16), at most
    // n blocks per loop), so clamping keeps the layout exact and the int64 arithmetic in range.
    const double cap = static_cast<double>(n) + RING_ALIGN_ELEMS + 1;
    channels_ = static_cast<int64_t>(std::min(channels, cap));
    chunkElems_ = static_cast<int64_t>(std::min(chunkElems, cap));
    blocksPerLoop_ = channels_ * tp_;
    const double loop = static_cast<double>(blocksPerLoop_) * static_cast<double>(chunkElems_);
    loopSize_ = loop > static_cast<double>(n) ? n + 1 : blocksPerLoop_ * chunkElems_;
  }

  /** the block that holds element i (0 <= i < n) */
  RingBlock blockAt(int64_t i) const {
    const int64_t loopOffset = (i / loopSize_) * loopSize_;
    const int64_t rc = realChunk(loopOffset);
    const int64_t b = (i - loopOffset) / rc;
    const int64_t start = loopOffset + b * rc;
    return {start, std::min(start + rc, n_), static_cast<int>(b % tp_), b / tp_};
  }

  /** every block, in buffer order (they tile [0, n) exactly) */
  std::vector<RingBlock> blocks() const {
    std::vector<RingBlock> out;
    for (int64_t i = 0; i < n_;) {
      out.push_back(blockAt(i));
      i = out.back().end;
    }
    return out;
  }

 private:
  static void checkPositive(double v, const char* name) {
    if (!(std::isfinite(v) && std::floor(v) == v && v >= 1)) {
      fail(ErrorKind::Attr, std::string("ring all-reduce: ") + name + " must be a positive integer, got " + js::number(v));
    }
  }
  int64_t realChunk(int64_t loopOffset) const {
    const int64_t perBlock = (n_ - loopOffset + blocksPerLoop_ - 1) / blocksPerLoop_;
    const int64_t aligned = (perBlock + RING_ALIGN_ELEMS - 1) / RING_ALIGN_ELEMS * RING_ALIGN_ELEMS;
    return std::min(chunkElems_, aligned);
  }
  int64_t n_;
  int64_t tp_;
  int64_t channels_ = 1, chunkElems_ = 1, blocksPerLoop_ = 1, loopSize_ = 1;
};

/** Elements [start, end) of the ring all-reduced buffer (every rank's result) into out[0 ..). */
inline void ringAllReduceRange(const uint16_t* const* partials, int tp, const RingLayout& layout, int64_t start, int64_t end, uint16_t* out) {
  for (int64_t i = start; i < end;) {
    const RingBlock b = layout.blockAt(i);
    const int64_t stop = std::min(b.end, end);
    reduceRingInto(partials, tp, b.owner, i, stop, out + (i - start));
    i = stop;
  }
}

}  // namespace hcsp::reduce
