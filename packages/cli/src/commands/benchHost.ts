// `hcsp bench`, the host device's part: the native backend (rocm, device host) on the
// full-dimension HC mix, its two GEMMs alone, and an HC-only Flash-Next prefill at tp 4, each
// set against what this machine can do, measured in the same run: numpy's fp32 GEMM (OpenBLAS)
// at the same shapes, and the copy bandwidth of a large buffer. It prints four ratios with
// their goals: exact GEMM / the BLAS ceiling, the mix's time / its roofline bound, the mix's
// time linearity in T, and the peak memory / the tensors that must be live.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { RocmBackend } from '@hcsp/backend-rocm';
import { createBackend } from '@hcsp/backends';
import {
  bytesPerElement,
  FLASH_NEXT,
  GraphBuilder,
  hcPrefix,
  hcWeightSpecs,
  lastUses,
  modelWeightSpecs,
  numel,
  preparePrefill,
  resolveWeight,
  Rng,
  runOnce,
  STAND_IN_SUB_LAYERS,
  SyntheticWeightSource,
  type Graph,
  type ModelConfig,
  type PreparedGraph,
  type RunResult,
  type Tensor,
  type TensorData,
  type ValueId,
  type WeightInfo,
  type WeightRef,
  type WeightSlice,
  type WeightSource,
  type WeightSpec,
} from '@hcsp/core';
import { hcMixBenchGraph, median, parseTokenList } from './bench.ts';
import { formatBytes } from '../guards/byteSize.ts';
import { RUNTIME_BYTES } from '../guards/memoryEstimate.ts';
import { checkMemory, memoryLimit } from '../guards/memoryGuard.ts';
import { parseIntStrict } from '../parseArgs.ts';
import { nodeProgress } from '../progress.ts';

/** goals of the four ratios */
export const GOALS = {
  /** exact GEMM GFLOP/s over the BLAS ceiling, at least */
  gemmOverCeiling: 0.8,
  /** HC mix time over its roofline bound, at most */
  mixOverBound: 1.5,
  /** peak memory over the tensors that must be live, at most */
  memoryOverLive: 1.5,
} as const;

export interface HostBenchOptions {
  /** T of the HC mix and of its GEMMs alone (--tokens) */
  tokens: number[];
  /** T of the linearity series (the first is the base); [] leaves it out */
  linearity: number[];
  /** timed runs per measurement (median reported) */
  reps: number;
  /** T of the HC-only Flash-Next prefill, null: left out */
  prefillTokens: number | null;
  prefillTp: number;
  prefillReps: number;
  /** T of the check of the host's HC mix against the CPU reference, bit for bit */
  exactTokens: number;
  /** bytes of the copy that measures the memory bandwidth */
  copyBytes: number;
  seed: number;
  quiet: boolean;
  maxMemory?: string;
}

export interface HostBenchCliOptions {
  tokens: string;
  seed: string;
  quiet?: boolean;
  maxMemory?: string;
  /** false with --no-host */
  host?: boolean;
  hostReps?: string;
  /** a list, or false with --no-linearity */
  linearity?: string | false;
  prefillTokens?: string;
  /** false with --no-prefill */
  prefill?: boolean;
  prefillReps?: string;
  exactTokens?: string;
}

export const HOST_DEFAULTS = {
  reps: '3',
  linearity: '1024,4096,16384',
  // full depth (48 layers x 2 HC steps, 4 ranks, SP off below 1024 tokens): about 15 s a run here
  prefillTokens: '64',
  prefillReps: '2',
  exactTokens: '256',
  copyBytes: 512 * 2 ** 20,
} as const;

/** The host part's options, or null when --no-host leaves it out. */
export function parseHostBenchOptions(raw: HostBenchCliOptions): HostBenchOptions | null {
  if (raw.host === false) return null;
  return {
    tokens: parseTokenList(raw.tokens),
    linearity: raw.linearity === false ? [] : parseTokenList(raw.linearity ?? HOST_DEFAULTS.linearity, '--linearity'),
    reps: parseIntStrict(raw.hostReps ?? HOST_DEFAULTS.reps, '--host-reps', { min: 1, max: 1000 }),
    prefillTokens: raw.prefill === false ? null : parseIntStrict(raw.prefillTokens ?? HOST_DEFAULTS.prefillTokens, '--prefill-tokens', { min: 1, max: 1 << 20 }),
    prefillTp: 4,
    prefillReps: parseIntStrict(raw.prefillReps ?? HOST_DEFAULTS.prefillReps, '--prefill-reps', { min: 1, max: 1000 }),
    exactTokens: parseIntStrict(raw.exactTokens ?? HOST_DEFAULTS.exactTokens, '--exact-tokens', { min: 1, max: 1 << 20 }),
    copyBytes: HOST_DEFAULTS.copyBytes,
    seed: parseIntStrict(raw.seed, '--seed'),
    quiet: raw.quiet === true,
    maxMemory: raw.maxMemory,
  };
}

// ---------------------------------------------------------------------------------------
// What a graph costs: GEMM shapes and flops, the bytes of every other node, the tensors that
// must be live.

export interface GemmShape {
  /** rows of x */
  T: number;
  /** x [T, K], w [O, K], y [T, O] */
  K: number;
  O: number;
}

const shapeKey = (s: GemmShape): string => `${s.T}x${s.K}x${s.O}`;
const bytesOf = (d: { shape: readonly number[]; dtype: Parameters<typeof bytesPerElement>[0] }): number => numel(d.shape) * bytesPerElement(d.dtype);

export interface GraphCost {
  /** each distinct linear shape and how many nodes have it */
  gemms: { shape: GemmShape; count: number }[];
  gemmFlops: number;
  /** every non-linear node's inputs and outputs at their storage size, once per node */
  otherBytes: number;
  /** graph inputs uploaded and outputs read back (each a copy: read once, written once) */
  ioBytes: number;
}

