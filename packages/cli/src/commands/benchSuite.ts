// `hcsp bench --suite` (the root `npm run bench`): one suite over every backend this machine
// has, side by side in one run. Cases: the full-dimension HC mix and the unfused HC combine
// (flash-next widths, one rank's rows) at T = 1024, 4096, 16384; one decoder layer of the small
// config; a prefill of the small config at tp 4. Per case: time, GFLOP/s, GB/s over the fewest
// bytes the case must move, and the ratios to this machine's ceilings measured in the same run
// (a large copy for the bandwidth; numpy's fp32 GEMM, else the best backend GEMM, for the matrix
// rate). Scale: peak RSS, and time(T)/time(T0) / (T/T0). Results as JSON (a file and --json), a
// table, and an SVG of time against T per backend.
//
// A size that a backend could not run within the per-case budget (predicted from its smaller
// size, linearly in T) is listed as not measured, with the prediction: nothing is skipped
// silently. A backend that cannot start (no GPU, no native addon) is listed with the reason.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { GpuDevice, NativeAddon, NativeTensor, RocmBackend } from '@hcsp/backend-rocm';
import { backendLabel, createBackend, type BackendOptions } from '@hcsp/backends';
import {
  buildHcCombine,
  bytesPerElement,
  FLASH_NEXT,
  GraphBuilder,
  hcPrefix,
  hcWeightSpecs,
  layerKind,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  numel,
  preparePrefill,
  Rng,
  SMALL,
  SyntheticWeightSource,
  TINY,
  type Backend,
  type Graph,
  type ModelConfig,
  type PreparedGraph,
  type RunResult,
  type Tensor,
  type ValueId,
  type WeightSource,
  type WeightSpec,
} from '@hcsp/core';
import { formatBytes } from '../guards/byteSize.ts';
import { estimateGraphMemory } from '../guards/memoryEstimate.ts';
import { memoryLimit } from '../guards/memoryGuard.ts';
import { parseIntStrict } from '../parseArgs.ts';
import { interruptible } from '../signals.ts';
import { checkOutputDir, writeOutputDir, type OutputDir } from '../output/outputDir.ts';
import { ResultsNotSavedError } from '../output/resultsNotSaved.ts';
import { linePlotSvg } from '../output/svgPlot.ts';
import { hcMixBenchGraph, median, parseTokenList } from './bench.ts';
import { liveBytes, measureCeilings, type GemmShape } from './benchHost.ts';

// ---------------------------------------------------------------------------------------
// Options

export interface SuiteOptions {
  /** T of the HC mix and combine cases, ascending; the first is the base of the scale ratios */
  tokens: number[];
  /** timed runs per measurement after the first (median reported), within the budget */
  reps: number;
  /** the same for the cpu reference */
  cpuReps: number;
  /** seconds one (backend, case, T) may take: prepare + first run + timed runs */
  budgetSeconds: number;
  /** HC cases' model (flash-next; tiny with --quick) */
  hcConfig: ModelConfig;
  /** the decoder layer's and the prefill's model (small; tiny with --quick) */
  modelConfig: ModelConfig;
  layerTokens: number;
  /** null: left out */
  prefillTokens: number | null;
  prefillTp: number;
  /** labels of the backends to run (null: all); see SUITE_BACKENDS */
  backends: string[] | null;
  /** bytes of the copy that measures the bandwidth */
  copyBytes: number;
  /** the square GEMM the matrix ceiling is measured at (besides the HC mix's shapes) */
  ceilingGemm: number;
  seed: number;
  quiet: boolean;
  json: boolean;
  /** directory of bench.json and time-vs-T.svg; null: no files */
  outDir: string | null;
  maxMemory?: string;
  quick: boolean;
}

export interface SuiteCliOptions {
  tokens: string;
  reps: string;
  cpuReps: string;
  seed: string;
  json?: boolean;
  quiet?: boolean;
  maxMemory?: string;
  quick?: boolean;
  budget?: string;
  backends?: string;
  out?: string;
  layerTokens?: string;
  prefillTokens?: string;
  /** false with --no-prefill */
  prefill?: boolean;
  /** false with --no-webgpu: the webgpu backend and the cpu reference left out */
  webgpu?: boolean;
  /** false with --no-host: rocm on the host device (exact and blas) left out */
  host?: boolean;
}

export const SUITE_DEFAULTS = {
  tokens: '1024,4096,16384',
  reps: '3',
  cpuReps: '1',
  budget: '60',
  layerTokens: '1024',
  // above HC_QUANT_ROWS_MAX (1024), so that the production gate shards the streams at tp 4
  prefillTokens: '2048',
  out: 'bench-results',
} as const;

export const QUICK = { tokens: [16, 32, 64], layerTokens: 32, prefillTokens: 64, reps: 1, budget: 30, copyBytes: 16 * 2 ** 20, ceilingGemm: 256 } as const;

/**
 * The suite's options. `given(key)`: whether the user set the option (not its default), so
 * --quick can change the defaults without overriding what was asked for.
 */
