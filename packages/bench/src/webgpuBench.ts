// The HC mix bench (`hcsp bench` without --suite): the full-dimension HC mix (combine-norm,
// W_cat GEMM, scaled silu, up GEMM, gated mean) of one layer at tp 1, timed on the WebGPU
// backend and on the CPU reference, checked bit for bit between the two, and set against the
// machine's fp32 GEMM ceiling (numpy's a @ b, OpenBLAS here) at the same two GEMM shapes.
import { loadavg } from 'node:os';
import { createBackend } from '@hcsp/backends';
import {
  bytesPerElement,
  FLASH_NEXT,
  numel,
  Rng,
  runOnce,
  SyntheticWeightSource,
  type Graph,
  type ModelConfig,
  type RunResult,
  type Tensor,
  type ValueId,
} from '@hcsp/core';
import { measureGemmCeiling, type GemmCeiling } from './ceilings.ts';
import { hcMixBenchGraph, hcMixWeightSpecs } from './graphs.ts';
import { hcMixBytes, hcMixFlops } from './hcMixCounts.ts';
import { NO_HOOKS, type BenchHooks } from './hooks.ts';
import { median } from './timing.ts';

export interface BenchOptions {
  tokens: number[];
  reps: number;
  cpuReps: number;
  seed: number;
  json: boolean;
  /** no progress lines on stderr */
  quiet: boolean;
  /** --max-memory as given: read by the caller's memory guard (BenchHooks.memory), not here */
  maxMemory?: string;
}

/** null when every graph output has the same bits, else where the first difference is. */
function firstDifference(graph: Graph, got: RunResult, want: RunResult): string | null {
  for (const id of graph.outputs) {
    const a = got.values.get(id);
    const b = want.values.get(id);
    if (!a || !b) return `output '${id}' is missing from the ${a ? 'cpu reference' : 'webgpu'} result`;
    const da = a.data as Uint16Array;
    const db = b.data as Uint16Array;
    if (da.length !== db.length) return `output '${id}' has ${da.length} elements on webgpu, ${db.length} on the cpu reference`;
    let diff = 0;
    let first = -1;
    for (let i = 0; i < da.length; i++) {
      if (da[i] !== db[i]) {
        if (first < 0) first = i;
        diff++;
      }
    }
    if (diff > 0)
      return `output '${id}': ${diff} of ${da.length} elements differ, first at ${first} (webgpu 0x${da[first].toString(16)}, cpu 0x${db[first].toString(16)})`;
  }
  return null;
}

export interface BenchRow {
  tokens: number;
  gflop: number;
  gbytes: number;
  webgpu: { seconds: number; reps: number[]; gflops: number; gbps: number };
  cpuReference: { seconds: number; reps: number[]; gflops: number; gbps: number };
  ceiling: GemmCeiling;
  /** GFLOP/s ratios (>1: webgpu is faster) */
  webgpuOverCpuReference: number;
  webgpuOverCeiling: number | null;
  bitExact: boolean;
  mismatch: string | null;
  /** 1-minute load average at the end of this T (the benchmark assumes an idle machine) */
  load: number;
}

export interface BenchReport {
  config: string;
  adapter: string;
  counted: { flops: string; bytes: string; time: string };
  rows: BenchRow[];
}

function randomStreams(config: ModelConfig, tokens: number, seed: number): Tensor {
  const width = config.hc.count * config.hiddenSize;
  return { dtype: 'bf16', shape: [tokens, width], data: new Rng(seed).fillBf16Normal(tokens * width, 1) };
}

async function timedRuns(
  hooks: BenchHooks,
  label: string,
  times: number,
  quiet: boolean,
  say: (line: string) => void,
  run: (onNode: (d: number, t: number) => void) => Promise<RunResult>,
): Promise<{ seconds: number[]; last: RunResult }> {
  const seconds: number[] = [];
  let last: RunResult | null = null;
  for (let i = 0; i < times; i++) {
    const progress = hooks.progress(`${label} ${i + 1}/${times}`, quiet);
    const t0 = performance.now();
    try {
      last = await run(progress.onNode);
    } finally {
      progress.stop();
    }
    seconds.push((performance.now() - t0) / 1000);
    say(`${label} ${i + 1}/${times}: ${seconds.at(-1)!.toFixed(2)} s`);
  }
  return { seconds, last: last! };
}

