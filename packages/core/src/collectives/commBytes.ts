import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import type { CollectiveOpName } from '../graph/ops/registry.ts';
import { checkReduceAlgorithm } from './reduceOrder.ts';

// Bytes SENT per rank by one collective, with nccl-tests' ring accounting (its "bus
// bandwidth" factors, PERFORMANCE.md): all-reduce 2*(tp-1)/tp * S, reduce-scatter and
// all-gather (tp-1)/tp * S, where S is the size of the full buffer ([C*tp, ...]). A ring
// sends uneven chunk sizes per rank when S is not divisible by tp; the value is the mean
// over ranks, so it can be fractional. tp = 1 sends nothing.
// Decisions recorded here:
// - 'oneshot' all-reduce: each rank's whole buffer goes to each of the tp-1 peers
//   (vLLM/aiter one-shot custom all-reduce), (tp-1) * S.
// - 'oneshot' reduce-scatter: each rank sends each peer only that peer's block, which is
//   the same (tp-1)/tp * S as the ring.
// - 'ordered' is a summation order, not a transport: counted as a ring (a pipelined
//   chain reduce plus chain broadcast also sends 2*(tp-1)/tp * S per rank on average).
// - all-gather adds nothing, so it takes no algorithm (pass null).

/** a declared collective (spOps.ts) */
export type CollectiveOp = CollectiveOpName;

function checkBytes(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0) throw new Error(`commBytesOf: ${name} must be a non-negative integer, got ${value}`);
}

/** Bytes one rank sends for `op` on tensors of the given per-rank sizes, at tp ranks. */
export function commBytesOf(op: CollectiveOp, algorithm: ReduceAlgorithm | null, perRankInputBytes: number, perRankOutputBytes: number, tp: number): number {
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`commBytesOf: tp must be a positive integer, got ${tp}`);
  checkBytes(perRankInputBytes, 'perRankInputBytes');
  checkBytes(perRankOutputBytes, 'perRankOutputBytes');
  switch (op) {
    case 'allReduce': {
      const alg = checkReduceAlgorithm(algorithm, 'commBytesOf(allReduce)');
      if (perRankInputBytes !== perRankOutputBytes) {
        throw new Error(`commBytesOf(allReduce): input ${perRankInputBytes} bytes differs from output ${perRankOutputBytes} bytes`);
      }
      const full = perRankInputBytes;
      return alg === 'oneshot' ? (tp - 1) * full : (2 * (tp - 1) * full) / tp;
    }
    case 'reduceScatter': {
      checkReduceAlgorithm(algorithm, 'commBytesOf(reduceScatter)');
      if (perRankInputBytes !== perRankOutputBytes * tp) {
        throw new Error(`commBytesOf(reduceScatter): input ${perRankInputBytes} bytes is not tp ${tp} times output ${perRankOutputBytes} bytes`);
      }
      return (tp - 1) * perRankOutputBytes;
    }
    case 'allGather': {
      if (algorithm !== null) throw new Error(`commBytesOf(allGather): all-gather adds nothing, algorithm must be null, got ${JSON.stringify(algorithm)}`);
      if (perRankOutputBytes !== perRankInputBytes * tp) {
        throw new Error(`commBytesOf(allGather): output ${perRankOutputBytes} bytes is not tp ${tp} times input ${perRankInputBytes} bytes`);
      }
      return (tp - 1) * perRankInputBytes;
    }
    default:
      throw new Error(`commBytesOf: unknown collective ${JSON.stringify(op)}; expected allReduce, reduceScatter or allGather`);
  }
}
