import { reduceRingInto } from './reduceOrder.ts';

// Ring all-reduce with NCCL/RCCL chunk ownership, modelled on NCCL's runRing for
// allreduce (the per-loop layout of src/collectives/device/all_reduce.h before NCCL 2.19):
// the flat buffer is processed in loops of channels*tp*chunkElems
// elements; in each loop, block b = channel*tp + c of realChunk elements is owned by ring
// position c, and each of its elements is summed in ring order for owner c. The ring is
// the identity ring (ring position = rank id). Only the reduction order matters here; the
// all-gather half copies owners' results, so every rank ends with the same buffer.

/**
 * Channels (rings run in parallel). NCCL/RCCL pick the count from the topology at run
 * time, so it is a per-node attribute; 2 is the default because it is the smallest count
 * whose blocks interleave (channel 1's blocks sit between channel 0's in every loop).
 */
export const RING_DEFAULT_CHANNELS = 2;

/**
 * Elements per chunk: NCCL's SIMPLE-protocol all-reduce chunk is
 * ALLREDUCE_CHUNKSTEPS (NCCL_STEPS/2 = 4) steps of NCCL_BUFFSIZE/NCCL_STEPS = 4 MiB/8 =
 * 512 KiB, i.e. 2 MiB per chunk = 1,048,576 bf16 elements with the default buffer size.
 */
export const RING_DEFAULT_CHUNK_ELEMS = 1_048_576;

/**
 * A partial loop's per-block size is rounded up to this many elements (32 bytes of bf16).
 * NCCL versions differ (legacy: one element per thread-vector of the block, 2.19+: 16
 * bytes); the value only moves block boundaries, and a multiple of 16 keeps blocks on
 * whole vectors. Decision recorded here; change it only together with the tests.
 */
export const RING_ALIGN_ELEMS = 16;

export interface RingBlock {
  /** first element, inclusive */
  start: number;
  /** last element, exclusive (clipped to the buffer length) */
  end: number;
  /** ring position (= rank) that owns the block: its elements are summed in ring order for it */
  owner: number;
  channel: number;
}

export interface RingOptions {
  channels: number;
  chunkElems: number;
}

function checkPositiveInt(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`ring all-reduce: ${name} must be a positive integer, got ${value}`);
  }
}

function alignUp(x: number, align: number): number {
  return Math.ceil(x / align) * align;
}

/** The blocks of a ring all-reduce of n elements, in buffer order; they tile [0, n) exactly. */
export function ringBlocks(n: number, tp: number, { channels, chunkElems }: RingOptions): RingBlock[] {
  if (!Number.isInteger(n) || n < 0) throw new Error(`ring all-reduce: element count must be a non-negative integer, got ${n}`);
  checkPositiveInt(tp, 'tp');
  checkPositiveInt(channels, 'channels');
  checkPositiveInt(chunkElems, 'chunkElems');
  const blocksPerLoop = channels * tp;
  const loopSize = blocksPerLoop * chunkElems;
  const blocks: RingBlock[] = [];
  for (let loopOffset = 0; loopOffset < n; loopOffset += loopSize) {
    const realChunk = Math.min(chunkElems, alignUp(Math.ceil((n - loopOffset) / blocksPerLoop), RING_ALIGN_ELEMS));
    for (let b = 0; b < blocksPerLoop; b++) {
      const start = loopOffset + b * realChunk;
      if (start >= n) break;
      blocks.push({ start, end: Math.min(start + realChunk, n), owner: b % tp, channel: Math.floor(b / tp) });
    }
  }
  return blocks;
}

/**
 * The all-reduced buffer (bf16 bits) every rank receives, from one equally long bf16
 * buffer per rank.
 */
export function ringAllReduce(partials: readonly Uint16Array[], options: RingOptions): Uint16Array {
  const tp = partials.length;
  if (tp === 0) throw new Error('ring all-reduce: no ranks (tp = 0)');
  const n = partials[0].length;
  partials.forEach((p, r) => {
    if (p.length !== n) throw new Error(`ring all-reduce: rank ${r} has ${p.length} elements, rank 0 has ${n}`);
  });
  const out = new Uint16Array(n);
  for (const block of ringBlocks(n, tp, options)) {
    reduceRingInto(partials, block.owner, block.start, block.end, out, block.start);
  }
  return out;
}
