// `hcsp bench`: the full-dimension HC mix (combine-norm, W_cat GEMM, scaled silu, up GEMM,
// gated mean) of one layer at tp 1, timed on the WebGPU backend and on the CPU reference,
// checked bit for bit between the two, and set against the machine's fp32 GEMM ceiling
// (numpy's a @ b, OpenBLAS here) at the same two GEMM shapes.
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import type { Command } from 'commander';
import { createBackend } from '@hcsp/backends';
import {
  buildHcMix,
  bytesPerElement,
  FLASH_NEXT,
  GraphBuilder,
  hcPrefix,
  hcWeightSpecs,
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
import { estimateGraphMemory } from '../guards/memoryEstimate.ts';
import { checkMemory, MAX_MEMORY_HELP, memoryLimit } from '../guards/memoryGuard.ts';
import { parseIntStrict } from '../parseArgs.ts';
import { nodeProgress } from '../progress.ts';
import { interruptible } from '../signals.ts';
import { formatHostBenchReport, HOST_DEFAULTS, parseHostBenchOptions, runHostBench, type HostBenchCliOptions, type HostBenchReport } from './benchHost.ts';
import { parseSuiteOptions, SUITE_DEFAULTS, SUITE_BACKENDS, suiteCommand, type SuiteCliOptions } from './benchSuite.ts';
import { printResultsOnSaveFailure } from '../output/resultsNotSaved.ts';

const BF16_BYTES = 2;
const PREFIX = hcPrefix(0, 'attn');

export interface BenchOptions {
  tokens: number[];
  reps: number;
  cpuReps: number;
  seed: number;
  json: boolean;
  /** no progress lines on stderr */
  quiet: boolean;
  /** --max-memory as given */
  maxMemory?: string;
}

/** Parses '1024,4096' into distinct token counts, each >= 1, naming the option on error. */
export function parseTokenList(value: string, name = '--tokens'): number[] {
  const parts = value.split(',');
  const out = parts.map((p) => parseIntStrict(p, `${name} entry`, { min: 1, max: 1 << 20 }));
  if (new Set(out).size !== out.length) throw new Error(`${name} ${JSON.stringify(value)} lists a token count twice`);
  return out;
}

export interface BenchCliOptions {
  tokens: string;
  reps: string;
  cpuReps: string;
  seed: string;
  json?: boolean;
  quiet?: boolean;
  maxMemory?: string;
}

export function parseBenchOptions(raw: BenchCliOptions): BenchOptions {
  memoryLimit(raw.maxMemory); // a bad --max-memory fails before the browser starts
  return {
    tokens: parseTokenList(raw.tokens),
    reps: parseIntStrict(raw.reps, '--reps', { min: 1, max: 1000 }),
    cpuReps: parseIntStrict(raw.cpuReps, '--cpu-reps', { min: 1, max: 1000 }),
    seed: parseIntStrict(raw.seed, '--seed'),
    json: raw.json === true,
    quiet: raw.quiet === true,
    maxMemory: raw.maxMemory,
  };
}

/** The two GEMMs of the mix as [K, O] (y = x[T,K] w[O,K]^T): W_cat (r + n outputs), then up. */
export function hcMixGemms(config: ModelConfig): [number, number][] {
  const width = config.hc.count * config.hiddenSize;
  return [
    [width, config.hc.lowRank + config.hc.count],
    [config.hc.lowRank, width],
  ];
}

/** Flops counted: 2*T*K*O per GEMM (one multiply and one add per term); the elementwise ops are not counted. */
export function hcMixFlops(config: ModelConfig, tokens: number): number {
  return hcMixGemms(config).reduce((sum, [K, O]) => sum + 2 * tokens * K * O, 0);
}

/**
 * Bytes counted: every tensor each op reads or writes, once, at its bf16 storage size (the
 * compulsory traffic; re-reads from cache by a tiled kernel are not counted).
 *   combine-norm: reads streams [T,nH] + norm weight [nH], writes streams out and normed [T,nH]
 *   W_cat GEMM:   reads normed [T,nH] + W_cat [r+n,nH], writes d [T,r+n]
 *   scaled silu:  reads d [T,r+n], writes gate [T,r] and raw [T,n]
 *   up GEMM:      reads gate [T,r] + W_up [nH,r], writes up [T,nH]
 *   gated mean:   reads up and normed [T,nH], writes x [T,H]
 */
export function hcMixBytes(config: ModelConfig, tokens: number): number {
  const n = config.hc.count;
  const h = config.hiddenSize;
  const r = config.hc.lowRank;
  const nh = n * h;
  const T = tokens;
  const elements =
    T * nh + nh + 2 * T * nh + // combine-norm
    T * nh + (r + n) * nh + T * (r + n) + // W_cat GEMM
    T * (r + n) + T * r + T * n + // scaled silu
    T * r + nh * r + T * nh + // up GEMM
    2 * T * nh + T * h; // gated mean
  return elements * BF16_BYTES;
}

export function median(values: number[]): number {
  if (values.length === 0) throw new Error('median of no values');
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** tp-1 graph: streams [T, nH] -> combine-norm + mix of layer 0's attention HC (with inject). */
export function hcMixBenchGraph(config: ModelConfig, tokens: number): Graph {
  const width = config.hc.count * config.hiddenSize;
  const b = new GraphBuilder(1, { bench: 'hc mix', config: config.name, tokens });
  const streams = b.input('streams', [tokens, width], 'bf16');
  const mix = buildHcMix(b, { config, rank: 0, rows: tokens, prefix: PREFIX, scope: 'L0.attn_hc', layer: 0, contract: 'atom' }, streams, null, true);
  b.markOutput(mix.x);
  b.markOutput(mix.streams);
  b.markOutput(mix.raw!);
  return b.build();
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
    if (diff > 0) return `output '${id}': ${diff} of ${da.length} elements differ, first at ${first} (webgpu 0x${da[first].toString(16)}, cpu 0x${db[first].toString(16)})`;
  }
  return null;
}

export interface GemmCeiling {
  /** GFLOP/s of the two GEMMs together (total flops / summed median times), or null */
  gflops: number | null;
  /** what measured it, or why it could not be measured */
  note: string;
}

// numpy float32 a @ b at the mix's two shapes; median of reps; prints JSON seconds per shape.
const CEILING_PY = `
import json, sys, time
import numpy as np
T = int(sys.argv[1]); reps = int(sys.argv[2]); shapes = json.loads(sys.argv[3])
rng = np.random.default_rng(0)
out = []
for K, O in shapes:
    a = rng.standard_normal((T, K), dtype=np.float32)
    b = rng.standard_normal((K, O), dtype=np.float32)
    a @ b
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t0)
    ts.sort()
    out.append(ts[len(ts) // 2])
cfg = np.show_config(mode='dicts') if hasattr(np, 'show_config') else {}
blas = cfg.get('Build Dependencies', {}).get('blas', {}) if isinstance(cfg, dict) else {}
print(json.dumps({'seconds': out, 'numpy': np.__version__, 'blas': f"{blas.get('name', '?')} {blas.get('version', '')}".strip()}))
`;

export function measureGemmCeiling(config: ModelConfig, tokens: number, reps: number): GemmCeiling {
  const shapes = hcMixGemms(config);
  let stdout: string;
  try {
    stdout = execFileSync('python3', ['-c', CEILING_PY, String(tokens), String(reps), JSON.stringify(shapes)], { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    const why = err.code === 'ENOENT' ? 'python3 is not installed' : (err.stderr?.trim().split('\n').at(-1) ?? err.message);
    return { gflops: null, note: `unavailable: python3/numpy failed (${why})` };
  }
  const r = JSON.parse(stdout) as { seconds: number[]; numpy: string; blas: string };
  const seconds = r.seconds.reduce((a, b) => a + b, 0);
  return { gflops: hcMixFlops(config, tokens) / seconds / 1e9, note: `numpy ${r.numpy} (${r.blas}) float32 a @ b, median of ${reps}` };
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
  label: string,
  times: number,
  quiet: boolean,
  say: (line: string) => void,
  run: (onNode: (d: number, t: number) => void) => Promise<RunResult>,
): Promise<{ seconds: number[]; last: RunResult }> {
  const seconds: number[] = [];
  let last: RunResult | null = null;
  for (let i = 0; i < times; i++) {
    const progress = nodeProgress(`${label} ${i + 1}/${times}`, { quiet });
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

export async function runBench(opts: BenchOptions): Promise<BenchReport> {
  const config = FLASH_NEXT;
  const specs = hcWeightSpecs(config, PREFIX, true);
  const say = (line: string): void => {
    if (!opts.quiet) process.stderr.write(`bench: ${line}\n`);
  };
  // The largest T decides; its webgpu outputs are still held while the cpu reference runs.
  const largest = hcMixBenchGraph(config, Math.max(...opts.tokens));
  const estimate = estimateGraphMemory(largest, { kind: 'synthetic', specs });
  const heldOutputs = largest.outputs.reduce((sum, id) => sum + numel(largest.values[id].shape) * bytesPerElement(largest.values[id].dtype), 0);
  checkMemory(`bench at T ${Math.max(...opts.tokens)}`, { ...estimate, bytes: estimate.bytes + heldOutputs }, memoryLimit(opts.maxMemory));
  const weights = new SyntheticWeightSource(specs, opts.seed);
  say('starting the WebGPU backend');
  // Only the device's phases are interruptible (signals.ts): the cpu reference runs on this thread.
  const gpu = await interruptible(() => createBackend('webgpu'));
  const rows: BenchRow[] = [];
  try {
    for (const T of opts.tokens) {
      const graph = hcMixBenchGraph(config, T);
      const feeds = new Map<ValueId, Tensor>([['streams', randomStreams(config, T, opts.seed + T)]]);
      say(`T=${T}: webgpu weights upload and warm-up (pipeline compile, not timed)`);
      // prepared once: the timed runs do not include the weight upload
      const prepared = await interruptible(() => gpu.prepare(graph, weights));
      await interruptible(() => prepared.run(feeds));
      const g = await timedRuns(`T=${T} webgpu`, opts.reps, opts.quiet, say, (onNode) => interruptible(() => prepared.run(feeds, { onNode })));
      await prepared.dispose();
      const cpu = await createBackend('cpu');
      const c = await timedRuns(`T=${T} cpu-reference`, opts.cpuReps, opts.quiet, say, (onNode) => runOnce(cpu, graph, feeds, weights, { onNode }));
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
      bytes: 'each tensor every op reads or writes, once, at bf16 storage size (GEMM operands and outputs plus the combine-norm, scaled-silu and gated-mean tensors); cache re-reads not counted',
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

/** Options of the single-purpose bench that the suite has no use for: refused with --suite when given. */
export const NOT_IN_SUITE: Readonly<Record<string, string>> = {
  hostReps: '--host-reps (the suite takes --reps for every backend but the cpu reference, --cpu-reps for it)',
  linearity: '--linearity / --no-linearity (the suite reports the scale of every backend over --tokens)',
  prefillReps: '--prefill-reps (the suite takes --reps)',
  exactTokens: '--exact-tokens (the suite compares every output with the cpu reference at each case it measured)',
};

/** The option names of `cmd` set by the user (not defaults). */
function givenOptions(cmd: Command): (key: string) => boolean {
  return (key) => {
    const source = cmd.getOptionValueSource(key);
    return source !== undefined && source !== 'default';
  };
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description(
      'with --suite (npm run bench): every backend on this machine side by side (HC mix and combine at T 1024/4096/16384, a small decoder layer, a small tp-4 prefill) against the ceilings measured in the same run, as a table, JSON and a plot. ' +
        'Without: the full-dimension HC mix (flash-next, tp 1) on WebGPU and the CPU reference against the fp32 GEMM ceiling, and the native host device (HC mix, its GEMMs, an HC-only prefill) against the GEMM ceiling and the memory bandwidth',
    )
    .option('--suite', `the benchmark suite over every backend (${SUITE_BACKENDS.map((b) => b.label).join(', ')}); --tokens (default ${SUITE_DEFAULTS.tokens}), --reps, --cpu-reps, --seed, --max-memory, --prefill-tokens (default ${SUITE_DEFAULTS.prefillTokens}), --no-prefill, --no-webgpu (webgpu and cpu), --no-host (rocm on the host), --json and --quiet apply to it`)
    .option('--quick', 'with --suite: the tiny config at tiny sizes (a check of the suite, not a benchmark)')
    .option('--budget <seconds>', `with --suite: the most one backend may spend on one case at one T (a larger T predicted to exceed it is not run, and says so)`, SUITE_DEFAULTS.budget)
    .option('--backends <list>', 'with --suite: comma-separated backend labels to run (default: all)')
    .option('--layer-tokens <n>', 'with --suite: T of the decoder-layer case', SUITE_DEFAULTS.layerTokens)
    .option('--out <dir>', "with --suite: where bench.json and time-vs-T.svg go, replaced on each run ('' for none; checked before the run, symbolic links refused)", SUITE_DEFAULTS.out)
    .option('--tokens <list>', 'comma-separated token counts', '1024,4096')
    .option('--reps <n>', 'timed WebGPU runs per token count (median reported)', '3')
    .option('--cpu-reps <n>', 'timed CPU-reference runs per token count (median reported)', '1')
    .option('--seed <n>', 'seed of the input streams and synthetic weights', '0')
    .option('--max-memory <size>', MAX_MEMORY_HELP)
    .option('--no-webgpu', 'leave out the WebGPU and CPU-reference timings')
    .option('--no-host', 'leave out the native host device (rocm, device host)')
    .option('--host-reps <n>', 'timed host-device runs per measurement (median reported)', HOST_DEFAULTS.reps)
    .option('--linearity <list>', "token counts of the host HC mix's linearity series, the first the base", HOST_DEFAULTS.linearity)
    .option('--no-linearity', 'leave out the linearity series')
    .option('--prefill-tokens <n>', 'T of the host HC-only flash-next prefill at tp 4 (full depth)', HOST_DEFAULTS.prefillTokens)
    .option('--no-prefill', 'leave out the host prefill')
    .option('--prefill-reps <n>', 'timed host prefill runs (median reported)', HOST_DEFAULTS.prefillReps)
    .option('--exact-tokens <n>', 'T at which the host HC mix is checked bit for bit against the CPU reference', HOST_DEFAULTS.exactTokens)
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object')
    .action(async (raw: BenchCliOptions & HostBenchCliOptions & SuiteCliOptions & { webgpu?: boolean; suite?: boolean }, cmd: Command) => {
      const given = givenOptions(cmd);
      if (raw.suite) {
        for (const [key, text] of Object.entries(NOT_IN_SUITE)) if (given(key)) throw new Error(`bench --suite: ${text}`);
        const opts = parseSuiteOptions(raw, (key) => given(key));
        const { stdout } = await printResultsOnSaveFailure(() => suiteCommand(opts));
        process.stdout.write(stdout);
        return;
      }
      for (const key of ['quick', 'budget', 'backends', 'layerTokens', 'out']) if (given(key)) throw new Error(`bench: --${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} belongs to --suite`);
      const opts = parseBenchOptions(raw);
      const hostOpts = parseHostBenchOptions(raw);
      // the host device first: its memory peaks are then not hidden by the cpu reference's
      const host: HostBenchReport | null = hostOpts ? await runHostBench(hostOpts) : null;
      let report: BenchReport | null = null;
      try {
        if (raw.webgpu !== false) report = await runBench(opts);
      } catch (e) {
        if (host) process.stdout.write(opts.json ? `${JSON.stringify({ host })}\n` : formatHostBenchReport(host));
        throw e;
      }
      if (opts.json) process.stdout.write(`${JSON.stringify({ ...(report ?? {}), ...(host ? { host } : {}) })}\n`);
      else process.stdout.write([report ? formatBenchReport(report) : '', host ? formatHostBenchReport(host) : ''].filter(Boolean).join('\n'));
      const bad = report?.rows.find((row) => !row.bitExact);
      if (bad) throw new Error(`T=${bad.tokens}: webgpu output differs from the cpu reference: ${bad.mismatch}`);
      if (host && !host.check.bitExact) throw new Error(`T=${host.check.tokens}: the host device's HC mix differs from the cpu reference: ${host.check.mismatch}`);
    });
}