export function parseSuiteOptions(raw: SuiteCliOptions, given: (key: keyof SuiteCliOptions) => boolean = () => true): SuiteOptions {
  memoryLimit(raw.maxMemory);
  const quick = raw.quick === true;
  const pick = (key: keyof SuiteCliOptions, dflt: string, quickValue: string | number): string => (given(key) && raw[key] !== undefined ? String(raw[key]) : quick ? String(quickValue) : dflt);
  const tokens = parseTokenList(pick('tokens', SUITE_DEFAULTS.tokens, QUICK.tokens.join(',')));
  const backends = raw.backends === undefined ? null : raw.backends.split(',').map((s) => s.trim());
  if (backends) {
    const known = SUITE_BACKENDS.map((b) => b.label);
    for (const b of backends) if (!known.includes(b)) throw new Error(`--backends: unknown backend '${b}' (known: ${known.join(', ')})`);
    if (new Set(backends).size !== backends.length) throw new Error(`--backends ${JSON.stringify(raw.backends)} lists a backend twice`);
  }
  const leftOut = new Set<string>();
  if (raw.webgpu === false) ['webgpu', 'cpu'].forEach((l) => leftOut.add(l));
  if (raw.host === false) SUITE_BACKENDS.filter((b) => b.options.device === 'host').forEach((b) => leftOut.add(b.label));
  const chosen = (backends ?? SUITE_BACKENDS.map((b) => b.label)).filter((l) => !leftOut.has(l));
  if (chosen.length === 0) throw new Error('bench --suite: every backend is left out (--backends, --no-webgpu, --no-host)');
  return {
    tokens: [...tokens].sort((a, b) => a - b),
    reps: parseIntStrict(pick('reps', SUITE_DEFAULTS.reps, QUICK.reps), '--reps', { min: 1, max: 1000 }),
    cpuReps: parseIntStrict(pick('cpuReps', SUITE_DEFAULTS.cpuReps, QUICK.reps), '--cpu-reps', { min: 1, max: 1000 }),
    budgetSeconds: parseIntStrict(pick('budget', SUITE_DEFAULTS.budget, QUICK.budget), '--budget', { min: 1, max: 86_400 }),
    hcConfig: quick ? TINY : FLASH_NEXT,
    modelConfig: quick ? TINY : SMALL,
    layerTokens: parseIntStrict(pick('layerTokens', SUITE_DEFAULTS.layerTokens, QUICK.layerTokens), '--layer-tokens', { min: 1, max: 1 << 20 }),
    prefillTokens: raw.prefill === false ? null : parseIntStrict(pick('prefillTokens', SUITE_DEFAULTS.prefillTokens, QUICK.prefillTokens), '--prefill-tokens', { min: 1, max: 1 << 20 }),
    prefillTp: 4,
    backends: backends || leftOut.size ? chosen : null,
    copyBytes: quick ? QUICK.copyBytes : 512 * 2 ** 20,
    ceilingGemm: quick ? QUICK.ceilingGemm : 2048,
    seed: parseIntStrict(raw.seed, '--seed'),
    quiet: raw.quiet === true,
    json: raw.json === true,
    outDir: raw.out === '' ? null : given('out') && raw.out !== undefined ? raw.out : SUITE_DEFAULTS.out,
    maxMemory: raw.maxMemory,
    quick,
  };
}

// ---------------------------------------------------------------------------------------
// Backends

export interface SuiteBackend {
  label: string;
  name: string;
  options: BackendOptions;
  /** the ceilings it is set against: this machine's (CPU), or its own GPU's */
  ceilings: 'machine' | 'gpu' | 'adapter';
}

const variant = (name: string, options: BackendOptions, ceilings: SuiteBackend['ceilings']): SuiteBackend => ({ label: backendLabel(name, options), name, options, ceilings });

/** Every backend and device of the registry the suite runs (a GPU's, when the machine has it). */
export const SUITE_BACKENDS: readonly SuiteBackend[] = [
  variant('cpu', {}, 'machine'),
  variant('webgpu', {}, 'adapter'),
  variant('rocm', { device: 'host', gemm: 'exact' }, 'machine'),
  variant('rocm', { device: 'host', gemm: 'blas' }, 'machine'),
  variant('rocm', { device: 'emulated' }, 'machine'),
  variant('rocm', { device: 'hip' }, 'gpu'),
  variant('rocm', { device: 'cuda' }, 'gpu'),
];

/** A software WebGPU adapter runs on this machine's CPUs: the machine's ceilings are its own. */
export function isSoftwareAdapter(describe: string): boolean {
  return /swiftshader|llvmpipe|lavapipe|software|warp/i.test(describe);
}

// ---------------------------------------------------------------------------------------
// Cases

export type CaseName = 'hc-mix' | 'hc-combine' | 'layer' | 'prefill';

export interface CaseGraph {
  graph: Graph;
  weights: WeightSource;
  specs: readonly WeightSpec[];
  feeds: Map<ValueId, Tensor>;
  /** values kept to the end and read back besides the graph's outputs */
  keep: ValueId[];
  /** flops counted (matrixFlops) and the fewest bytes (minimumBytes) */
  flops: number;
  bytes: number;
  /** e.g. "SP on (C=512 rows/rank from layer 1)" */
  detail: string;
}

export interface CaseSpec {
  case: CaseName;
  tokens: number;
  tp: number;
  config: string;
  /** one line: what runs */
  what: string;
  /** on the HC cases' T axis (scale ratios, the plot) */
  scaled: boolean;
  build(): CaseGraph;
}

/**
 * Flops counted: 2*T*K*O per linear and fp8LinearPtpc node; per moeExperts node the expected
 * routed work 2 * rows * topK * (local experts / experts) * 3 * I * H (gate+up and down of each
 * routed token, routing taken as uniform). Attention, GatedDeltaNet, norms and other
 * elementwise ops are not counted.
 */
export function matrixFlops(graph: Graph, config: ModelConfig): number {
  let flops = 0;
  for (const node of graph.nodes) {
    if (node.op === 'linear' || node.op === 'fp8LinearPtpc') {
      const x = graph.values[node.inputs[0]!].shape;
      const w = graph.values[node.inputs[node.op === 'linear' ? 1 : 2]!].shape;
      flops += 2 * numel(x.slice(0, -1)) * x.at(-1)! * w[0];
    } else if (node.op === 'moeExperts') {
      const [rows, h] = graph.values[node.inputs[0]!].shape;
      const local = Number(node.attrs.numLocal);
      const i = Number(node.attrs.intermediate);
      flops += 2 * rows * config.moe.topK * (local / config.moe.numExperts) * 3 * i * h;
    }
  }
  return flops;
}

/**
 * The fewest bytes a case must move: every graph input read once, every weight value read once
 * (a row-gathered table only at the rows its ids name), every output written once, at storage
 * size; intermediates are taken to stay on chip. All ranks' together (they share this device).
 */
export function minimumBytes(graph: Graph, keep: readonly ValueId[] = []): number {
  const size = (id: ValueId): number => numel(graph.values[id].shape) * bytesPerElement(graph.values[id].dtype);
  const inputs = graph.inputs.reduce((s, id) => s + size(id), 0);
  const outputs = [...new Set([...graph.outputs, ...keep])].reduce((s, id) => s + size(id), 0);
  return inputs + liveBytes(graph).weights + outputs;
}

/** N(0, 1) bf16 values tiled from a seeded pool of 2^20 (drawing 168 M values would take ~15 s). */
export function tiledNormal(count: number, seed: number): Uint16Array {
  const pool = new Rng(seed).fillBf16Normal(Math.min(count, 1 << 20), 1);
  const out = new Uint16Array(count);
  // each tile starts at a different pool offset, so rows are not copies of each other
  let o = 0;
  let shift = 0;
  while (o < count) {
    const at = (shift * 7919) % pool.length;
    const n = Math.min(count - o, pool.length - at);
    out.set(pool.subarray(at, at + n), o);
    o += n;
    shift++;
  }
  return out;
}

