// The GPU check's HC steps with thresholds (issue 22): (1) the fused HC kernels at memory speed:
// hcCombineNorm (with its pending combine) and hcGatedMean at full HC dimensions, T = 4096, each
// at least HC_COPY_FRACTION of the device copy bandwidth the check measures in the same run;
// (2) sequence parallelism pays on the HC: the HC time per rank of a stack with SP on at most
// 1/tp + SP_SLACK of SP off (tp 2, the ranks simulated on one GPU). gpuCheck.ts runs them;
// gpuCheckHc.test.ts runs them on the emulated device and holds the verdicts to the thresholds.
//
// A kernel's time comes from a recorded run of a graph that chains it K times on resident
// operands (weights, so no feed crosses the bus), read back through a one-column slice: the
// run's one sync and replay are spread over K launches, where a node-by-node profile would add
// a host sync to every kernel of a few tens of microseconds.
import { FLASH_NEXT, preparePrefill, STAND_IN_SUB_LAYERS, type Backend, type Graph, type ModelConfig, type SyntheticWeightSource } from '@hcsp/core';
import { chainBuilder } from './gpuCheckChain.ts';
import { medianRunSeconds } from './gpuCheckTiming.ts';
import type { Verdict } from './gpuCheckVerdict.ts';

/** the fraction of the device copy bandwidth (bytes read + written per second) each HC kernel must reach */
export const HC_COPY_FRACTION = 0.7;
/** SP on's HC time per rank may exceed 1/tp of SP off's by this much (of SP off's) */
export const SP_SLACK = 0.15;
/** the HC ops whose time the SP step sums */
export const HC_OPS: ReadonlySet<string> = new Set(['hcCombineNorm', 'hcScaledSilu', 'hcGatedMean', 'hcCombine', 'hcExpand']);

/** the bytes an HC kernel must move at T rows (bf16 reads + writes; the weights and logits too) */
export function hcKernelBytes(op: 'hcCombineNorm' | 'hcGatedMean', config: ModelConfig, T: number): number {
  const h = config.hiddenSize;
  const n = config.hc.count;
  // combine-norm with its pending combine: x, y, raw, w read; the combined x and normed written
  if (op === 'hcCombineNorm') return 2 * (T * n * h * 3 + T * h + T * n + n * h);
  // gated mean: up and normed read, x written
  return 2 * (T * n * h * 2 + T * h);
}

/** one kernel's line: seconds, GB/s, its fraction of the copy bandwidth, pass when at least HC_COPY_FRACTION */
export function bandwidthVerdict(op: string, seconds: number, bytes: number, copyGbps: number): Verdict {
  const gbps = bytes / seconds / 1e9;
  const fraction = gbps / copyGbps;
  const pass = Number.isFinite(fraction) && fraction >= HC_COPY_FRACTION;
  const line = `  ${op.padEnd(15)} ${seconds.toFixed(6).padStart(9)} ${gbps.toFixed(1).padStart(8)}  ${(fraction * 100).toFixed(0).padStart(5)}%  ${pass ? 'pass' : `FAIL (under ${HC_COPY_FRACTION * 100}% of copy)`}`;
  return { line, pass };
}

/** SP on against off: pass when on / off <= 1/tp + SP_SLACK */
export function spVerdict(tp: number, offSeconds: number, onSeconds: number, what: string): Verdict {
  const ratio = onSeconds / offSeconds;
  const limit = 1 / tp + SP_SLACK;
  const pass = Number.isFinite(ratio) && ratio <= limit;
  const line = `SP: HC time per rank, ${what}, tp ${tp}: off ${offSeconds.toFixed(5)} s, on ${onSeconds.toFixed(5)} s, on/off ${ratio.toFixed(3)} (at most 1/tp + ${SP_SLACK} = ${limit.toFixed(3)}) ${pass ? 'pass' : 'FAIL'}`;
  return { line, pass };
}

/**
 * op chained `reps` times at full HC dimensions on T rows, every operand a synthetic weight:
 * hcCombineNorm feeds each combined x to the next (the pending combine's y and logits shared);
 * hcGatedMean cycles over three (up, normed) pairs, so that its reads do not come from a cache.
 * The output: the last result's first column.
 */