export function graphCost(graph: Graph, readBack: readonly ValueId[] = graph.outputs): GraphCost {
  const gemms = new Map<string, { shape: GemmShape; count: number }>();
  let gemmFlops = 0;
  let otherBytes = 0;
  for (const node of graph.nodes) {
    if (node.op === 'linear') {
      const x = graph.values[node.inputs[0]!].shape;
      const w = graph.values[node.inputs[1]!].shape;
      const shape = { T: numel(x.slice(0, -1)), K: x.at(-1)!, O: w[0] };
      const e = gemms.get(shapeKey(shape)) ?? { shape, count: 0 };
      e.count++;
      gemms.set(shapeKey(shape), e);
      gemmFlops += 2 * shape.T * shape.K * shape.O;
      continue;
    }
    for (const id of [...node.inputs, ...node.outputs]) if (id !== null) otherBytes += bytesOf(graph.values[id]);
  }
  const ioBytes = [...graph.inputs, ...new Set(readBack)].reduce((s, id) => s + bytesOf(graph.values[id]), 0);
  return { gemms: [...gemms.values()], gemmFlops, otherBytes, ioBytes };
}

export interface LiveBytes {
  /** every weight value the graph reads, once (the device holds each for the whole run) */
  weights: number;
  /** graph inputs */
  inputs: number;
  /** most input and intermediate bytes alive at once (GraphSession's freeing: after the last reader; kept values to the end) */
  activationPeak: number;
  /** weights + activationPeak */
  total: number;
}

/** The bytes that must be live on the device to run the graph once, keeping `keep` to the end. */
export function liveBytes(graph: Graph, keep: readonly ValueId[] = graph.outputs): LiveBytes {
  let weights = 0;
  const seen = new Set<ValueId>();
  for (const node of graph.nodes) {
    for (const id of node.inputs) {
      const d = id === null ? undefined : graph.values[id];
      if (d?.kind !== 'weight' || seen.has(d.id)) continue;
      seen.add(d.id);
      // a row-gathered weight is read only at the rows its ids name
      weights += d.weight?.gather === 'rows' ? Math.min(d.shape[0], numel(graph.values[node.inputs[0]!].shape)) * (bytesOf(d) / d.shape[0]) : bytesOf(d);
    }
  }
  const last = lastUses(graph);
  const kept = new Set(keep);
  const live = new Map<ValueId, number>();
  let total = 0;
  const add = (id: ValueId): void => {
    const b = bytesOf(graph.values[id]);
    live.set(id, b);
    total += b;
  };
  const drop = (id: ValueId): void => {
    const b = live.get(id);
    if (b === undefined || kept.has(id)) return;
    live.delete(id);
    total -= b;
  };
  for (const id of graph.inputs) add(id);
  const inputs = total;
  let peak = total;
  graph.nodes.forEach((node, i) => {
    for (const id of node.outputs) if (id !== null) add(id);
    peak = Math.max(peak, total);
    for (const id of node.inputs) if (id !== null && graph.values[id].kind !== 'weight' && last.get(id) === i) drop(id);
    for (const id of node.outputs) if (id !== null && !last.has(id)) drop(id);
  });
  return { weights, inputs, activationPeak: peak, total: weights + peak };
}

/**
 * The bytes the exact host GEMMs hold beyond each weight once (native/src/host/gemm/panels.h:
 * a weight's panel is its values as bf16, about its bytes for a bf16 weight, twice them for an
 * fp8 one). A weight only GEMMs read (`panelOnly`: rocm's panelOnlyWeights) is packed when the
 * session opens and its own bytes freed, so it is held once, as its panel, the largest one
 * twice while it is packed; a weight other ops read too keeps its bytes beside the panel its
 * first GEMM makes.
 */
export function gemmPanelExtraBytes(graph: Graph, panelOnly: ReadonlySet<ValueId>): number {
  const gemmPorts: Record<string, number> = { linear: 1, fp8LinearPtpc: 2 };
  const ids = new Set(graph.nodes.filter((n) => n.op in gemmPorts).map((n) => n.inputs[gemmPorts[n.op]]!));
  let extra = 0;
  let packing = 0;
  for (const id of ids) {
    const d = graph.values[id];
    if (d.kind !== 'weight') continue;
    const panel = numel(d.shape) * 2;
    if (!panelOnly.has(id)) extra += panel;
    else {
      extra += panel - bytesOf(d);
      packing = Math.max(packing, panel);
    }
  }
  return extra + packing;
}

// ---------------------------------------------------------------------------------------
// The machine's ceilings: numpy float32 GEMM at each shape, and copy bandwidth.

export interface Ceilings {
  /** median seconds of numpy a[T,K] @ b[K,O], by shapeKey; empty when numpy is not there */
  gemmSeconds: Record<string, number>;
  gemmNote: string;
  /** the copy bandwidth used in the bounds, GB/s of bytes read + written (the best of the copies below), or null */
  bandwidthGBps: number | null;
  bandwidthNote: string;
  copies: { what: string; gbps: number }[];
}

// numpy float32 a @ b per [T, K, O] (median of reps; a shape under 50 ms is run in a loop),
// then copyto of `copy` bytes on one thread and split over two threads (numpy releases the GIL).
const HOST_CEILING_PY = `
import json, sys, time, threading
import numpy as np
shapes = json.loads(sys.argv[1]); reps = int(sys.argv[2]); copy = int(sys.argv[3])
rng = np.random.default_rng(0)
def timed(fn):
    fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    loops = max(1, int(0.05 / max(one, 1e-9)))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(loops): fn()
        ts.append((time.perf_counter() - t0) / loops)
    ts.sort()
    return ts[len(ts) // 2]
out = []
for T, K, O in shapes:
    a = rng.standard_normal((T, K), dtype=np.float32)
    b = rng.standard_normal((K, O), dtype=np.float32)
    out.append(timed(lambda: a @ b))
    del a, b
n = copy // 4
src = np.ones(n, dtype=np.float32); dst = np.empty(n, dtype=np.float32)
one = timed(lambda: np.copyto(dst, src))
def two():
    h = n // 2
    ts = [threading.Thread(target=np.copyto, args=(dst[:h], src[:h])), threading.Thread(target=np.copyto, args=(dst[h:], src[h:]))]
    for t in ts: t.start()
    for t in ts: t.join()
both = timed(two)
cfg = np.show_config(mode='dicts') if hasattr(np, 'show_config') else {}
blas = cfg.get('Build Dependencies', {}).get('blas', {}) if isinstance(cfg, dict) else {}
print(json.dumps({'seconds': out, 'copy1': one, 'copy2': both, 'numpy': np.__version__, 'blas': f"{blas.get('name', '?')} {blas.get('version', '')}".strip()}))
`;

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