const bf16 = (shape: number[], seed: number): Tensor => ({ dtype: 'bf16', shape, data: tiledNormal(numel(shape), seed) });

/** tp-1 graph: streams [T, nH], the sub-layer output y [T, H] and its raw logits [T, n] -> the unfused hcCombine. */
export function hcCombineBenchGraph(config: ModelConfig, tokens: number): Graph {
  const n = config.hc.count;
  const b = new GraphBuilder(1, { bench: 'hc combine', config: config.name, tokens });
  const streams = b.input('streams', [tokens, n * config.hiddenSize], 'bf16');
  const y = b.input('y', [tokens, config.hiddenSize], 'bf16');
  const raw = b.input('raw', [tokens, n], 'bf16');
  const out = buildHcCombine(b, { config, rank: 0, rows: tokens, prefix: '', scope: 'L0.attn_hc', layer: 0, contract: 'atom' }, streams, { y, raw });
  b.markOutput(out);
  return b.build();
}

export function suiteCases(opts: SuiteOptions): CaseSpec[] {
  const hc = opts.hcConfig;
  const width = hc.hc.count * hc.hiddenSize;
  const cases: CaseSpec[] = [];
  for (const T of opts.tokens) {
    cases.push({
      case: 'hc-mix',
      tokens: T,
      tp: 1,
      config: hc.name,
      what: `HC mix of layer 0's attention step (combine-norm, W_cat GEMM [${width} -> ${hc.hc.lowRank + hc.hc.count}], scaled silu, up GEMM [${hc.hc.lowRank} -> ${width}], gated mean), one rank's T rows`,
      scaled: true,
      build: () => {
        const graph = hcMixBenchGraph(hc, T);
        const specs = hcWeightSpecs(hc, hcPrefix(0, 'attn'), true);
        return {
          graph,
          specs,
          weights: new SyntheticWeightSource(specs, opts.seed),
          feeds: new Map([['streams', bf16([T, width], opts.seed + T)]]),
          keep: [],
          flops: matrixFlops(graph, hc),
          bytes: minimumBytes(graph),
          detail: '',
        };
      },
    });
  }
  for (const T of opts.tokens) {
    cases.push({
      case: 'hc-combine',
      tokens: T,
      tp: 1,
      config: hc.name,
      what: `unfused HC combine (streams [T, ${width}] += 2 sigmoid(raw / ${hc.hc.count}) * y [T, ${hc.hiddenSize}]), one rank's T rows`,
      scaled: true,
      build: () => {
        const graph = hcCombineBenchGraph(hc, T);
        return {
          graph,
          specs: [],
          weights: new SyntheticWeightSource([], opts.seed),
          feeds: new Map([
            ['streams', bf16([T, width], opts.seed + T)],
            ['y', bf16([T, hc.hiddenSize], opts.seed + T + 1)],
            ['raw', bf16([T, hc.hc.count], opts.seed + T + 2)],
          ]),
          keep: [],
          flops: 0,
          bytes: minimumBytes(graph),
          detail: '',
        };
      },
    });
  }
  const mc = opts.modelConfig;
  const layerLine = `${layerKind(mc, 0)} + MoE`;
  cases.push({
    case: 'layer',
    tokens: opts.layerTokens,
    tp: 1,
    config: mc.name,
    what: `decoder layer 0 of ${mc.name} (${layerLine}, its two HC steps; the embedding, final mixer and LM head around it), tp 1, MTP off`,
    scaled: false,
    build: () => prefillCase(mc, opts.layerTokens, 1, 'off', opts.seed, [0, 1]),
  });
  if (opts.prefillTokens !== null) {
    cases.push({
      case: 'prefill',
      tokens: opts.prefillTokens,
      tp: opts.prefillTp,
      config: mc.name,
      what: `prefill of ${mc.name} (all ${mc.numLayers} layers, the model's sub-layers, MTP ${mc.mtp ? 'on' : 'off'}), tp ${opts.prefillTp} simulated on this device, SP by the production gate`,
      scaled: false,
      build: () => prefillCase(mc, opts.prefillTokens!, opts.prefillTp, 'auto', opts.seed),
    });
  }
  return cases;
}

function prefillCase(config: ModelConfig, tokens: number, tp: number, sp: 'auto' | 'off', seed: number, layers?: [number, number]): CaseGraph {
  const specs = modelWeightSpecs(config, MODEL_SUB_LAYERS);
  const p = preparePrefill({ config, tokens, tp, sp, reduce: 'ring', seed, subLayers: MODEL_SUB_LAYERS, env: process.env, ...(layers ? { layers, mtp: false } : {}) });
  const keep = [p.outputs.logits, p.outputs.nextTokens, p.outputs.h, ...(p.outputs.mtp ? [p.outputs.mtp.logits, p.outputs.mtp.draftTokens] : [])];
  return {
    graph: p.graph,
    specs,
    weights: p.weights,
    feeds: p.feeds,
    keep,
    flops: matrixFlops(p.graph, config),
    bytes: minimumBytes(p.graph, keep),
    detail: `${p.graph.nodes.length} nodes; SP ${p.plan.sp ? `on (C=${p.plan.chunk} rows/rank from layer ${p.plan.spStartLayer})` : `off (${p.plan.reason})`}`,
  };
}

// ---------------------------------------------------------------------------------------
// Ceilings

export interface SuiteCeilings {
  /** the matrix rate the cases are set against, GFLOP/s, or null */
  matrixGflops: number | null;
  /** what measured it (which GEMM, which shape), or why there is none */
  matrixNote: string;
  /** every GEMM measured: the ceiling is the best */
  gemms: { what: string; label: string; shape: GemmShape; gflops: number }[];
  bandwidthGBps: number | null;
  bandwidthNote: string;
  copies: { what: string; gbps: number }[];
}

interface DeviceMeasureDeps {
  addon: NativeAddon;
  gpu: GpuDevice | null;
  mode: 'exact' | 'blas' | 'vendor';
}

/** median seconds of addon.run(op) on tensors already on the device (output freed each time) */
async function timeKernel(d: DeviceMeasureDeps, op: string, inputs: NativeTensor[], attrs: Record<string, unknown>, reps: number): Promise<number> {
  const once = async (): Promise<void> => {
    for (const t of await d.addon.run(op, inputs, attrs, d.mode, d.gpu)) if (t) d.addon.free(t);
    d.gpu?.synchronize();
  };
  await once();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await once();
    ts.push((performance.now() - t0) / 1000);
  }
  return median(ts);
}

