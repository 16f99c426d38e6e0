// The collectives of host-device ranks over MPI, each in the exact per-element order of core's
// simulated one (collectives/reduceOrder.ts, ringAllReduce.ts, reduceScatter.ts, allGather.ts),
// so that a real multi-process run is bit-identical to the in-process run with the same
// --reduce algorithm. The arithmetic is ours (reduce_order.h); MPI moves the bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "../host/kernels/reduce_order.h"
#include "mpi_comm.h"

namespace hcsp::mpi {

/** How 'ordered' folds the ranks' partials at a segment's owner. */
enum class Fold {
  /** MPI_Reduce_local with the bf16 sum as a user-defined, non-commutative MPI op, rank by rank */
  MpiOp,
  /** the same chain, as reduce_order.h's loop */
  Loop,
};

/** What every rank states about a collective before it moves data (CollectiveOptions.check). */
struct CollectiveCall {
  Kind kind;
  /** -1 for all-gather (it adds nothing) */
  int algorithm;
  /** the graph node's id: every rank's part names a collective by the same id */
  int64_t tag;
  /** elements (bf16) of a reduction, bytes of an all-gather, per rank */
  int64_t count;
  /** the all-gather's element size (1 for raw bytes), 2 for the bf16 reductions */
  int64_t elementBytes;
  int64_t channels;
  int64_t chunkElems;
};

struct CollectiveOptions {
  /** ring only (RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS) */
  double channels = reduce::RING_DEFAULT_CHANNELS;
  double chunkElems = reduce::RING_DEFAULT_CHUNK_ELEMS;
  Fold fold = Fold::MpiOp;
  int64_t tag = -1;
  /**
   * before moving data, the ranks exchange what they are about to do (CollectiveCall, 64
   * bytes each, counted as Kind::Control) and all refuse if any rank differs: ranks at
   * different graph nodes, with different sizes or algorithms, fail with one message naming
   * every rank's call instead of hanging or exchanging mismatched bytes
   */
  bool check = true;
};

/** every rank's bf16 sum in `algorithm`'s order, n elements per rank */
std::vector<uint16_t> allReduceBf16(World& world, const uint16_t* x, int64_t n, reduce::Algorithm algorithm, const CollectiveOptions& options);
/** this rank's shard (n / size elements) of the bf16 sum in `algorithm`'s order */
std::vector<uint16_t> reduceScatterBf16(World& world, const uint16_t* x, int64_t n, reduce::Algorithm algorithm, const CollectiveOptions& options);
/** every rank's `bytes` bytes concatenated in rank order (any dtype: elementBytes for the check) */
std::vector<uint8_t> allGatherBytes(World& world, const uint8_t* x, int64_t bytes, int64_t elementBytes, const CollectiveOptions& options,
                                    Kind kind = Kind::AllGather);

}  // namespace hcsp::mpi
