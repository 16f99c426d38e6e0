// How each algorithm moves data (every step an MPI_Sendrecv, so no pattern can deadlock on
// buffering) and where it adds:
//
// - ring all-reduce: NCCL's ring. The buffer's blocks (reduce::RingLayout, ringBlocks of
//   ringAllReduce.ts) are grouped by owner into one segment per ring position. Reduce
//   phase, tp-1 steps: at step s rank r sends to r+1 its partial of segment r-1-s (its own
//   raw x at s = 0) and receives from r-1 the partial of segment r-2-s, which it adds as
//   acc = bf(x_r + acc). The partial of segment c thus starts at c+1 and ends at c, the order
//   reduceRingInto states. All-gather phase, tp-1 steps: rank r forwards segment r-s.
// - ring reduce-scatter: the reduce phase alone, segment c = rows [c*C, (c+1)*C).
// - oneshot all-reduce: every rank sends its whole buffer to every peer (tp-1 steps of a
//   shifted exchange, r -> r+s) and sums all of them in rank order in fp32, one bf16
//   rounding at the end (reduceOneShotInto).
// - oneshot / ordered reduce-scatter: rank r sends peer p only p's segment; each owner
//   sums its segment in rank order (reduceOneShotInto / the ordered chain).
// - ordered all-reduce: the ordered reduce-scatter over tp contiguous segments, then every
//   owner sends its summed segment to every peer.
// - all-gather: the ring all-gather of the shards, rank order.
//
// Bytes each rank sends (counted per call in World::sendrecv) are those of core's accounting
// (collectives/commBytes.ts): 2(tp-1)/tp*S for ring and ordered all-reduce, (tp-1)*S for
// oneshot all-reduce, (tp-1)*C for reduce-scatter and all-gather, where segments are equal;
// commBytes.ts gives the mean over ranks, which a rank's own count equals when S divides
// evenly among the segments (uneven segments move bytes between ranks, the sum is the same).
//
// 'ordered' folds at the owner with the bf16 sum as a user-defined MPI op created
// non-commutative (Fold::MpiOp: MPI_Reduce_local(acc, x_k): x_k = acc (+) x_k for
// k = 1..tp-1), or with the same chain as a loop (Fold::Loop). Why not MPI_Allreduce or
// MPI_Reduce with that op: for a non-commutative op the standard fixes the operands' rank
// order but not the parenthesization, and the implementations use it. Open MPI 4.1.4
// (Debian's), with an op that records its calls, at 4 ranks: MPI_Reduce's linear
// algorithm folds from the highest rank, x0+(x1+(x2+x3)), and MPI_Allreduce pairs them,
// (x0+x1)+(x2+x3); at 8 ranks, 4096 elements, both give
// (((x0+x1)+(x2+x3))+((x4+(x5+x6))+x7)). The reference's ordered sum is ((x0+x1)+x2)+x3,
// and with a bf16 rounding after every add the parenthesization changes the bits. So the
// chain is applied by us, one MPI_Reduce_local per rank, and the op's order is exactly the
// reference's.
#include "mpi_collectives.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>

