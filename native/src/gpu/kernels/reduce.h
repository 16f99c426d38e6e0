// The canonical reduction order v1 on the GPU (core numerics/canonicalSum.ts, README "Canonical
// reduction order"): device functions for block kernels (vendor.h) and reduce.cu's kernels.
//
//   64 logical lanes; lane l owns the 8-term chunks starting at 8l + 512i and adds them into its
//   fp32 sum in i order, a chunk's terms in order, from +0; then an xor butterfly over the lanes,
//   m = 32, 16, 8, 4, 2, 1: every lane l gets fl(v[l] + v[l xor m]); the result is lane 0's.
//
// One logical lane per GPU thread: a block of 64 * R threads (R = 1..4) reduces R rows, thread t
// being lane t % 64 of row group t / 64. The butterfly exchanges through shared memory, so it
// needs no lane shuffle and does not depend on the wavefront width (64 on CDNA, 32 on NVIDIA).
#pragma once
#include "../vendor.h"

#define HCSP_CANONICAL_LANES 64
#define HCSP_CANONICAL_CHUNK 8
/** a lane's next chunk is this many terms after its last one */
#define HCSP_CANONICAL_STEP (HCSP_CANONICAL_LANES * HCSP_CANONICAL_CHUNK)
/** the rows a block reduces at most (a block of 256 threads) */
#define HCSP_CANONICAL_MAX_ROWS 4
/** the shared floats one row's butterfly exchanges through: two buffers of 64, one barrier per step */
#define HCSP_CANONICAL_EXCHANGE (2 * HCSP_CANONICAL_LANES)

/** this thread's lane in its row group (block kernels) */
HCSP_DEVICE int hcspCanonicalLane() { return HCSP_BLOCK_THREAD() % HCSP_CANONICAL_LANES; }
/** this thread's row group in its block: rows [0, HCSP_BLOCK_THREADS() / 64) */
HCSP_DEVICE int hcspCanonicalRowGroup() { return HCSP_BLOCK_THREAD() / HCSP_CANONICAL_LANES; }

/**
 * Lane `lane`'s chunks of a row of n terms, in its order: acc = chunk(acc, base, count) for each
 * chunk [base, base + count) (count 8, fewer for the row's last), acc starting at `init`. A
 * kernel that loads a chunk at once (16 bytes of bf16: contiguous in each lane, the lanes'
 * chunks side by side) walks the row with this and adds the chunk's terms in order itself.
 */
template <class T, class Chunk>
HCSP_DEVICE T hcspCanonicalLaneChunks(int lane, int64_t n, T init, const Chunk& chunk) {
  T acc = init;
  for (int64_t base = static_cast<int64_t>(lane) * HCSP_CANONICAL_CHUNK; base < n; base += HCSP_CANONICAL_STEP) {
    acc = chunk(acc, base, static_cast<int>(n - base < HCSP_CANONICAL_CHUNK ? n - base : HCSP_CANONICAL_CHUNK));
  }
  return acc;
}

/**
 * Lane `lane`'s sum before the butterfly over terms j in [0, n): acc = addTerm(acc, j) for its
 * chunks' j in order, acc starting at +0. addTerm returns fl(acc + term j) (for a product of
 * bf16 values, HCSP_FMAF(a, b, acc): the product is exact, so this is the reference's add).
 */
template <class AddTerm>
HCSP_DEVICE float hcspCanonicalLaneSum(int lane, int64_t n, const AddTerm& addTerm) {
  return hcspCanonicalLaneChunks(lane, n, 0.0f, [&](float acc, int64_t base, int count) {
    for (int64_t j = base; j < base + count; j++) acc = addTerm(acc, j);
    return acc;
  });
}

/**
 * The xor butterfly over a row group's 64 lane values with combine(mine, partner's) (the
 * step's two operands in that order): every lane returns its result after m = 32 .. 1. Every
 * thread of the block must call it (it waits at barriers), each group with its own `exchange`
 * (HCSP_CANONICAL_EXCHANGE values of T in shared memory). Two buffers, written in turn: a lane
 * writes one only after the barrier that every lane passes after its last read of it.
 */
template <class T, class Combine>
HCSP_DEVICE T hcspButterfly(T v, int lane, T* exchange, const Combine& combine) {
  int buffer = 0;
  for (int m = HCSP_CANONICAL_LANES / 2; m >= 1; m >>= 1) {
    T* values = exchange + buffer * HCSP_CANONICAL_LANES;
    values[lane] = v;
    HCSP_BARRIER();
    v = combine(v, values[lane ^ m]);
    buffer ^= 1;
  }
  return v;
}

/** The canonical butterfly over a row group's 64 lane sums (fl(v[l] + v[l xor m])): every lane returns the row's total. As hcspButterfly. */
HCSP_DEVICE float hcspCanonicalButterfly(float v, int lane, float* exchange) {
  return hcspButterfly(v, lane, exchange, [](float a, float b) { return a + b; });
}

/**
 * How many rows (row groups of 64 threads) a block of a row-per-group kernel takes: 4 (256
 * threads), fewer only where that would leave under HCSP_BLOCKS_TO_FILL blocks, so that a
 * launch at T/tp = 1024 (4096 HC (row, stream) pairs, 1024 rows) still spreads over an 80-CU
 * device several blocks per CU.
 */
#define HCSP_BLOCKS_TO_FILL 320
HCSP_HD int hcspRowsPerBlock(int64_t rows) {
  for (int r = HCSP_CANONICAL_MAX_ROWS; r > 1; r /= 2) {
    if ((rows + r - 1) / r >= HCSP_BLOCKS_TO_FILL) return r;
  }
  return 1;
}

/** the blocks of `rowsPerBlock` rows that cover `rows` (0 for none) */
HCSP_HD int64_t hcspBlocksFor(int64_t rows, int rowsPerBlock) { return (rows + rowsPerBlock - 1) / rowsPerBlock; }

/**
 * out[r] = the canonical fp32 sum of row r's squares, x[r, j]^2 for j in [0, n) (x bf16
 * [rows, n]). A block kernel: blocks of 64, 128, 192 or 256 threads (1-4 rows each); a grid of
 * fewer blocks than row groups loops over them. The bits depend only on the row.
 */
HCSP_GLOBAL void hcsp_canonical_sumsq_bf16(const uint16_t* x, float* out, int64_t rows, int64_t n);