/** GFLOP/s of the device's linear kernel at [n, n] x [n, n] (bf16 in, fp32 accumulation) */
export async function deviceGemmGflops(d: DeviceMeasureDeps, n: number, reps: number): Promise<number> {
  const x = d.addon.upload('bf16', [n, n], tiledNormal(n * n, 11), d.gpu);
  const w = d.addon.upload('bf16', [n, n], tiledNormal(n * n, 12), d.gpu);
  try {
    return (2 * n * n * n) / (await timeKernel(d, 'linear', [x, w], {}, reps)) / 1e9;
  } finally {
    d.addon.free(x);
    d.addon.free(w);
  }
}

/** GB/s (read + written) of the device's trim of a bf16 tensor of `bytes` to all its rows: a copy */
export async function deviceCopyGBps(d: DeviceMeasureDeps, bytes: number, reps: number): Promise<number> {
  const cols = 4096;
  const rows = Math.max(1, Math.floor(bytes / (2 * cols)));
  const x = d.addon.upload('bf16', [rows, cols], new Uint16Array(rows * cols), d.gpu);
  try {
    return (2 * rows * cols * 2) / (await timeKernel(d, 'trim', [x], { rows }, reps)) / 1e9;
  } finally {
    d.addon.free(x);
  }
}

function best<T extends { gbps?: number; gflops?: number }>(xs: T[], key: 'gbps' | 'gflops'): T | null {
  return xs.reduce<T | null>((a, b) => (a === null || (b[key] ?? 0) > (a[key] ?? 0) ? b : a), null);
}

/**
 * This machine's ceilings: numpy fp32 GEMM at a square n^3 and at the HC mix's shapes, and the
 * copy bandwidth (Node, numpy one and two threads; benchHost's measureCeilings). Without numpy,
 * the matrix rate is the best GEMM of the native host device (exact or OpenBLAS kernel), when
 * the addon loads; else none.
 */
export async function machineCeilings(opts: SuiteOptions, say: (line: string) => void): Promise<SuiteCeilings> {
  const hc = opts.hcConfig;
  const width = hc.hc.count * hc.hiddenSize;
  const mid = opts.tokens.find((t) => t >= 4096) ?? opts.tokens.at(-1)!;
  const n = opts.ceilingGemm;
  const shapes: GemmShape[] = [
    { T: n, K: n, O: n },
    { T: mid, K: width, O: hc.hc.lowRank + hc.hc.count },
    { T: mid, K: hc.hc.lowRank, O: width },
  ];
  say(`ceilings: numpy fp32 GEMM at ${shapes.map((s) => `${s.T}x${s.K}x${s.O}`).join(', ')}; copy bandwidth (${formatBytes(opts.copyBytes)})`);
  const c = measureCeilings(shapes, 3, opts.copyBytes);
  const gemms: SuiteCeilings['gemms'] = [];
  for (const s of shapes) {
    const sec = c.gemmSeconds[`${s.T}x${s.K}x${s.O}`];
    if (sec !== undefined) gemms.push({ what: c.gemmNote, label: 'numpy', shape: s, gflops: (2 * s.T * s.K * s.O) / sec / 1e9 });
  }
  let matrixNote: string;
  if (gemms.length === 0) {
    // numpy missing: the best backend GEMM
    say(`ceilings: ${c.gemmNote}; the native host device's GEMMs instead`);
    try {
      const { loadNativeAddon } = await import('@hcsp/backend-rocm');
      const addon = loadNativeAddon();
      for (const mode of ['exact', 'blas'] as const) {
        try {
          gemms.push({ what: `rocm host device, ${mode} linear kernel (bf16 in, fp32 accumulation), median of 3`, label: `rocm host ${mode}`, shape: shapes[0], gflops: await deviceGemmGflops({ addon, gpu: null, mode }, n, 3) });
        } catch (e) {
          say(`ceilings: rocm host ${mode} GEMM failed: ${(e as Error).message}`);
        }
      }
    } catch (e) {
      say(`ceilings: no native addon either (${(e as Error).message})`);
    }
    matrixNote = gemms.length ? `numpy unavailable (${c.gemmNote.replace(/^unavailable: /, '')}): the best backend GEMM` : `none: ${c.gemmNote}, and the native addon does not load`;
  } else {
    matrixNote = 'numpy';
  }
  const top = best(gemms, 'gflops');
  return {
    matrixGflops: top?.gflops ?? null,
    matrixNote: top ? `${top.what} at ${top.shape.T}x${top.shape.K}x${top.shape.O} (the best of ${gemms.length} measured${matrixNote === 'numpy' ? '' : `; ${matrixNote}`})` : matrixNote,
    gemms,
    bandwidthGBps: c.bandwidthGBps,
    bandwidthNote: c.bandwidthNote,
    copies: c.copies,
  };
}

/** A GPU's own ceilings: its vendor GEMM at n^3 and a device copy (trim) of `bytes`. */
export async function gpuCeilings(backend: RocmBackend, n: number, bytes: number): Promise<SuiteCeilings> {
  const d: DeviceMeasureDeps = { addon: backend.addon, gpu: backend.gpu, mode: backend.gemm };
  const gemms: SuiteCeilings['gemms'] = [];
  const copies: SuiteCeilings['copies'] = [];
  const notes: string[] = [];
  try {
    gemms.push({ what: `${backend.describe()}: ${backend.gemm} linear kernel (bf16 in, fp32 accumulation), median of 5`, label: backend.gemm, shape: { T: n, K: n, O: n }, gflops: await deviceGemmGflops(d, n, 5) });
  } catch (e) {
    notes.push(`GEMM: ${(e as Error).message}`);
  }
  try {
    copies.push({ what: `device trim (a copy) of a ${formatBytes(bytes)} bf16 tensor, median of 5`, gbps: await deviceCopyGBps(d, bytes, 5) });
  } catch (e) {
    notes.push(`copy: ${(e as Error).message}`);
  }
  return {
    matrixGflops: gemms[0]?.gflops ?? null,
    matrixNote: gemms[0] ? `${gemms[0].what} at ${n}x${n}x${n}` : `not measured (${notes.join('; ')})`,
    gemms,
    bandwidthGBps: copies[0]?.gbps ?? null,
    bandwidthNote: copies[0] ? `${copies[0].what}; bytes read + bytes written per second` : `not measured (${notes.join('; ')})`,
    copies,
  };
}