namespace hcsp::mpi {

// The user function of the bf16 sum: inout[i] = bf(in[i] + inout[i]) in fp32, rounded to bf16,
// where `in` is the accumulation of the lower ranks (MPI's order for a non-commutative op:
// in (+) inout). Only ever applied to MPI_UINT16_T buffers of bf16 bit patterns.
void bf16SumUserFn(void* in, void* inout, int* len, MPI_Datatype* /*datatype*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  const int n = *len;
  for (int i = 0; i < n; i++) b[i] = reduce::addBf16(a[i], b[i]);
}

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

/** One segment per ring position / owner: its element ranges (in buffer order) and their total. */
struct Segments {
  std::vector<Ranges> ranges;
  std::vector<int64_t> count;
};

int mod(int64_t a, int m) { return static_cast<int>(((a % m) + m) % m); }

Segments ringSegments(int64_t n, int tp, double channels, double chunkElems) {
  Segments s{std::vector<Ranges>(tp), std::vector<int64_t>(tp, 0)};
  const reduce::RingLayout layout(n, tp, channels, chunkElems);
  for (const reduce::RingBlock& b : layout.blocks()) {
    s.ranges[b.owner].push_back({b.start, b.end});
    s.count[b.owner] += b.end - b.start;
  }
  return s;
}

/** tp contiguous segments: c*n/tp .. (c+1)*n/tp (floors), so each rank owns a share as even as n allows */
Segments contiguousSegments(int64_t n, int tp) {
  Segments s{std::vector<Ranges>(tp), std::vector<int64_t>(tp, 0)};
  for (int c = 0; c < tp; c++) {
    const int64_t start = n / tp * c + (n % tp) * c / tp;
    const int64_t end = n / tp * (c + 1) + (n % tp) * (c + 1) / tp;
    s.ranges[c].push_back({start, end});
    s.count[c] = end - start;
  }
  return s;
}

void pack(const uint16_t* x, const Ranges& ranges, std::vector<uint16_t>& out) {
  int64_t total = 0;
  for (const auto& [a, b] : ranges) total += b - a;
  out.resize(static_cast<size_t>(total));
  int64_t at = 0;
  for (const auto& [a, b] : ranges) {
    if (b > a) std::memcpy(out.data() + at, x + a, static_cast<size_t>(b - a) * sizeof(uint16_t));
    at += b - a;
  }
}

void unpack(const uint16_t* src, const Ranges& ranges, uint16_t* out) {
  int64_t at = 0;
  for (const auto& [a, b] : ranges) {
    if (b > a) std::memcpy(out + a, src + at, static_cast<size_t>(b - a) * sizeof(uint16_t));
    at += b - a;
  }
}

constexpr int64_t BF16 = 2;

std::string stepText(const char* what, const char* phase, int step, int steps) {
  return std::string(what) + " " + phase + " step " + std::to_string(step + 1) + " of " + std::to_string(steps);
}

/** NCCL's ring reduce phase over the segments: this rank's own segment, summed in ring order for it */
std::vector<uint16_t> ringReduce(World& w, Kind kind, const uint16_t* x, const Segments& seg, const char* what) {
  const int r = w.rank(), tp = w.size();
  std::vector<uint16_t> acc, in, mine;
  if (tp == 1) {
    pack(x, seg.ranges[0], acc);
    return acc;
  }
  pack(x, seg.ranges[mod(r - 1, tp)], acc);  // step 0 sends the raw x_r of segment r-1
  for (int s = 0; s < tp - 1; s++) {
    const int cs = mod(r - 1 - s, tp), cr = mod(r - 2 - s, tp);
    in.resize(static_cast<size_t>(seg.count[cr]));
    w.sendrecv(kind, acc.data(), seg.count[cs] * BF16, mod(r + 1, tp), in.data(), seg.count[cr] * BF16, mod(r - 1, tp), stepText(what, "reduce", s, tp - 1));
    pack(x, seg.ranges[cr], mine);
    for (size_t j = 0; j < in.size(); j++) in[j] = reduce::addBf16(mine[j], in[j]);
    std::swap(acc, in);
  }
  return acc;  // the last step received segment r - tp = r
}

/** this rank's segment of every rank's x, gathered at its owner (parts[k] = x_k's segment r) */
std::vector<std::vector<uint16_t>> gatherToOwner(World& w, Kind kind, const uint16_t* x, const Segments& seg, const char* what) {
  const int r = w.rank(), tp = w.size();
  std::vector<std::vector<uint16_t>> parts(tp);
  pack(x, seg.ranges[r], parts[r]);
  std::vector<uint16_t> out;
  for (int s = 1; s < tp; s++) {
    const int to = mod(r + s, tp), from = mod(r - s, tp);
    pack(x, seg.ranges[to], out);
    parts[from].resize(static_cast<size_t>(seg.count[r]));
    w.sendrecv(kind, out.data(), seg.count[to] * BF16, to, parts[from].data(), seg.count[r] * BF16, from, stepText(what, "exchange", s - 1, tp - 1));
  }
  return parts;
}

/** the ordered chain acc = x0; acc = bf(acc + x_k), k = 1..tp-1, at the owner */
std::vector<uint16_t> foldOrdered(World& w, std::vector<std::vector<uint16_t>>& parts, Fold fold) {
  const int tp = static_cast<int>(parts.size());
  const int64_t n = static_cast<int64_t>(parts[0].size());
  if (fold == Fold::Loop) {
    std::vector<const uint16_t*> ptrs(tp);
    for (int k = 0; k < tp; k++) ptrs[k] = parts[k].data();
    std::vector<uint16_t> out(static_cast<size_t>(n));
    reduce::reduceOrderedInto(ptrs.data(), tp, 0, n, out.data());
    return out;
  }
  constexpr int64_t PIECE = int64_t{1} << 30;
  for (int k = 1; k < tp; k++) {
    // parts[k] = parts[k-1] (+) parts[k]: the lower ranks' accumulation is the left operand
    for (int64_t at = 0; at < n; at += PIECE) {
      const int count = static_cast<int>(std::min(PIECE, n - at));
      w.check(MPI_Reduce_local(parts[k - 1].data() + at, parts[k].data() + at, count, MPI_UINT16_T, w.bf16SumOp()), "MPI_Reduce_local",
              "the ordered bf16 chain, + rank " + std::to_string(k) + "'s partial");
    }
  }
  return std::move(parts[tp - 1]);
}

/** the segment's sum at its owner in `algorithm`'s order (oneshot or ordered; ring has its own pattern) */
std::vector<uint16_t> sumAtOwner(World& w, Kind kind, const uint16_t* x, const Segments& seg, reduce::Algorithm algorithm, Fold fold, const char* what) {
  auto parts = gatherToOwner(w, kind, x, seg, what);
  if (algorithm == reduce::Algorithm::Ordered) return foldOrdered(w, parts, fold);
  const int tp = w.size();
  std::vector<const uint16_t*> ptrs(tp);
  for (int k = 0; k < tp; k++) ptrs[k] = parts[k].data();
  std::vector<uint16_t> out(parts[0].size());
  reduce::reduceOneShotInto(ptrs.data(), tp, 0, static_cast<int64_t>(out.size()), out.data());
  return out;
}

const char* algorithmName(int a) { return a < 0 ? "-" : reduce::ALGORITHM_NAMES[a]; }

std::string describe(const CollectiveCall& c) {
  std::string s = "node " + std::to_string(c.tag) + " " + kindName(c.kind);
  if (c.algorithm >= 0) s += std::string(" ") + algorithmName(c.algorithm);
  s += c.kind == Kind::AllGather ? " of " + std::to_string(c.count) + " bytes (" + std::to_string(c.elementBytes) + "-byte elements)"
                                 : " of " + std::to_string(c.count) + " bf16 elements";
  if (c.kind == Kind::AllReduce && c.algorithm == static_cast<int>(reduce::Algorithm::Ring)) {
    s += " (channels " + std::to_string(c.channels) + ", chunkElems " + std::to_string(c.chunkElems) + ")";
  }
  return s;
}

/** every rank states its call; all refuse, with the same message, unless every rank's equals rank 0's */
void agree(World& w, const CollectiveCall& mine) {
  const int tp = w.size();
  if (tp == 1) return;
  int64_t words[8] = {0x6863737031, static_cast<int64_t>(mine.kind), mine.algorithm, mine.tag, mine.count, mine.elementBytes, mine.channels, mine.chunkElems};
  static_assert(sizeof(words) == 64, "the call is 64 bytes");
  std::vector<int64_t> all(static_cast<size_t>(tp) * 8);
  CollectiveOptions unchecked;
  unchecked.check = false;
  const std::vector<uint8_t> bytes = allGatherBytes(w, reinterpret_cast<const uint8_t*>(words), sizeof(words), 8, unchecked, Kind::Control);
  std::memcpy(all.data(), bytes.data(), bytes.size());
  bool same = true;
  for (int k = 1; k < tp; k++) same = same && std::memcmp(all.data(), all.data() + 8 * k, sizeof(words)) == 0;
  if (same) return;
  std::string where;
  for (int k = 0; k < tp; k++) {
    const int64_t* v = all.data() + 8 * k;
    const CollectiveCall c{static_cast<Kind>(v[1]), static_cast<int>(v[2]), v[3], v[4], v[5], v[6], v[7]};
    where += (k ? "; rank " : "rank ") + std::to_string(k) + " at " + describe(c);
  }
  failMpi(ErrorCode::Mismatch, "ranks reached different collectives: " + where);
}

int64_t integral(double v) { return std::isfinite(v) && v >= 0 && v < 9.0e15 ? static_cast<int64_t>(v) : -1; }

void checkCount(int64_t n, const char* what) {
  if (n < 0) failMpi(ErrorCode::Argument, std::string(what) + ": element count must be a non-negative integer, got " + std::to_string(n));
}

}  // namespace

std::vector<uint16_t> allReduceBf16(World& w, const uint16_t* x, int64_t n, reduce::Algorithm algorithm, const CollectiveOptions& o) {
  w.requireReady("allReduce");
  checkCount(n, "allReduce");
  const int r = w.rank(), tp = w.size();
  const bool ring = algorithm == reduce::Algorithm::Ring;
  // the agreement first: a bad channels/chunkElems then fails the layout on every rank alike
  if (o.check) agree(w, {Kind::AllReduce, static_cast<int>(algorithm), o.tag, n, BF16, ring ? integral(o.channels) : 0, ring ? integral(o.chunkElems) : 0});
  Segments seg = ring ? ringSegments(n, tp, o.channels, o.chunkElems) : contiguousSegments(n, tp);
  std::vector<uint16_t> out(static_cast<size_t>(n));
  if (tp == 1) {
    if (n) std::memcpy(out.data(), x, static_cast<size_t>(n) * sizeof(uint16_t));
    return out;
  }
  if (algorithm == reduce::Algorithm::OneShot) {
    std::vector<std::vector<uint16_t>> all(tp);
    all[r].assign(x, x + n);
    for (int s = 1; s < tp; s++) {
      const int to = mod(r + s, tp), from = mod(r - s, tp);
      all[from].resize(static_cast<size_t>(n));
      w.sendrecv(Kind::AllReduce, x, n * BF16, to, all[from].data(), n * BF16, from, stepText("allReduce oneshot", "exchange", s - 1, tp - 1));
    }
    std::vector<const uint16_t*> ptrs(tp);
    for (int k = 0; k < tp; k++) ptrs[k] = all[k].data();
    reduce::reduceOneShotInto(ptrs.data(), tp, 0, n, out.data());
    return out;
  }
  std::vector<uint16_t> own =
      ring ? ringReduce(w, Kind::AllReduce, x, seg, "allReduce ring") : sumAtOwner(w, Kind::AllReduce, x, seg, algorithm, o.fold, "allReduce ordered");
  unpack(own.data(), seg.ranges[r], out.data());
  std::vector<uint16_t> buf, send;
  for (int s = 0; s < tp - 1; s++) {
    // ring: forward segment r-s to r+1; ordered: send the own segment to r+1+s
    const int to = ring ? mod(r + 1, tp) : mod(r + 1 + s, tp), from = ring ? mod(r - 1, tp) : mod(r - 1 - s, tp);
    const int cs = ring ? mod(r - s, tp) : r, cr = ring ? mod(r - 1 - s, tp) : from;
    pack(out.data(), seg.ranges[cs], send);
    buf.resize(static_cast<size_t>(seg.count[cr]));
    w.sendrecv(Kind::AllReduce, send.data(), seg.count[cs] * BF16, to, buf.data(), seg.count[cr] * BF16, from,
               stepText(ring ? "allReduce ring" : "allReduce ordered", "gather", s, tp - 1));
    unpack(buf.data(), seg.ranges[cr], out.data());
  }
  return out;
}

std::vector<uint16_t> reduceScatterBf16(World& w, const uint16_t* x, int64_t n, reduce::Algorithm algorithm, const CollectiveOptions& o) {
  w.requireReady("reduceScatter");
  checkCount(n, "reduceScatter");
  const int tp = w.size();
  if (o.check) agree(w, {Kind::ReduceScatter, static_cast<int>(algorithm), o.tag, n, BF16, 0, 0});
  if (n % tp != 0) failMpi(ErrorCode::Argument, "reduceScatter: " + std::to_string(n) + " elements are not divisible by the world size " + std::to_string(tp));
  Segments seg{std::vector<Ranges>(tp), std::vector<int64_t>(tp, n / tp)};
  for (int c = 0; c < tp; c++) seg.ranges[c].push_back({c * (n / tp), (c + 1) * (n / tp)});
  if (algorithm == reduce::Algorithm::Ring) return ringReduce(w, Kind::ReduceScatter, x, seg, "reduceScatter ring");
  if (tp == 1) return std::vector<uint16_t>(x, x + n);
  return sumAtOwner(w, Kind::ReduceScatter, x, seg, algorithm, o.fold,
                    algorithm == reduce::Algorithm::OneShot ? "reduceScatter oneshot" : "reduceScatter ordered");
}

std::vector<uint8_t> allGatherBytes(World& w, const uint8_t* x, int64_t bytes, int64_t elementBytes, const CollectiveOptions& o, Kind kind) {
  w.requireReady("allGather");
  if (bytes < 0) failMpi(ErrorCode::Argument, "allGather: byte count must be non-negative, got " + std::to_string(bytes));
  if (o.check) agree(w, {Kind::AllGather, -1, o.tag, bytes, elementBytes, 0, 0});
  const int r = w.rank(), tp = w.size();
  std::vector<uint8_t> out(static_cast<size_t>(bytes) * tp);
  if (bytes) std::memcpy(out.data() + r * bytes, x, static_cast<size_t>(bytes));
  for (int s = 0; s < tp - 1; s++) {
    const int cs = mod(r - s, tp), cr = mod(r - 1 - s, tp);
    w.sendrecv(kind, out.data() + cs * bytes, bytes, mod(r + 1, tp), out.data() + cr * bytes, bytes, mod(r - 1, tp),
               stepText(kind == Kind::Control ? "agreement check" : "allGather", "ring", s, tp - 1));
  }
  return out;
}

}  // namespace hcsp::mpi