export function hcChainGraph(
  op: 'hcCombineNorm' | 'hcGatedMean',
  config: ModelConfig,
  T: number,
  reps: number,
): { graph: Graph; weights: SyntheticWeightSource } {
  const h = config.hiddenSize;
  const n = config.hc.count;
  const width = n * h;
  const { b, weight, finish } = chainBuilder(`${op} chain`, T, reps);
  const node = (k: number, inputs: string[], outputs: string[], attrs: Record<string, unknown>) =>
    b.node({ op, rank: 0, layer: 0, scope: `${op}.${k}`, inputs, outputs, attrs });
  let last: string;
  if (op === 'hcCombineNorm') {
    let x = weight('x', [T, width], 1);
    const y = weight('y', [T, h], 1);
    const raw = weight('raw', [T, n], 1);
    const w = weight('w', [width], 0.05);
    for (let k = 0; k < reps; k++) {
      const xNext = b.value(`x${k + 1}`, [T, width], 'bf16', 0);
      node(k, [x, y, raw, w], [xNext, b.value(`normed${k}`, [T, width], 'bf16', 0)], { streams: n, eps: 1e-6, contract: 'atom' });
      x = xNext;
    }
    last = x;
  } else {
    const pairs = [0, 1, 2].map((p) => [weight(`up${p}`, [T, width], 1.5), weight(`normed${p}`, [T, width], 1)]);
    last = '';
    for (let k = 0; k < reps; k++) {
      last = b.value(`mean${k}`, [T, h], 'bf16', 0);
      node(k, pairs[k % 3], [last], { streams: n, contract: 'atom' });
    }
  }
  return finish(last, 7);
}

/** seconds per launch of the chained op: the median recorded run (after a warm-up) over reps */
export async function timeChain(
  backend: Backend,
  op: 'hcCombineNorm' | 'hcGatedMean',
  config: ModelConfig,
  T: number,
  reps: number,
  runs = 5,
): Promise<number> {
  const { graph, weights } = hcChainGraph(op, config, T, reps);
  return (await medianRunSeconds(backend, graph, weights, runs)) / reps;
}

/** step 1: each fused HC kernel's line against the copy bandwidth; the header first */
export async function hcBandwidthStep(
  backend: Backend,
  copyGbps: number,
  options: { config?: ModelConfig; T?: number; reps?: number } = {},
): Promise<Verdict[]> {
  const config = options.config ?? FLASH_NEXT;
  const T = options.T ?? 4096;
  const reps = options.reps ?? 20;
  const header = `HC kernels at T=${T}, full dimensions (${config.name}), each chained ${reps} times in one recorded run (at least ${HC_COPY_FRACTION * 100}% of copy):`;
  const out: Verdict[] = [{ line: `${header}\n  kernel            seconds     GB/s   of copy`, pass: true }];
  for (const op of ['hcCombineNorm', 'hcGatedMean'] as const) {
    const s = await timeChain(backend, op, config, T, reps);
    out.push(bandwidthVerdict(op, s, hcKernelBytes(op, config, T), copyGbps));
  }
  return out;
}

/**
 * The HC stack the SP step times: Flash-Next's HC dimensions and layer count per rank, the
 * stand-in row-parallel linears for the sub-layers and a small vocabulary (the embedding and
 * head are not what it measures, and a Flash-Next table would take minutes to make).
 */
export function spStackConfig(base: ModelConfig = FLASH_NEXT): ModelConfig {
  return { ...base, name: `${base.name} HC stack`, vocabSize: 4096 };
}

/** seconds of the HC ops per rank in one run of the stack (each node waited for), median of runs after a warm-up */
export async function spHcSeconds(
  backend: Backend,
  config: ModelConfig,
  T: number,
  tp: number,
  sp: 'on' | 'off',
  layers: [number, number],
  runs = 3,
): Promise<number> {
  const p = preparePrefill({ config, tokens: T, tp, sp, reduce: 'ring', seed: 2, subLayers: STAND_IN_SUB_LAYERS, layers });
  const prepared = await backend.prepare(p.graph, p.weights as SyntheticWeightSource);
  try {
    await prepared.run(p.feeds);
    const totals: number[] = [];
    for (let r = 0; r < runs; r++) {
      let hc = 0;
      let last = performance.now();
      await prepared.run(p.feeds, {
        syncEachNode: true,
        onNode: (done) => {
          const now = performance.now();
          if (HC_OPS.has(p.graph.nodes[done - 1].op)) hc += (now - last) / 1000;
          last = now;
        },
      });
      totals.push(hc / tp);
    }
    totals.sort((a, b) => a - b);
    return totals[totals.length >> 1];
  } finally {
    await prepared.dispose();
  }
}

/** step 2: SP on against off at tp 2 on one GPU */
export async function spStep(backend: Backend, options: { config?: ModelConfig; T?: number; tp?: number; layers?: [number, number] } = {}): Promise<Verdict> {
  const config = options.config ?? spStackConfig();
  const T = options.T ?? 8192;
  const tp = options.tp ?? 2;
  const layers = options.layers ?? [0, 4];
  const off = await spHcSeconds(backend, config, T, tp, 'off', layers);
  const on = await spHcSeconds(backend, config, T, tp, 'on', layers);
  return spVerdict(tp, off, on, `${config.name} layers ${layers[0]}-${layers[1] - 1}, T=${T}`);
}