export async function runBench(opts: BenchOptions, hooks: BenchHooks = NO_HOOKS): Promise<BenchReport> {
  const config = FLASH_NEXT;
  const specs = hcMixWeightSpecs(config);
  const say = (line: string): void => {
    if (!opts.quiet) process.stderr.write(`bench: ${line}\n`);
  };
  // The largest T decides; its webgpu outputs are still held while the cpu reference runs.
  const largest = hcMixBenchGraph(config, Math.max(...opts.tokens));
  const heldOutputs = largest.outputs.reduce((sum, id) => sum + numel(largest.values[id].shape) * bytesPerElement(largest.values[id].dtype), 0);
  hooks.memory.checkGraph(`bench at T ${Math.max(...opts.tokens)}`, largest, specs, heldOutputs);
  const weights = new SyntheticWeightSource(specs, opts.seed);
  say('starting the WebGPU backend');
  // Only the device's phases are interruptible (hooks.onDevice): the cpu reference runs on this thread.
  const gpu = await hooks.onDevice(() => createBackend('webgpu'));
  const rows: BenchRow[] = [];
  try {
    for (const T of opts.tokens) {
      const graph = hcMixBenchGraph(config, T);
      const feeds = new Map<ValueId, Tensor>([['streams', randomStreams(config, T, opts.seed + T)]]);
      say(`T=${T}: webgpu weights upload and warm-up (pipeline compile, not timed)`);
      // prepared once: the timed runs do not include the weight upload
      const prepared = await hooks.onDevice(() => gpu.prepare(graph, weights));
      await hooks.onDevice(() => prepared.run(feeds));
      const g = await timedRuns(hooks, `T=${T} webgpu`, opts.reps, opts.quiet, say, (onNode) => hooks.onDevice(() => prepared.run(feeds, { onNode })));
      await prepared.dispose();
      const cpu = await createBackend('cpu');
      const c = await timedRuns(hooks, `T=${T} cpu-reference`, opts.cpuReps, opts.quiet, say, (onNode) => runOnce(cpu, graph, feeds, weights, { onNode }));
      say(`T=${T}: fp32 GEMM ceiling (numpy)`);
      const ceiling = measureGemmCeiling(config, T, Math.max(3, opts.reps));
      const mismatch = firstDifference(graph, g.last, c.last);
      const flops = hcMixFlops(config, T);
      const bytes = hcMixBytes(config, T);
      const rate = (reps: number[]) => {
        const s = median(reps);
        return { seconds: s, reps, gflops: flops / s / 1e9, gbps: bytes / s / 1e9 };
      };
      const webgpu = rate(g.seconds);
      const cpuReference = rate(c.seconds);
      rows.push({
        tokens: T,
        gflop: flops / 1e9,
        gbytes: bytes / 1e9,
        webgpu,
        cpuReference,
        ceiling,
        webgpuOverCpuReference: webgpu.gflops / cpuReference.gflops,
        webgpuOverCeiling: ceiling.gflops === null ? null : webgpu.gflops / ceiling.gflops,
        bitExact: mismatch === null,
        mismatch,
        load: loadavg()[0],
      });
    }
  } finally {
    await gpu.dispose();
  }
  return {
    config: config.name,
    adapter: gpu.describe(),
    counted: {
      flops: '2*T*K*O for the two GEMMs only: 2*T*(10240*324 + 320*10240); elementwise ops not counted',
      bytes:
        'each tensor every op reads or writes, once, at bf16 storage size (GEMM operands and outputs plus the combine-norm, scaled-silu and gated-mean tensors); cache re-reads not counted',
      time: 'wall time of one run (upload of the input, all dispatches, readback of x, streams and raw; webgpu weights uploaded once before, untimed; the cpu reference prepares per run, which costs nothing there), median of reps; webgpu after one untimed warm-up run',
    },
    rows,
  };
}

export function formatBenchReport(r: BenchReport): string {
  const f = (v: number, d = 2) => v.toFixed(d);
  const lines = [`hc mix bench: ${r.config}, tp 1, ${r.adapter}`, `flops: ${r.counted.flops}`, `bytes: ${r.counted.bytes}`, `time: ${r.counted.time}`];
  for (const row of r.rows) {
    lines.push(
      `T=${row.tokens} (${f(row.gflop)} GFLOP, ${f(row.gbytes, 3)} GB; load ${f(row.load)} on this machine)`,
      `  webgpu        ${f(row.webgpu.seconds, 3)} s  ${f(row.webgpu.gflops)} GFLOP/s  ${f(row.webgpu.gbps, 3)} GB/s  (median of ${row.webgpu.reps.length}: ${row.webgpu.reps.map((s) => f(s, 3)).join(' ')})`,
      `  cpu-reference ${f(row.cpuReference.seconds, 3)} s  ${f(row.cpuReference.gflops)} GFLOP/s  ${f(row.cpuReference.gbps, 3)} GB/s  (${row.cpuReference.reps.length === 1 ? 'one rep' : `median of ${row.cpuReference.reps.length}`})`,
      `  fp32 ceiling  ${row.ceiling.gflops === null ? '-' : `${f(row.ceiling.gflops)} GFLOP/s`}  (${row.ceiling.note})`,
      `  webgpu/cpu-reference ${f(row.webgpuOverCpuReference, 3)}x   webgpu/ceiling ${row.webgpuOverCeiling === null ? 'unavailable' : `${f(row.webgpuOverCeiling, 4)}x`}`,
      `  webgpu output vs cpu reference: ${row.bitExact ? 'bit-exact' : `DIFFERS: ${row.mismatch}`}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