// ---------------------------------------------------------------------------------------
// Measuring

let gcFn: (() => void) | null | undefined;
function collectGarbage(): void {
  if (gcFn === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      gcFn = runInNewContext('gc') as () => void;
    } catch {
      gcFn = null;
    }
  }
  gcFn?.();
}

export type MeasureStatus = 'measured' | 'not measured' | 'failed';

export interface Measurement {
  case: CaseName;
  tokens: number;
  backend: string;
  status: MeasureStatus;
  /** why not measured, or the error */
  reason: string | null;
  /** median of the timed runs; the first run's time when none fitted the budget (firstRunOnly) */
  seconds: number | null;
  runs: number[];
  firstRunSeconds: number | null;
  firstRunOnly: boolean;
  prepareSeconds: number | null;
  gflop: number;
  gbytes: number;
  gflops: number | null;
  gbps: number | null;
  /** GFLOP/s over the matrix ceiling */
  overMatrix: number | null;
  /** GB/s over the bandwidth ceiling */
  overBandwidth: number | null;
  /** the roofline bound max(flops / matrix, bytes / bandwidth) over the time (1: at the bound) */
  ofRoofline: number | null;
  /** this process's RSS: before, and its peak during prepare and the runs */
  rssBeforeBytes: number | null;
  rssPeakBytes: number | null;
  /** true: getrusage's maxRSS rose (exact); false: the highest of samples every 5 ms */
  rssPeakExact: boolean | null;
  /** sha256 of the outputs of the last run (every graph output and kept value, in order) */
  outputSha256: string | null;
  /** same bits as the cpu reference at this case (null: the cpu reference did not measure it) */
  sameAsCpu: boolean | null;
  load: number;
}