export function measureCeilings(shapes: GemmShape[], reps: number, copyBytes: number): Ceilings {
  const copies: { what: string; gbps: number }[] = [];
  const mib = `${copyBytes / 2 ** 20} MiB`;
  copies.push({ what: `Node Buffer.copy of ${mib}, 1 thread`, gbps: (2 * copyBytes) / nodeCopySeconds(copyBytes, Math.max(3, reps)) / 1e9 });
  let gemmSeconds: Record<string, number> = {};
  let gemmNote: string;
  try {
    const stdout = execFileSync('python3', ['-c', HOST_CEILING_PY, JSON.stringify(shapes.map((s) => [s.T, s.K, s.O])), String(Math.max(3, reps)), String(copyBytes)], {
      encoding: 'utf8',
      timeout: 600_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r = JSON.parse(stdout) as { seconds: number[]; copy1: number; copy2: number; numpy: string; blas: string };
    gemmSeconds = Object.fromEntries(shapes.map((s, i) => [shapeKey(s), r.seconds[i]]));
    gemmNote = `numpy ${r.numpy} (${r.blas}) float32 a @ b, median of ${Math.max(3, reps)}`;
    copies.push({ what: `numpy copyto of ${mib}, 1 thread`, gbps: (2 * copyBytes) / r.copy1 / 1e9 });
    copies.push({ what: `numpy copyto of ${mib}, split over 2 threads`, gbps: (2 * copyBytes) / r.copy2 / 1e9 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    const why = err.code === 'ENOENT' ? 'python3 is not installed' : (err.stderr?.trim().split('\n').at(-1) ?? err.message);
    gemmNote = `unavailable: python3/numpy failed (${why})`;
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

// ---------------------------------------------------------------------------------------
// Memory of one phase: the addon's allocator peak and the process's RSS.

export interface MemoryMeasure {
  /** bytes that must be live (from the graph) */
  mustLive: LiveBytes;
  /** the addon allocator's peak during the phase, above what was live before it */
  addonPeakBytes: number;
  /** false: the allocator's all-time peak did not rise, so this is the highest of samples every few ms */
  addonPeakExact: boolean;
  rssBeforeBytes: number;
  rssPeakBytes: number;
  /** false: getrusage's maxRSS did not rise during the phase, so the peak is the highest sample */
  rssPeakExact: boolean;
  /** rssPeakBytes - rssBeforeBytes */
  rssDeltaBytes: number;
  addonOverLive: number;
  rssDeltaOverLive: number;
  /** the whole process at its peak (maxRSS when it rose) over the tensors that must be live */
  rssPeakOverLive: number;
  goal: number;
  addonMet: boolean;
  rssMet: boolean;
}

let gcFn: (() => void) | null | undefined;
/** a full collection, where V8 lets one be asked for (so that a phase's baseline holds no garbage) */
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

interface Addonish {
  stats(): { liveBytes: number; peakBytes: number };
}

export async function measureMemory<T>(addon: Addonish, mustLive: LiveBytes, work: () => Promise<T>): Promise<{ value: T; memory: MemoryMeasure }> {
  collectGarbage();
  const before = addon.stats();
  const rssBefore = process.memoryUsage.rss();
  const maxRssBefore = process.resourceUsage().maxRSS * 1024;
  let rssSample = rssBefore;
  let liveSample = before.liveBytes;
  const sample = (): void => {
    rssSample = Math.max(rssSample, process.memoryUsage.rss());
    liveSample = Math.max(liveSample, addon.stats().liveBytes);
  };
  const timer = setInterval(sample, 5);
  let value: T;
  try {
    value = await work();
  } finally {
    clearInterval(timer);
  }
  sample();
  const after = addon.stats();
  const maxRssAfter = process.resourceUsage().maxRSS * 1024;
  const addonPeakExact = after.peakBytes > before.peakBytes;
  const addonPeakBytes = (addonPeakExact ? after.peakBytes : liveSample) - before.liveBytes;
  const rssPeakExact = maxRssAfter > maxRssBefore;
  const rssPeakBytes = rssPeakExact ? Math.max(maxRssAfter, rssSample) : rssSample;
  const rssDeltaBytes = rssPeakBytes - rssBefore;
  const addonOverLive = addonPeakBytes / mustLive.total;
  const rssDeltaOverLive = rssDeltaBytes / mustLive.total;
  return {
    value,
    memory: {
      mustLive,
      addonPeakBytes,
      addonPeakExact,
      rssBeforeBytes: rssBefore,
      rssPeakBytes,
      rssPeakExact,
      rssDeltaBytes,
      addonOverLive,
      rssDeltaOverLive,
      rssPeakOverLive: rssPeakBytes / mustLive.total,
      goal: GOALS.memoryOverLive,
      addonMet: addonOverLive <= GOALS.memoryOverLive,
      rssMet: rssDeltaOverLive <= GOALS.memoryOverLive,
    },
  };
}

// ---------------------------------------------------------------------------------------
// Fast synthetic weights for the prefill: core's SyntheticWeightSource draws every value with
// Box-Muller (about 11 M values/s here: ~4 minutes for the HC-only stack's 2.6 G values). Each
// normal bf16 tensor is instead tiled from one seeded pool of N(0, std) bf16 values per std
// (2 Mi values, drawn by core's Rng), from an offset hashed from its name: the same shapes and
// the same value distribution, made at memcpy speed, slices made directly (nothing cached).

const POOL = 1 << 21;

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class TiledWeightSource implements WeightSource {
  private readonly specs = new Map<string, WeightSpec>();
  private readonly pools = new Map<number, Uint16Array>();
  private readonly exact: SyntheticWeightSource;

  constructor(specs: readonly WeightSpec[], readonly seed: number) {
    for (const s of specs) this.specs.set(s.name, s);
    // anything not a zero-mean normal bf16 tensor (none in flash-next's HC-only stack) is core's
    this.exact = new SyntheticWeightSource(specs, seed);
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  info(name: string): WeightInfo {
    return this.exact.info(name);
  }

  private pool(std: number): Uint16Array {
    let p = this.pools.get(std);
    if (!p) {
      p = new Rng(fnv1a(`${this.seed}:pool:${std}`)).fillBf16Normal(POOL, std);
      this.pools.set(std, p);
    }
    return p;
  }

  async read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`tiled weights: no tensor named '${name}'`);
    const init = spec.init;
    if (spec.dtype !== 'bf16' || init.kind !== 'normal' || (init.mean ?? 0) !== 0) return this.exact.read(name, slice);
    const pool = this.pool(init.std);
    const offset = fnv1a(name) % POOL;
    const shape = [...spec.shape];
    const axis = slice?.axis ?? 0;
    const ranges = slice?.ranges ?? [[0, shape[0]] as [number, number]];
    const dim = shape[axis];
    const outer = numel(shape.slice(0, axis));
    const inner = numel(shape.slice(axis + 1));
    const kept = ranges.reduce((a, [s, e]) => a + e - s, 0);
    shape[axis] = kept;
    const out = new Uint16Array(outer * kept * inner);
    let o = 0;
    for (let i = 0; i < outer; i++) {
      for (const [s, e] of ranges) {
        // flat elements [from, from + len) of the whole tensor, from the pool with wrap-around
        let from = (i * dim + s) * inner;
        let len = (e - s) * inner;
        while (len > 0) {
          const at = (offset + from) % POOL;
          const n = Math.min(len, POOL - at);
          out.set(pool.subarray(at, at + n), o);
          o += n;
          from += n;
          len -= n;
        }
      }
    }
    return { dtype: 'bf16', shape, data: out };
  }
}

// ---------------------------------------------------------------------------------------
// The report.

export interface Timing {
  /** median */
  seconds: number;
  reps: number[];
  gflops: number;
}

export interface GemmRow {
  tokens: number;
  /** 'W_cat' (the down GEMM with inject, r + n outputs) or 'up' */
  name: string;
  shape: GemmShape;
  gflop: number;
  /** the kernel alone: addon.run('linear') on tensors already on the device */
  exact: Timing;
  blas: Timing;
  /** the one-node linear graph through a prepared session: x uploaded, GEMM, y read back */
  exactGraph: Timing;
  blasGraph: Timing;
  numpy: { seconds: number; gflops: number } | null;
  /** (a): exact kernel GFLOP/s over numpy's */
  exactOverCeiling: number | null;
  blasOverCeiling: number | null;
  /** exactOverCeiling >= GOALS.gemmOverCeiling (null: no ceiling) */
  met: boolean | null;
  load: number;
}

export interface MixRow {
  tokens: number;
  gflop: number;
  cost: GraphCost;
  exact: Timing;
  /**
   * where the time goes: each node's median seconds (from the previous node's end; the first
   * includes uploading the streams), then 'read back' (outputs downloaded)
   */
  ops: { op: string; seconds: number }[];
  bound: { gemmSeconds: number; memorySeconds: number; seconds: number } | null;
  /** (b): time over the roofline bound */
  overBound: number | null;
  met: boolean | null;
  /** prepare (weight upload) and the first run, untimed: the memory measure */
  memory: MemoryMeasure;
  /** the host GEMMs' panels beyond each weight once (gemmPanelExtraBytes), part of the addon's peak */
  gemmPanelExtraBytes: number;
  /** the first run after prepare (untimed in `exact`: it touches fresh memory, and packs the panels of GEMM weights other ops read too) */
  firstRunSeconds: number;
  load: number;
}

export interface LinearityRow {
  tokens: number;
  seconds: number;
  /** (c): (time(T) / time(T0)) / (T / T0) */
  ratio: number;
}

export interface PrefillRow {
  config: string;
  stack: 'hc-only';
  tp: number;
  tokens: number;
  sp: boolean;
  spReason: string | null;
  layers: number;
  nodes: number;
  weights: string;
  /** session prepare: weights made and uploaded, the GEMM-only ones packed into panels (their own bytes freed) */
  prepareSeconds: number;
  exact: Timing;
  cost: GraphCost;
  bound: { gemmSeconds: number; memorySeconds: number; seconds: number } | null;
  overBound: number | null;
  met: boolean | null;
  memory: MemoryMeasure;
  gemmPanelExtraBytes: number;
  firstRunSeconds: number;
  outputSha256: string;
  nextToken: number;
  load: number;
}

export interface HostBenchReport {
  config: string;
  device: string;
  blasDevice: string;
  machine: { cpus: number; model: string; addonThreads: number };
  loadStart: number[];
  loadEnd: number[];
  ceilings: Ceilings;
  /** the host's exact HC mix against the CPU reference, bit for bit */
  check: { tokens: number; bitExact: boolean; mismatch: string | null };
  gemms: GemmRow[];
  mix: MixRow[];
  linearity: { base: number; rows: LinearityRow[]; note: string } | null;
  prefill: PrefillRow | null;
  goals: { name: string; goal: string; value: number | null; met: boolean | null }[];
  counted: Record<string, string>;
}

function randomBf16(shape: number[], seed: number): Tensor {
  return { dtype: 'bf16', shape, data: new Rng(seed).fillBf16Normal(numel(shape), 1) };
}

/** null when every graph output has the same bytes, else where the first difference is. */
export function firstDifference(graph: Graph, got: RunResult, want: RunResult, names: [string, string]): string | null {
  for (const id of graph.outputs) {
    const a = got.values.get(id);
    const b = want.values.get(id);
    if (!a || !b) return `output '${id}' is missing from the ${a ? names[1] : names[0]} result`;
    const da = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
    const db = new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
    if (da.length !== db.length) return `output '${id}' has ${da.length} bytes on ${names[0]}, ${db.length} on ${names[1]}`;
    const step = bytesPerElement(a.dtype);
    let diff = 0;
    let first = -1;
    for (let i = 0; i < da.length; i += step) {
      let same = true;
      for (let j = 0; j < step; j++) if (da[i + j] !== db[i + j]) same = false;
      if (!same) {
        if (first < 0) first = i / step;
        diff++;
      }
    }
    if (diff > 0) return `output '${id}': ${diff} of ${da.length / step} elements differ, first at ${first} (${names[0]} ${elementText(a.data, first)}, ${names[1]} ${elementText(b.data, first)})`;
  }
  return null;
}

function elementText(d: TensorData, i: number): string {
  return d instanceof Uint16Array || d instanceof Uint8Array ? `0x${d[i].toString(16)}` : String(d[i]);
}

async function timed(reps: number, run: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await run();
    out.push((performance.now() - t0) / 1000);
  }
  return out;
}

const timing = (reps: number[], flops: number): Timing => {
  const s = median(reps);
  return { seconds: s, reps, gflops: flops / s / 1e9 };
};

/** One-node graph: x [T, K] (input) times the mix's first (W_cat) or second (up) weight. */
export function linearBenchGraph(config: ModelConfig, tokens: number, which: 0 | 1): Graph {
  const prefix = hcPrefix(0, 'attn');
  const n = config.hc.count;
  const width = n * config.hiddenSize;
  const r = config.hc.lowRank;
  const b = new GraphBuilder(1, { bench: 'hc mix gemm', which, config: config.name, tokens });
  const ref: WeightRef =
    which === 0 ? { name: `${prefix}.W_cat`, concat: [`${prefix}.input_mix_weight_down.weight`, `${prefix}.block_inject_weight.weight`] } : { name: `${prefix}.input_mix_weight_up.weight` };
  const [K, O] = which === 0 ? [width, r + n] : [r, width];
  const x = b.input('x', [tokens, K], 'bf16');
  const w = b.weight(ref, [O, K]);
  const y = b.value('y', [tokens, O], 'bf16', 0);
  b.node({ op: 'linear', rank: 0, layer: 0, scope: which === 0 ? 'gemm.W_cat' : 'gemm.up', inputs: [x, w], outputs: [y], attrs: {} });
  b.markOutput(y);
  return b.build();
}

function sha256(t: Tensor): string {
  return createHash('sha256').update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)).digest('hex');
}

const ratioMet = (v: number | null, goal: number, atLeast: boolean): boolean | null => (v === null ? null : atLeast ? v >= goal : v <= goal);

export interface HostBenchDeps {
  /** the model (default flash-next); tests use a small one */
  config?: ModelConfig;
  /** progress lines */
  say?: (line: string) => void;
}

/** The prefill's graph and weights, as `hcsp prefill --stack hc-only` builds them (synthetic weights tiled for speed). */
function hostPrefill(config: ModelConfig, tokens: number, tp: number, seed: number) {
  const weights = new TiledWeightSource(modelWeightSpecs(config, STAND_IN_SUB_LAYERS), seed);
  const p = preparePrefill({ config, tokens, tp, sp: 'auto', reduce: 'ring', seed, subLayers: STAND_IN_SUB_LAYERS, weights, env: process.env });
  const keep = [p.outputs.logits, p.outputs.nextTokens, p.outputs.h, ...(p.outputs.mtp ? [p.outputs.mtp.logits, p.outputs.mtp.draftTokens] : [])];
  return { p, weights, keep };
}

export async function runHostBench(opts: HostBenchOptions, deps: HostBenchDeps = {}): Promise<HostBenchReport> {
  const config = deps.config ?? FLASH_NEXT;
  const say = deps.say ?? ((line: string): void => void (opts.quiet ? 0 : process.stderr.write(`bench: host: ${line}\n`)));
  const loadStart = loadavg();
  const mixTokens = [...new Set([...opts.tokens, ...opts.linearity])].sort((a, b) => a - b);
  const prefixSpecs = hcWeightSpecs(config, hcPrefix(0, 'attn'), true);
  const mixWeights = new SyntheticWeightSource(prefixSpecs, opts.seed);
  const prefill = opts.prefillTokens === null ? null : hostPrefill(config, opts.prefillTokens, opts.prefillTp, opts.seed);

  // Memory: the largest phase, on the device and in this process (inputs fed and outputs read
  // back), with the exact host GEMMs' bf16 panels beyond each weight once (gemmPanelExtraBytes:
  // a weight only GEMMs read is held as its panel alone).
  const { panelOnlyWeights } = await import('@hcsp/backend-rocm');
  const panelExtra = (g: Graph): number => gemmPanelExtraBytes(g, new Set(panelOnlyWeights(g).keys()));
  const phases = mixTokens.map((T) => {
    const g = hcMixBenchGraph(config, T);
    return { what: `HC mix at T ${T}`, live: liveBytes(g), extra: graphCost(g).ioBytes + panelExtra(g) };
  });
  if (prefill) {
    const g = prefill.p.graph;
    // each weight is made in this process before its upload: the largest one is held twice for a moment
    const largest = Math.max(...g.nodes.flatMap((n) => n.inputs.map((id) => (id && g.values[id].kind === 'weight' ? bytesOf(g.values[id]) : 0))));
    phases.push({ what: `HC-only prefill at tp ${opts.prefillTp}, T ${opts.prefillTokens}`, live: liveBytes(g, prefill.keep), extra: largest + panelExtra(g) });
  }
  const worst = phases.reduce((a, b) => (b.live.total + b.extra > a.live.total + a.extra ? b : a));
  checkMemory(
    `bench on the host device (${worst.what})`,
    {
      bytes: worst.live.total + worst.extra + RUNTIME_BYTES,
      sourceWeights: 0,
      rankWeights: worst.live.weights,
      weightScratch: 0,
      inputs: worst.live.inputs,
      activationPeak: worst.live.activationPeak + worst.extra,
      perRank: [],
      runtime: RUNTIME_BYTES,
    },
    memoryLimit(opts.maxMemory),
  );

  const exactBackend = (await createBackend('rocm', { device: 'host', gemm: 'exact' })) as RocmBackend;
  const blasBackend = (await createBackend('rocm', { device: 'host', gemm: 'blas' })) as RocmBackend;
  const addon = exactBackend.addon;
  try {
    // 1. the ceilings, first, with nothing else of ours running
    const gemmShapes = new Map<string, GemmShape>();
    for (const T of mixTokens) for (const g of graphCost(hcMixBenchGraph(config, T)).gemms) gemmShapes.set(shapeKey(g.shape), g.shape);
    if (prefill) for (const g of graphCost(prefill.p.graph, prefill.keep).gemms) gemmShapes.set(shapeKey(g.shape), g.shape);
    say(`ceilings: numpy fp32 GEMM at ${gemmShapes.size} shapes, copy bandwidth (${formatBytes(opts.copyBytes)})`);
    const ceilings = measureCeilings([...gemmShapes.values()], opts.reps, opts.copyBytes);

    // 2. bit for bit against the CPU reference
    say(`T=${opts.exactTokens}: exact HC mix against the cpu reference`);
    const checkGraph = hcMixBenchGraph(config, opts.exactTokens);
    const checkFeeds = new Map<ValueId, Tensor>([['streams', randomBf16([opts.exactTokens, config.hc.count * config.hiddenSize], opts.seed + opts.exactTokens)]]);
    const hostOut = await runOnce(exactBackend, checkGraph, checkFeeds, mixWeights);
    const cpuOut = await runOnce(await createBackend('cpu'), checkGraph, checkFeeds, mixWeights);
    const mismatch = firstDifference(checkGraph, hostOut, cpuOut, ['host', 'cpu reference']);

    // 3. the HC mix, T ascending (each phase's memory peak is then above every earlier one)
    const mix: MixRow[] = [];
    for (const T of mixTokens) {
      const graph = hcMixBenchGraph(config, T);
      const feeds = new Map<ValueId, Tensor>([['streams', randomBf16([T, config.hc.count * config.hiddenSize], opts.seed + T)]]);
      const cost = graphCost(graph);
      say(`T=${T}: HC mix, prepare and a first run (memory measured)`);
      let firstRunSeconds = 0;
      const { value: prepared, memory } = await measureMemory(addon, liveBytes(graph), async () => {
        const p = await exactBackend.prepare(graph, mixWeights);
        const t0 = performance.now();
        await p.run(feeds);
        firstRunSeconds = (performance.now() - t0) / 1000;
        return p;
      });
      const progress = nodeProgress(`host HC mix T=${T}`, { quiet: opts.quiet });
      let reps: number[];
      const steps: number[][] = graph.nodes.map(() => []).concat([[]]);
      try {
        reps = await timed(opts.reps, async () => {
          const marks = [performance.now()];
          const onNode = (done: number, total: number): void => {
            marks.push(performance.now());
            progress.onNode(done, total);
          };
          // each node waited for, so that the marks are its own time (the engine otherwise waits once, at the end)
          await prepared.run(feeds, { onNode, syncEachNode: true });
          marks.push(performance.now());
          for (let i = 1; i < marks.length; i++) steps[i - 1].push((marks[i] - marks[i - 1]) / 1000);
        });
      } finally {
        progress.stop();
        await prepared.dispose();
      }
      const ops = steps.map((s, i) => ({ op: i < graph.nodes.length ? graph.nodes[i].op : 'read back', seconds: median(s) }));
      const exact = timing(reps, cost.gemmFlops);
      say(`T=${T}: HC mix ${exact.seconds.toFixed(3)} s (${reps.map((s) => s.toFixed(3)).join(' ')})`);
      const bound = roofline(cost, ceilings);
      const overBound = bound ? exact.seconds / bound.seconds : null;
      mix.push({ tokens: T, gflop: cost.gemmFlops / 1e9, cost, exact, ops, bound, overBound, met: ratioMet(overBound, GOALS.mixOverBound, false), memory, gemmPanelExtraBytes: panelExtra(graph), firstRunSeconds, load: loadavg()[0] });
    }

    // 4. the two GEMMs alone, exact and BLAS: the kernel on device tensors, and the one-node graph
    const gemms: GemmRow[] = [];
    for (const T of opts.tokens) {
      for (const which of [0, 1] as const) {
        const graph = linearBenchGraph(config, T, which);
        const cost = graphCost(graph);
        const shape = cost.gemms[0].shape;
        const name = which === 0 ? 'W_cat' : 'up';
        say(`T=${T}: GEMM ${name} [${T},${shape.K}]x[${shape.K},${shape.O}] exact and blas`);
        const x = randomBf16([T, shape.K], opts.seed + 7 * T + which);
        const feeds = new Map<ValueId, Tensor>([['x', x]]);
        const w = await resolveWeight(mixWeights, graph.values[graph.nodes[0].inputs[1]!].weight!);
        const kernel = async (mode: 'exact' | 'blas'): Promise<number[]> => {
          const xh = addon.upload('bf16', x.shape, x.data);
          const wh = addon.upload('bf16', w.shape, w.data);
          try {
            const once = async () => {
              for (const t of await addon.run('linear', [xh, wh], {}, mode)) if (t) addon.free(t);
            };
            await once();
            return await timed(opts.reps, once);
          } finally {
            addon.free(xh);
            addon.free(wh);
          }
        };
        const viaGraph = async (backend: RocmBackend): Promise<number[]> => {
          const p: PreparedGraph = await backend.prepare(graph, mixWeights);
          try {
            await p.run(feeds);
            return await timed(opts.reps, () => p.run(feeds));
          } finally {
            await p.dispose();
          }
        };
        const exact = timing(await kernel('exact'), cost.gemmFlops);
        const blas = timing(await kernel('blas'), cost.gemmFlops);
        const exactGraph = timing(await viaGraph(exactBackend), cost.gemmFlops);
        const blasGraph = timing(await viaGraph(blasBackend), cost.gemmFlops);
        const ns = ceilings.gemmSeconds[shapeKey(shape)];
        const numpy = ns === undefined ? null : { seconds: ns, gflops: cost.gemmFlops / ns / 1e9 };
        const exactOverCeiling = numpy ? exact.gflops / numpy.gflops : null;
        gemms.push({
          tokens: T,
          name,
          shape,
          gflop: cost.gemmFlops / 1e9,
          exact,
          blas,
          exactGraph,
          blasGraph,
          numpy,
          exactOverCeiling,
          blasOverCeiling: numpy ? blas.gflops / numpy.gflops : null,
          met: ratioMet(exactOverCeiling, GOALS.gemmOverCeiling, true),
          load: loadavg()[0],
        });
      }
    }

    // 5. the HC-only prefill, full depth
    let prefillRow: PrefillRow | null = null;
    if (prefill) {
      const { p, keep } = prefill;
      const label = `HC-only ${config.name} prefill tp ${opts.prefillTp} T=${opts.prefillTokens}`;
      say(`${label}: prepare (weights made and uploaded) and a first run (memory measured)`);
      let prepareSeconds = 0;
      let firstRunSeconds = 0;
      const { value: prepared, memory } = await measureMemory(addon, liveBytes(p.graph, keep), async () => {
        const t0 = performance.now();
        const s = await exactBackend.prepare(p.graph, p.weights);
        prepareSeconds = (performance.now() - t0) / 1000;
        const progress = nodeProgress(`${label} first run`, { quiet: opts.quiet });
        const t1 = performance.now();
        try {
          await s.run(p.feeds, { keep, onNode: progress.onNode });
        } finally {
          progress.stop();
        }
        firstRunSeconds = (performance.now() - t1) / 1000;
        return s;
      });
      let last: RunResult | null = null;
      let reps: number[];
      try {
        reps = await timed(opts.prefillReps, async () => {
          const progress = nodeProgress(`${label}`, { quiet: opts.quiet });
          try {
            last = await prepared.run(p.feeds, { keep, onNode: progress.onNode });
          } finally {
            progress.stop();
          }
        });
      } finally {
        await prepared.dispose();
      }
      const result = last as RunResult | null;
      const cost = graphCost(p.graph, [...p.graph.outputs, ...keep]);
      const exact = timing(reps, cost.gemmFlops);
      say(`${label}: ${exact.seconds.toFixed(3)} s (${reps.map((s) => s.toFixed(3)).join(' ')})`);
      const bound = roofline(cost, ceilings);
      const overBound = bound ? exact.seconds / bound.seconds : null;
      prefillRow = {
        config: config.name,
        stack: 'hc-only',
        tp: opts.prefillTp,
        tokens: opts.prefillTokens!,
        sp: p.plan.sp,
        spReason: p.plan.reason,
        layers: config.numLayers,
        nodes: p.graph.nodes.length,
        weights: `synthetic, tiled: each normal bf16 tensor from a ${POOL}-value seeded N(0, std) pool at a name-hashed offset (seed ${opts.seed}); not core's SyntheticWeightSource values`,
        prepareSeconds,
        exact,
        cost,
        bound,
        overBound,
        met: ratioMet(overBound, GOALS.mixOverBound, false),
        memory,
        gemmPanelExtraBytes: panelExtra(p.graph),
        firstRunSeconds,
        outputSha256: result ? sha256(result.values.get(p.outputs.h)!) : '',
        nextToken: result ? (result.values.get(p.outputs.nextTokens)!.data as Int32Array).at(-1)! : -1,
        load: loadavg()[0],
      };
    }

    // 6. linearity of the HC mix in T
    let linearity: HostBenchReport['linearity'] = null;
    if (opts.linearity.length > 0) {
      const base = opts.linearity[0];
      const t0 = mix.find((m) => m.tokens === base)!.exact.seconds;
      linearity = {
        base,
        rows: opts.linearity.map((T) => {
          const s = mix.find((m) => m.tokens === T)!.exact.seconds;
          return { tokens: T, seconds: s, ratio: s / t0 / (T / base) };
        }),
        note: 'no goal set: 1.00 is time proportional to T, above 1 grows faster than T',
      };
    }

    const goals: HostBenchReport['goals'] = [];
    for (const g of gemms) goals.push({ name: `(a) exact GEMM ${g.name} T=${g.tokens} / numpy fp32`, goal: `>= ${GOALS.gemmOverCeiling}`, value: g.exactOverCeiling, met: g.met });
    for (const m of mix) goals.push({ name: `(b) HC mix T=${m.tokens} / roofline bound`, goal: `<= ${GOALS.mixOverBound}`, value: m.overBound, met: m.met });
    if (prefillRow) goals.push({ name: `(b) HC-only prefill T=${prefillRow.tokens} / roofline bound`, goal: `<= ${GOALS.mixOverBound}`, value: prefillRow.overBound, met: prefillRow.met });
    for (const m of mix) {
      goals.push({ name: `(d) HC mix T=${m.tokens} addon peak / must-live`, goal: `<= ${GOALS.memoryOverLive}`, value: m.memory.addonOverLive, met: m.memory.addonMet });
      goals.push({ name: `(d) HC mix T=${m.tokens} RSS rise / must-live`, goal: `<= ${GOALS.memoryOverLive}`, value: m.memory.rssDeltaOverLive, met: m.memory.rssMet });
    }
    if (prefillRow) {
      goals.push({ name: `(d) HC-only prefill addon peak / must-live`, goal: `<= ${GOALS.memoryOverLive}`, value: prefillRow.memory.addonOverLive, met: prefillRow.memory.addonMet });
      goals.push({ name: `(d) HC-only prefill RSS rise / must-live`, goal: `<= ${GOALS.memoryOverLive}`, value: prefillRow.memory.rssDeltaOverLive, met: prefillRow.memory.rssMet });
    }
    const info = addon.info();
    return {
      config: config.name,
      device: exactBackend.describe(),
      blasDevice: blasBackend.describe(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?', addonThreads: info.threads },
      loadStart,
      loadEnd: loadavg(),
      ceilings,
      check: { tokens: opts.exactTokens, bitExact: mismatch === null, mismatch },
      gemms,
      mix,
      linearity,
      prefill: prefillRow,
      goals,
      counted: {
        gemm: "(a) GFLOP/s = 2*T*K*O / median seconds; the exact kernel alone (addon.run('linear') on tensors already on the device, output freed) against numpy's a[T,K] @ b[K,O] in float32",
        bound:
          '(b) bound = every linear node at numpy fp32 time for its shape + (bytes every other node reads and writes, at storage size, once + 2 x the graph inputs uploaded and outputs read back) / copy bandwidth',
        linearity: '(c) (time(T) / time(T0)) / (T / T0), HC mix medians',
        memory:
          '(d) must-live = every weight value once + the most graph-input and intermediate bytes alive at once (freed after their last reader, graph outputs to the end); addon peak = the allocator peak above what was live before the phase (prepare + first run); RSS rise = peak RSS (getrusage maxRSS when it rose, else 5 ms samples) - RSS before the phase',
        time: 'wall time of prepared.run (feeds uploaded, every node, outputs read back), median of reps after a first untimed run; weights uploaded once at prepare, untimed',
      },
    };
  } finally {
    await exactBackend.dispose();
    await blasBackend.dispose();
  }
}

// ---------------------------------------------------------------------------------------

const metText = (met: boolean | null): string => (met === null ? 'unmeasured' : met ? 'met' : 'NOT MET');
const f = (v: number | null, d = 2): string => (v === null ? '-' : v.toFixed(d));
const gib = (b: number): string => formatBytes(b);

function memoryLine(m: MemoryMeasure, panelExtra: number): string {
  return (
    `must-live ${gib(m.mustLive.total)} (weights ${gib(m.mustLive.weights)} + activations ${gib(m.mustLive.activationPeak)}); ` +
    `addon peak ${gib(m.addonPeakBytes)}${m.addonPeakExact ? '' : ' (sampled)'} (with the GEMMs' panels beyond each weight once, ${gib(panelExtra)}) = ${f(m.addonOverLive, 3)}x [${metText(m.addonMet)}]; ` +
    `RSS ${gib(m.rssBeforeBytes)} -> ${gib(m.rssPeakBytes)}${m.rssPeakExact ? '' : ' (sampled)'}, rise ${gib(m.rssDeltaBytes)} = ${f(m.rssDeltaOverLive, 3)}x [${metText(m.rssMet)}]`
  );
}

export function formatHostBenchReport(r: HostBenchReport): string {
  const L: string[] = [];
  L.push(`host device bench: ${r.config}; ${r.device}`);
  L.push(`  blas mode: ${r.blasDevice}`);
  L.push(`  machine: ${r.machine.cpus} CPUs (${r.machine.model}), addon threads ${r.machine.addonThreads}; load average ${r.loadStart.map((v) => v.toFixed(2)).join(' ')} at start, ${r.loadEnd.map((v) => v.toFixed(2)).join(' ')} at end`);
  L.push(`  ceiling: ${r.ceilings.gemmNote}`);
  L.push(`  bandwidth: ${f(r.ceilings.bandwidthGBps)} GB/s, ${r.ceilings.bandwidthNote}; ${r.ceilings.copies.map((c) => `${c.what} ${f(c.gbps)} GB/s`).join('; ')}`);
  L.push(`  check: exact HC mix at T=${r.check.tokens} vs the cpu reference: ${r.check.bitExact ? 'bit-exact' : `DIFFERS: ${r.check.mismatch}`}`);
  L.push('(a) GEMMs alone: exact kernel GFLOP/s / numpy fp32 GFLOP/s (goal >= 0.8)');
  L.push('    T      GEMM   [K -> O]          exact s   GFLOP/s  blas s    GFLOP/s  numpy s   GFLOP/s  exact/np  blas/np  graph exact/blas s  goal');
  for (const g of r.gemms) {
    L.push(
      `    ${String(g.tokens).padEnd(6)} ${g.name.padEnd(6)} [${g.shape.K} -> ${g.shape.O}]`.padEnd(38) +
        `${f(g.exact.seconds, 4).padStart(8)}  ${f(g.exact.gflops, 1).padStart(7)}  ${f(g.blas.seconds, 4).padStart(8)}  ${f(g.blas.gflops, 1).padStart(7)}  ` +
        `${f(g.numpy?.seconds ?? null, 4).padStart(8)}  ${f(g.numpy?.gflops ?? null, 1).padStart(7)}  ${f(g.exactOverCeiling, 3).padStart(8)}  ${f(g.blasOverCeiling, 3).padStart(7)}  ` +
        `${f(g.exactGraph.seconds, 4)}/${f(g.blasGraph.seconds, 4)}`.padEnd(20) +
        metText(g.met) +
        `  (load ${f(g.load)})`,
    );
  }
  L.push('(b) HC mix (exact): time / (GEMMs at numpy time + other bytes at the bandwidth) (goal <= 1.5)');
  for (const m of r.mix) {
    L.push(
      `    T=${m.tokens}: ${f(m.exact.seconds, 4)} s (median of ${m.exact.reps.length}: ${m.exact.reps.map((s) => f(s, 4)).join(' ')}), ${f(m.exact.gflops, 1)} GFLOP/s; ` +
        `bound ${f(m.bound?.seconds ?? null, 4)} s (GEMMs ${f(m.bound?.gemmSeconds ?? null, 4)} + memory ${f(m.bound?.memorySeconds ?? null, 4)} for ${f((m.cost.otherBytes + 2 * m.cost.ioBytes) / 1e9, 3)} GB); ` +
        `ratio ${f(m.overBound, 3)} [${metText(m.met)}] (load ${f(m.load)})`,
      `        by node: ${m.ops.map((o) => `${o.op} ${f(o.seconds, 4)}`).join(', ')}; first run after prepare ${f(m.firstRunSeconds, 3)} s`,
    );
  }
  if (r.linearity) {
    L.push(`(c) HC mix linearity from T=${r.linearity.base}: (time(T)/time(${r.linearity.base})) / (T/${r.linearity.base}) (${r.linearity.note})`);
    L.push(`    ${r.linearity.rows.map((x) => `T=${x.tokens}: ${f(x.seconds, 4)} s -> ${f(x.ratio, 3)}`).join('; ')}`);
  }
  L.push('(d) memory: peak / the tensors that must be live (goal <= 1.5)');
  for (const m of r.mix) L.push(`    HC mix T=${m.tokens}: ${memoryLine(m.memory, m.gemmPanelExtraBytes)}`);
  const p = r.prefill;
  if (p) {
    L.push(`    HC-only prefill: ${memoryLine(p.memory, p.gemmPanelExtraBytes)}`);
    L.push(`prefill: ${p.config} ${p.stack} stack, ${p.layers} layers, tp ${p.tp}, T=${p.tokens}, SP ${p.sp ? 'on' : `off (${p.spReason})`}, ${p.nodes} nodes; weights ${p.weights}`);
    L.push(
      `    prepare ${f(p.prepareSeconds, 2)} s; first run ${f(p.firstRunSeconds, 2)} s; run ${f(p.exact.seconds, 3)} s (median of ${p.exact.reps.length}: ${p.exact.reps.map((s) => f(s, 3)).join(' ')}), ${f(p.exact.gflops, 1)} GFLOP/s over ${f(p.cost.gemmFlops / 1e9, 1)} GFLOP in ${p.cost.gemms.reduce((a, g) => a + g.count, 0)} GEMMs; ` +
        `${f(p.tokens / p.exact.seconds, 1)} tokens/s (load ${f(p.load)})`,
    );
    L.push(
      `    (b) bound ${f(p.bound?.seconds ?? null, 3)} s (GEMMs ${f(p.bound?.gemmSeconds ?? null, 3)} + memory ${f(p.bound?.memorySeconds ?? null, 3)} for ${f((p.cost.otherBytes + 2 * p.cost.ioBytes) / 1e9, 3)} GB); ratio ${f(p.overBound, 3)} [${metText(p.met)}]`,
    );
    L.push(`    output sha256 ${p.outputSha256}; next token ${p.nextToken}`);
  }
  L.push('goals:');
  for (const g of r.goals) L.push(`    ${g.name}: ${f(g.value, 3)} (goal ${g.goal}) ${metText(g.met)}`);
  L.push('counted:');
  for (const [k, v] of Object.entries(r.counted)) L.push(`    ${k}: ${v}`);
  return `${L.join('\n')}\n`;
}
