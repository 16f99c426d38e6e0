// This machine's ceilings, measured in the same run as the benchmarks: numpy's fp32 GEMM
// (py/gemm_ceiling.py, py/machine_ceilings.py) and the copy bandwidth of a large buffer.
import type { ModelConfig } from '@hcsp/core';
import { shapeKey, type GemmShape, type GraphCost } from './graphCost.ts';
import { hcMixFlops, hcMixGemms } from './hcMixCounts.ts';
import { pythonFailure, runPythonScript } from './python.ts';
import { median } from './timing.ts';

export interface GemmCeiling {
  /** GFLOP/s of the two GEMMs together (total flops / summed median times), or null */
  gflops: number | null;
  /** what measured it, or why it could not be measured */
  note: string;
}

/** numpy float32 a @ b at the mix's two shapes (py/gemm_ceiling.py): their flops over their summed median times. */
export function measureGemmCeiling(config: ModelConfig, tokens: number, reps: number): GemmCeiling {
  const shapes = hcMixGemms(config);
  let stdout: string;
  try {
    stdout = runPythonScript('gemm_ceiling.py', [String(tokens), String(reps), JSON.stringify(shapes)]);
  } catch (e) {
    return { gflops: null, note: `unavailable: python3/numpy failed (${pythonFailure(e)})` };
  }
  const r = JSON.parse(stdout) as { seconds: number[]; numpy: string; blas: string };
  const seconds = r.seconds.reduce((a, b) => a + b, 0);
  return { gflops: hcMixFlops(config, tokens) / seconds / 1e9, note: `numpy ${r.numpy} (${r.blas}) float32 a @ b, median of ${reps}` };
}

export interface Ceilings {
  /** median seconds of numpy a[T,K] @ b[K,O], by shapeKey; empty when numpy is not there */
  gemmSeconds: Record<string, number>;
  gemmNote: string;
  /** the copy bandwidth used in the bounds, GB/s of bytes read + written (the best of the copies below), or null */
  bandwidthGBps: number | null;
  bandwidthNote: string;
  copies: { what: string; gbps: number }[];
}

/** Node's Buffer.copy of `bytes` (one thread): median seconds of reps. */
function nodeCopySeconds(bytes: number, reps: number): number {
  const src = Buffer.alloc(bytes, 1);
  const dst = Buffer.allocUnsafe(bytes);
  src.copy(dst);
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    src.copy(dst);
    ts.push((performance.now() - t0) / 1000);
  }
  return median(ts);
}

/**
 * numpy float32 a @ b at each shape (median of reps, a shape under 50 ms run in a loop) and the
 * copy bandwidth: Node's Buffer.copy, numpy's copyto on one thread and split over two
 * (py/machine_ceilings.py).
 */
export function measureCeilings(shapes: GemmShape[], reps: number, copyBytes: number): Ceilings {
  const copies: { what: string; gbps: number }[] = [];
  const mib = `${copyBytes / 2 ** 20} MiB`;
  copies.push({ what: `Node Buffer.copy of ${mib}, 1 thread`, gbps: (2 * copyBytes) / nodeCopySeconds(copyBytes, Math.max(3, reps)) / 1e9 });
  let gemmSeconds: Record<string, number> = {};
  let gemmNote: string;
  try {
    const stdout = runPythonScript('machine_ceilings.py', [JSON.stringify(shapes.map((s) => [s.T, s.K, s.O])), String(Math.max(3, reps)), String(copyBytes)]);
    const r = JSON.parse(stdout) as { seconds: number[]; copy1: number; copy2: number; numpy: string; blas: string };
    gemmSeconds = Object.fromEntries(shapes.map((s, i) => [shapeKey(s), r.seconds[i]]));
    gemmNote = `numpy ${r.numpy} (${r.blas}) float32 a @ b, median of ${Math.max(3, reps)}`;
    copies.push({ what: `numpy copyto of ${mib}, 1 thread`, gbps: (2 * copyBytes) / r.copy1 / 1e9 });
    copies.push({ what: `numpy copyto of ${mib}, split over 2 threads`, gbps: (2 * copyBytes) / r.copy2 / 1e9 });
  } catch (e) {
    gemmNote = `unavailable: python3/numpy failed (${pythonFailure(e)})`;
  }
  const best = copies.reduce((a, b) => (b.gbps > a.gbps ? b : a));
  return {
    gemmSeconds,
    gemmNote,
    bandwidthGBps: best.gbps,
    bandwidthNote: `${best.what} (the fastest of ${copies.length}); bytes read + bytes written per second, median`,
    copies,
  };
}

/** Seconds a graph cannot beat here: each GEMM at numpy's time for its shape, everything else at the copy bandwidth. */
export function roofline(cost: GraphCost, ceilings: Ceilings): { gemmSeconds: number; memorySeconds: number; seconds: number } | null {
  if (ceilings.bandwidthGBps === null) return null;
  let gemmSeconds = 0;
  for (const g of cost.gemms) {
    const s = ceilings.gemmSeconds[shapeKey(g.shape)];
    if (s === undefined) return null;
    gemmSeconds += g.count * s;
  }
  const memorySeconds = (cost.otherBytes + 2 * cost.ioBytes) / (ceilings.bandwidthGBps * 1e9);
  return { gemmSeconds, memorySeconds, seconds: gemmSeconds + memorySeconds };
}