function outputsSha(result: RunResult, ids: readonly ValueId[]): string {
  const h = createHash('sha256');
  for (const id of ids) {
    const t = result.values.get(id);
    if (!t) throw new Error(`output '${id}' is missing from the result`);
    h.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return h.digest('hex');
}

export interface SuiteBackendReport {
  label: string;
  status: 'available' | 'unavailable' | 'left out';
  /** describe() when available, else why not */
  detail: string;
  ceilings: 'machine' | 'gpu' | 'none';
  ceilingsNote: string;
  gpuCeilings: SuiteCeilings | null;
}

export interface ScaleRow {
  case: CaseName;
  backend: string;
  base: number;
  points: { tokens: number; seconds: number | null; ratio: number | null; note: string | null }[];
}

export interface SuiteReport {
  suite: 'hcsp bench --suite';
  date: string;
  quick: boolean;
  machine: { cpus: number; model: string; node: string };
  loadStart: number[];
  loadEnd: number[];
  budgetSeconds: number;
  reps: number;
  cpuReps: number;
  ceilings: SuiteCeilings;
  backends: SuiteBackendReport[];
  cases: { case: CaseName; tokens: number; tp: number; config: string; what: string; detail: string; gflop: number; gbytes: number }[];
  results: Measurement[];
  scale: ScaleRow[];
  /** this process's peak RSS over the whole run (getrusage maxRSS) */
  peakRssBytes: number;
  counted: Record<string, string>;
  files: { json: string | null; plot: string | null };
}

interface OpenBackend {
  spec: SuiteBackend;
  backend: Backend;
  ceilings: SuiteCeilings | null;
  reps: number;
}

export interface SuiteDeps {
  say?: (line: string) => void;
  /** the machine's ceilings (tests may pass their own) */
  ceilings?: SuiteCeilings;
}

export async function runSuite(opts: SuiteOptions, deps: SuiteDeps = {}): Promise<SuiteReport> {
  const say = deps.say ?? ((line: string): void => void (opts.quiet ? 0 : process.stderr.write(`bench: ${line}\n`)));
  const loadStart = loadavg();
  const wanted = new Set(opts.backends ?? SUITE_BACKENDS.map((b) => b.label));
  const ceilings = deps.ceilings ?? (await machineCeilings(opts, say));

  // every backend started (a GPU's ceilings measured on it), before any case runs
  const open: OpenBackend[] = [];
  const backends: SuiteBackendReport[] = [];
  for (const spec of SUITE_BACKENDS) {
    if (!wanted.has(spec.label)) {
      backends.push({ label: spec.label, status: 'left out', detail: 'not asked for (--backends, --no-webgpu, --no-host)', ceilings: 'none', ceilingsNote: '', gpuCeilings: null });
      continue;
    }
    say(`starting ${spec.label}`);
    let backend: Backend;
    try {
      backend = await interruptible(() => createBackend(spec.name, spec.options));
    } catch (e) {
      const why = (e as Error).message;
      const addonHint = /native addon|hcsp_native\.node/i.test(why) && !why.includes('npm run build:native') ? ' (build it with `npm run build:native`)' : '';
      backends.push({ label: spec.label, status: 'unavailable', detail: `${why}${addonHint}`, ceilings: 'none', ceilingsNote: '', gpuCeilings: null });
      say(`${spec.label} unavailable: ${why}`);
      continue;
    }
    const describe = backend.describe();
    let own: SuiteCeilings | null = ceilings;
    let ceilingsNote = "this machine's (the CPUs run it)";
    let gpu: SuiteCeilings | null = null;
    if (spec.ceilings === 'gpu') {
      say(`${spec.label}: the GPU's GEMM and copy ceilings`);
      gpu = await gpuCeilings(backend as RocmBackend, 4096, opts.copyBytes);
      own = gpu;
      ceilingsNote = "the GPU's own, measured on it";
    } else if (spec.ceilings === 'adapter' && !isSoftwareAdapter(describe)) {
      own = null;
      ceilingsNote = 'none: a hardware WebGPU adapter, whose GEMM and bandwidth ceilings this suite does not measure';
    } else if (spec.ceilings === 'adapter') {
      ceilingsNote = "this machine's (a software adapter: the CPUs run it)";
    }
    backends.push({ label: spec.label, status: 'available', detail: describe, ceilings: own === null ? 'none' : spec.ceilings === 'gpu' ? 'gpu' : 'machine', ceilingsNote, gpuCeilings: gpu });
    open.push({ spec, backend, ceilings: own, reps: spec.name === 'cpu' ? opts.cpuReps : opts.reps });
  }

  const limit = memoryLimit(opts.maxMemory);
  const results: Measurement[] = [];
  const caseRows: SuiteReport['cases'] = [];
  try {
    for (const spec of suiteCases(opts)) {
      say(`${spec.case} T=${spec.tokens}: building the graph and inputs`);
      let cg: CaseGraph | null = spec.build();
      const estimate = estimateGraphMemory(cg.graph, { kind: 'synthetic', specs: cg.specs });
      caseRows.push({ case: spec.case, tokens: spec.tokens, tp: spec.tp, config: spec.config, what: spec.what, detail: cg.detail, gflop: cg.flops / 1e9, gbytes: cg.bytes / 1e9 });
      let cpuSha: string | null = null;
      for (const ob of open) {
        const base: Measurement = {
          case: spec.case,
          tokens: spec.tokens,
          backend: ob.spec.label,
          status: 'not measured',
          reason: null,
          seconds: null,
          runs: [],
          firstRunSeconds: null,
          firstRunOnly: false,
          prepareSeconds: null,
          gflop: cg.flops / 1e9,
          gbytes: cg.bytes / 1e9,
          gflops: null,
          gbps: null,
          overMatrix: null,
          overBandwidth: null,
          ofRoofline: null,
          rssBeforeBytes: null,
          rssPeakBytes: null,
          rssPeakExact: null,
          outputSha256: null,
          sameAsCpu: null,
          load: loadavg()[0],
        };
        const skip = whyNotRun(results, spec, ob.spec.label, opts.budgetSeconds);
        if (skip) {
          results.push({ ...base, reason: skip });
          say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: not measured: ${skip}`);
          continue;
        }
        if (estimate.bytes > limit.bytes) {
          results.push({ ...base, reason: `the memory estimate ${formatBytes(estimate.bytes)} is over ${limit.from} (${formatBytes(limit.bytes)})` });
          continue;
        }
        say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: prepare, a first run, then up to ${ob.reps} timed within ${opts.budgetSeconds} s`);
        const m = await measure(ob, cg, opts.budgetSeconds);
        const row: Measurement = { ...base, ...m, load: loadavg()[0] };
        if (row.status === 'measured' && row.seconds !== null) {
          row.gflops = cg.flops > 0 ? cg.flops / row.seconds / 1e9 : null;
          row.gbps = cg.bytes / row.seconds / 1e9;
          const c = ob.ceilings;
          if (c) {
            row.overMatrix = row.gflops !== null && c.matrixGflops ? row.gflops / c.matrixGflops : null;
            row.overBandwidth = c.bandwidthGBps ? row.gbps / c.bandwidthGBps : null;
            if (c.bandwidthGBps && (c.matrixGflops || cg.flops === 0)) {
              const bound = Math.max(cg.flops > 0 ? cg.flops / (c.matrixGflops! * 1e9) : 0, cg.bytes / (c.bandwidthGBps * 1e9));
              row.ofRoofline = bound / row.seconds;
            }
          }
          if (ob.spec.name === 'cpu') cpuSha = row.outputSha256;
          say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: ${row.seconds.toFixed(4)} s (${row.runs.map((s) => s.toFixed(4)).join(' ') || `first run only`})`);
        } else {
          say(`${spec.case} T=${spec.tokens} ${ob.spec.label}: ${row.status}: ${row.reason}`);
        }
        results.push(row);
      }
      for (const r of results) if (r.case === spec.case && r.tokens === spec.tokens && r.outputSha256 !== null && cpuSha !== null) r.sameAsCpu = r.outputSha256 === cpuSha;
      cg = null;
    }
  } finally {
    for (const ob of open) await ob.backend.dispose();
  }

  const report: SuiteReport = {
    suite: 'hcsp bench --suite',
    date: new Date().toISOString(),
    quick: opts.quick,
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?', node: process.version },
    loadStart,
    loadEnd: loadavg(),
    budgetSeconds: opts.budgetSeconds,
    reps: opts.reps,
    cpuReps: opts.cpuReps,
    ceilings,
    backends,
    cases: caseRows,
    results,
    scale: scaleRows(results, opts.tokens),
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    counted: COUNTED,
    files: { json: null, plot: null },
  };
  return report;
}

export const COUNTED: Record<string, string> = {
  time: 'wall time of prepared.run (inputs uploaded, every node, outputs read back), median of the timed runs after a first untimed run; weights uploaded once at prepare, untimed. When not one timed run fits the per-case budget after the first, the first run is the figure (marked "first run only")',
  flops:
    'GEMMs only: 2*T*K*O per linear node; moeExperts at the expected routed work 2*rows*topK*(local/experts)*3*I*H. Attention, GatedDeltaNet, norms and elementwise ops are not counted (the layer and prefill GFLOP/s understate their arithmetic); the HC combine has no GEMM',
  bytes: 'the fewest the case must move: graph inputs read once, every weight value once, every output (and kept value) written once, at storage size; intermediates assumed to stay on chip. All ranks of a tp > 1 case together',
  ratios:
    "x matrix = GFLOP/s / the matrix ceiling; x bw = GB/s / the bandwidth ceiling; of roofline = max(flops / matrix ceiling, bytes / bandwidth) / time (1.00: at the bound). The ceilings are this machine's for the CPU-run backends (a software WebGPU adapter included), a GPU's own for rocm on hip/cuda",
  budget: 'a (backend, case, T) is not run when its run time predicted from the largest smaller T it ran (linear in T) is over the budget; the prediction is printed',
  rss: "this process's RSS during prepare and the runs of one measurement: peak (getrusage maxRSS when it rose, else 5 ms samples) and before; a WebGPU device process (Chromium) is not included",
  scale: '(time(T) / time(T0)) / (T / T0), T0 the first HC size; 1.00 is time proportional to T',
};

/** Why (backend, case, T) is not run: a smaller T of it failed or was not run, or its predicted run time is over the budget. */
export function whyNotRun(results: readonly Measurement[], spec: CaseSpec, backend: string, budget: number): string | null {
  if (!spec.scaled) return null;
  const earlier = results.filter((r) => r.backend === backend && r.case === spec.case && r.tokens < spec.tokens);
  const prev = earlier.at(-1);
  if (!prev) return null;
  if (prev.status !== 'measured') return `T=${prev.tokens} was ${prev.status === 'failed' ? 'failed' : 'not measured'}`;
  const predicted = prev.seconds! * (spec.tokens / prev.tokens);
  if (predicted > budget) return `a run would take about ${predicted.toFixed(1)} s (T=${prev.tokens}: ${prev.seconds!.toFixed(2)} s, x${(spec.tokens / prev.tokens).toFixed(0)}), over the ${budget} s budget per case`;
  return null;
}

async function measure(ob: OpenBackend, cg: CaseGraph, budget: number): Promise<Partial<Measurement>> {
  collectGarbage();
  const rssBefore = process.memoryUsage.rss();
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  let sampled = rssBefore;
  const timer = setInterval(() => {
    sampled = Math.max(sampled, process.memoryUsage.rss());
  }, 5);
  const onDevice = <T>(work: () => Promise<T>): Promise<T> => (ob.spec.name === 'cpu' ? work() : interruptible(work));
  let prepared: PreparedGraph | null = null;
  try {
    const t0 = performance.now();
    prepared = await onDevice(() => ob.backend.prepare(cg.graph, cg.weights));
    const prepareSeconds = (performance.now() - t0) / 1000;
    const runOnce = async (): Promise<[number, RunResult]> => {
      const t = performance.now();
      const r = await onDevice(() => prepared!.run(cg.feeds, { keep: cg.keep }));
      return [(performance.now() - t) / 1000, r];
    };
    let [first, last] = await runOnce();
    let spent = prepareSeconds + first;
    const runs: number[] = [];
    while (runs.length < ob.reps && spent + (runs.at(-1) ?? first) <= budget) {
      const [s, r] = await runOnce();
      runs.push(s);
      last = r;
      spent += s;
    }
    const ids = [...new Set([...cg.graph.outputs, ...cg.keep])];
    const sha = outputsSha(last, ids);
    return {
      status: 'measured',
      seconds: runs.length ? median(runs) : first,
      runs,
      firstRunSeconds: first,
      firstRunOnly: runs.length === 0,
      prepareSeconds,
      outputSha256: sha,
      ...rss(),
    };
  } catch (e) {
    return { status: 'failed', reason: (e as Error).message, ...rss() };
  } finally {
    clearInterval(timer);
    if (prepared) await prepared.dispose().catch(() => {});
  }
  function rss(): Partial<Measurement> {
    sampled = Math.max(sampled, process.memoryUsage.rss());
    const maxAfter = process.resourceUsage().maxRSS * 1024;
    const exact = maxAfter > maxBefore;
    return { rssBeforeBytes: rssBefore, rssPeakBytes: exact ? Math.max(maxAfter, sampled) : sampled, rssPeakExact: exact };
  }
}

export function scaleRows(results: readonly Measurement[], tokens: readonly number[]): ScaleRow[] {
  const rows: ScaleRow[] = [];
  const base = tokens[0];
  for (const c of ['hc-mix', 'hc-combine'] as const) {
    const labels = [...new Set(results.filter((r) => r.case === c).map((r) => r.backend))];
    for (const backend of labels) {
      const at = (T: number) => results.find((r) => r.case === c && r.backend === backend && r.tokens === T);
      const b = at(base);
      const t0 = b?.status === 'measured' ? b.seconds! : null;
      rows.push({
        case: c,
        backend,
        base,
        points: tokens.map((T) => {
          const r = at(T);
          const s = r?.status === 'measured' ? r.seconds! : null;
          const note = s === null ? `not measured${r?.reason ? `: ${r.reason}` : ''}` : t0 === null ? `T=${base} not measured` : null;
          return { tokens: T, seconds: s, ratio: s !== null && t0 !== null ? s / t0 / (T / base) : null, note };
        }),
      });
    }
  }
  return rows;
}

// ---------------------------------------------------------------------------------------
// Output

const f = (v: number | null | undefined, d = 2): string => (v === null || v === undefined ? '-' : v.toFixed(d));
const sig = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(3));

export function formatSuiteReport(r: SuiteReport): string {
  const L: string[] = [];
  L.push(`hcsp bench suite${r.quick ? ' (--quick: tiny config, tiny sizes)' : ''}, ${r.date}`);
  L.push(`machine: ${r.machine.cpus} CPUs (${r.machine.model}), node ${r.machine.node}; load average ${r.loadStart.map((v) => v.toFixed(2)).join(' ')} at start, ${r.loadEnd.map((v) => v.toFixed(2)).join(' ')} at end`);
  L.push('ceilings, measured in this run:');
  L.push(`  matrix:    ${f(r.ceilings.matrixGflops, 1)} GFLOP/s: ${r.ceilings.matrixNote}`);
  if (r.ceilings.gemms.length > 1) L.push(`             ${r.ceilings.gemms.map((g) => `${g.label} ${g.shape.T}x${g.shape.K}x${g.shape.O} ${f(g.gflops, 1)}`).join('; ')} GFLOP/s`);
  L.push(`  bandwidth: ${f(r.ceilings.bandwidthGBps, 2)} GB/s: ${r.ceilings.bandwidthNote}`);
  L.push(`             ${r.ceilings.copies.map((c) => `${c.what} ${f(c.gbps, 2)}`).join('; ')} GB/s`);
  L.push('backends:');
  const w = Math.max(...r.backends.map((b) => b.label.length));
  for (const b of r.backends) {
    const text = b.status === 'available' ? `${b.detail}; ceilings: ${b.ceilingsNote}` : `${b.status.toUpperCase()}: ${b.detail}`;
    L.push(`  ${b.label.padEnd(w)}  ${text}`);
    if (b.gpuCeilings) L.push(`  ${''.padEnd(w)}  GPU ceilings: matrix ${f(b.gpuCeilings.matrixGflops, 1)} GFLOP/s (${b.gpuCeilings.matrixNote}); bandwidth ${f(b.gpuCeilings.bandwidthGBps, 1)} GB/s (${b.gpuCeilings.bandwidthNote})`);
  }
  L.push('cases:');
  const seenCase = new Set<string>();
  for (const c of r.cases) {
    if (c.case !== 'hc-mix' && c.case !== 'hc-combine') L.push(`  ${c.case} (${c.config}, T=${c.tokens}, tp ${c.tp}): ${c.what}; ${c.detail}; ${sig(c.gflop)} GFLOP, ${sig(c.gbytes)} GB`);
    else if (!seenCase.has(c.case)) L.push(`  ${c.case} (${c.config}, T=${r.cases.filter((x) => x.case === c.case).map((x) => x.tokens).join(', ')}, tp 1): ${c.what}`);
    seenCase.add(c.case);
  }
  const head = ['case', 'T', 'backend', 'time s', 'GFLOP/s', 'GB/s', 'x matrix', 'x bw', 'of roof', 'RSS peak (rise)', 'bits=cpu', 'runs'];
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const m of r.results) {
    if (m.status !== 'measured') {
      rows.push([m.case, String(m.tokens), m.backend, m.status.toUpperCase(), '', '', '', '', '', '', '', `[${notes.length + 1}]`]);
      notes.push(`[${notes.length + 1}] ${m.case} T=${m.tokens} ${m.backend}: ${m.status}: ${m.reason}`);
      continue;
    }
    rows.push([
      m.case,
      String(m.tokens),
      m.backend,
      m.seconds! < 0.1 ? m.seconds!.toFixed(5) : m.seconds!.toFixed(3),
      sig(m.gflops),
      sig(m.gbps),
      f(m.overMatrix, 3),
      f(m.overBandwidth, 3),
      f(m.ofRoofline, 3),
      `${formatBytes(m.rssPeakBytes!)}${m.rssPeakExact ? '' : '~'} (+${formatBytes(Math.max(0, m.rssPeakBytes! - m.rssBeforeBytes!))})`,
      m.sameAsCpu === null ? '-' : m.sameAsCpu ? 'same' : 'differ',
      m.firstRunOnly ? 'first run only' : `${m.runs.length}`,
    ]);
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]): string => `  ${cells.map((c, i) => (i <= 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`.trimEnd();
  L.push(line(head));
  let prevCase = '';
  for (const row of rows) {
    if (prevCase && row[0] !== prevCase) L.push('');
    prevCase = row[0];
    L.push(line(row));
  }
  for (const n of notes) L.push(`  ${n}`);
  L.push(`scale: (time(T) / time(${r.scale[0]?.base ?? '-'})) / (T / ${r.scale[0]?.base ?? '-'}); 1.00 is linear in T`);
  for (const s of r.scale) {
    L.push(`  ${s.case.padEnd(10)} ${s.backend.padEnd(w)}  ${s.points.map((p) => `T=${p.tokens} ${p.ratio !== null ? f(p.ratio, 3) : p.seconds !== null ? '(no base)' : 'not measured'}`).join('   ')}`);
  }
  L.push(`peak RSS of this process over the run: ${formatBytes(r.peakRssBytes)} (getrusage maxRSS). In the table: this process's peak during the measurement ("~": the highest of 5 ms samples, maxRSS did not rise) and its rise over the RSS before it`);
  L.push('counted:');
  for (const [k, v] of Object.entries(r.counted)) L.push(`  ${k}: ${v}`);
  if (r.files.json || r.files.plot) L.push(`files: ${[r.files.json, r.files.plot].filter(Boolean).join(', ')}`);
  return `${L.join('\n')}\n`;
}

/** The plot: time against T, one series per (backend, HC case) with at least one point, log-log. */
export function timeVsTPlot(r: SuiteReport): Promise<string> {
  const series: { name: string; points: [number, number][] }[] = [];
  for (const c of ['hc-mix', 'hc-combine'] as const) {
    for (const b of r.backends.filter((x) => x.status === 'available')) {
      const points = r.results.filter((m) => m.case === c && m.backend === b.label && m.status === 'measured').map((m): [number, number] => [m.tokens, m.seconds!]);
      if (points.length) series.push({ name: `${c} ${b.label}`, points });
    }
  }
  const cfg = r.cases.find((c) => c.case === 'hc-mix')?.config ?? '';
  const ts = r.cases.filter((c) => c.case === 'hc-mix' || c.case === 'hc-combine').map((c) => c.tokens);
  return linePlotSvg({
    title: `HC mix and combine (${cfg}, one rank's rows): time against T, per backend`,
    x: { label: 'T (rows per rank)', log: true, integer: true, ...(ts.length ? { domain: [Math.min(...ts) / 1.25, Math.max(...ts) * 1.25] as [number, number] } : {}) },
    y: { label: 'seconds (median)', log: true },
    series,
    width: 560,
    height: 320,
    idPrefix: 'bench-time-',
  });
}

/** The files of `--out DIR`: replaced on every run (the suite's results folder). */
const SUITE_FILES = { json: 'bench.json', plot: 'time-vs-T.svg' } as const;

/** Checks `--out DIR` before any work (output/outputDir.ts); its files are replaced, links refused. */
export function checkSuiteOut(dir: string): OutputDir {
  return checkOutputDir(dir, '--out', Object.values(SUITE_FILES), { replace: true });
}

/** Writes DIR/bench.json and DIR/time-vs-T.svg (DIR created, both renamed into place together); records their paths in the report. */
export async function writeSuiteFiles(r: SuiteReport, out: OutputDir): Promise<void> {
  r.files = { json: out.files.get(SUITE_FILES.json)!.path, plot: out.files.get(SUITE_FILES.plot)!.path };
  const plot = await timeVsTPlot(r);
  await writeOutputDir(
    out,
    new Map([
      [SUITE_FILES.plot, [Buffer.from(plot, 'utf8')]],
      [SUITE_FILES.json, [Buffer.from(`${JSON.stringify(r, null, 1)}\n`, 'utf8')]],
    ]),
  );
}

/**
 * The suite end to end: --out checked, run, the files written, and the text for stdout (JSON
 * with --json). Files that cannot be written at the end: ResultsNotSavedError, with the text.
 */
export async function suiteCommand(opts: SuiteOptions, deps: SuiteDeps = {}): Promise<{ report: SuiteReport; stdout: string }> {
  const out = opts.outDir === null ? null : checkSuiteOut(opts.outDir);
  const report = await runSuite(opts, deps);
  if (out === null) return { report, stdout: format(report, opts) };
  try {
    await writeSuiteFiles(report, out);
  } catch (e) {
    throw new ResultsNotSavedError((e as Error).message, format(report, opts));
  }
  return { report, stdout: format(report, opts) };
}

function format(report: SuiteReport, opts: SuiteOptions): string {
  return opts.json ? `${JSON.stringify(report)}\n` : formatSuiteReport(report);
}

/** numpy's version, or null (for the test's expectations) */
export function numpyVersion(): string | null {
  try {
    return execFileSync('python3', ['-c', 'import numpy; print(numpy.__version__)'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}
