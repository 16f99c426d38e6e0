// `hcsp bench`, the host device's part: the native backend (rocm, device host) on the
// full-dimension HC mix, its two GEMMs alone, and an HC-only Flash-Next prefill at tp 4, each
// set against what this machine can do, measured in the same run: numpy's fp32 GEMM (OpenBLAS)
// at the same shapes, and the copy bandwidth of a large buffer. It prints four ratios with
// their goals: exact GEMM / the BLAS ceiling, the mix's time / its roofline bound, the mix's
// time linearity in T, and the peak memory / the tensors that must be live.
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import type { RocmBackend } from '@hcsp/backend-rocm';
import { createBackend } from '@hcsp/backends';
import {
  FLASH_NEXT,
  modelWeightSpecs,
  numel,
  preparePrefill,
  resolveWeight,
  Rng,
  runOnce,
  STAND_IN_SUB_LAYERS,
  SyntheticWeightSource,
  formatBytes,
  getOpDef,
  matrixWeightPort,
  type Graph,
  type ModelConfig,
  type PreparedGraph,
  type RunResult,
  type Tensor,
  type ValueId,
} from '@hcsp/core';
import { measureCeilings, roofline, type Ceilings } from './ceilings.ts';
import { timeDeviceKernel } from './deviceKernel.ts';
import { firstDifference } from './firstDifference.ts';
import { bytesOf, gemmPanelExtraBytes, graphCost, liveBytes, shapeKey, type GemmShape, type GraphCost } from './graphCost.ts';
import { hcMixBenchGraph, hcMixWeightSpecs, linearBenchGraph } from './graphs.ts';
import { NO_HOOKS, type BenchHooks } from './hooks.ts';
import { GOALS } from './hostGoals.ts';
import { measureMemory, type MemoryMeasure } from './memoryMeasure.ts';
import { TILED_WEIGHT_POOL, TiledWeightSource } from './tiledWeights.ts';
import { median, timed, timing, type Timing } from './timing.ts';

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
  /** --max-memory as given: read by the caller's memory guard (BenchHooks.memory), not here */
  maxMemory?: string;
}

// ---------------------------------------------------------------------------------------
// The report.

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

export interface MixRow extends GraphRunMeasures {
  tokens: number;
  gflop: number;
  cost: GraphCost;
  exact: Timing;
  /**
   * where the time goes: each node's median seconds (from the previous node's end; the first
   * includes uploading the streams), then 'read back' (outputs downloaded)
   */
  ops: { op: string; seconds: number }[];
  load: number;
}

/** what a timed graph run reports beside its timing: its roofline bound, memory and first run */
export interface GraphRunMeasures {
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
}

export interface LinearityRow {
  tokens: number;
  seconds: number;
  /** (c): (time(T) / time(T0)) / (T / T0) */
  ratio: number;
}

export interface PrefillRow extends GraphRunMeasures {
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

function sha256(t: Tensor): string {
  return createHash('sha256')
    .update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength))
    .digest('hex');
}

const ratioMet = (v: number | null, goal: number, atLeast: boolean): boolean | null => (v === null ? null : atLeast ? v >= goal : v <= goal);

export interface HostBenchDeps {
  /** the model (default flash-next); tests use a small one */
  config?: ModelConfig;
  /** progress lines */
  say?: (line: string) => void;
  /** progress bars, interruption, the memory guard (default: none) */
  hooks?: BenchHooks;
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
  const hooks = deps.hooks ?? NO_HOOKS;
  const loadStart = loadavg();
  const mixTokens = [...new Set([...opts.tokens, ...opts.linearity])].sort((a, b) => a - b);
  const prefixSpecs = hcMixWeightSpecs(config);
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
  hooks.memory.checkLive(`bench on the host device (${worst.what})`, worst.live, worst.extra);

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
    const checkFeeds = new Map<ValueId, Tensor>([
      ['streams', randomBf16([opts.exactTokens, config.hc.count * config.hiddenSize], opts.seed + opts.exactTokens)],
    ]);
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
      const progress = hooks.progress(`host HC mix T=${T}`, opts.quiet);
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
      mix.push({
        tokens: T,
        gflop: cost.gemmFlops / 1e9,
        cost,
        exact,
        ops,
        bound,
        overBound,
        met: ratioMet(overBound, GOALS.mixOverBound, false),
        memory,
        gemmPanelExtraBytes: panelExtra(graph),
        firstRunSeconds,
        load: loadavg()[0],
      });
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
        const w = await resolveWeight(mixWeights, graph.values[graph.nodes[0].inputs[matrixWeightPort(getOpDef('linear'))]!].weight!);
        const kernel = (mode: 'exact' | 'blas'): Promise<number[]> => timeDeviceKernel({ addon, gpu: null, mode }, 'linear', [x, w], {}, opts.reps);
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
        const progress = hooks.progress(`${label} first run`, opts.quiet);
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
          const progress = hooks.progress(`${label}`, opts.quiet);
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
        weights: `synthetic, tiled: each normal bf16 tensor from a ${TILED_WEIGHT_POOL}-value seeded N(0, std) pool at a name-hashed offset (seed ${opts.seed}); not core's SyntheticWeightSource values`,
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
    for (const g of gemms)
      goals.push({ name: `(a) exact GEMM ${g.name} T=${g.tokens} / numpy fp32`, goal: `>= ${GOALS.gemmOverCeiling}`, value: g.exactOverCeiling, met: g.met });
    for (const m of mix) goals.push({ name: `(b) HC mix T=${m.tokens} / roofline bound`, goal: `<= ${GOALS.mixOverBound}`, value: m.overBound, met: m.met });
    if (prefillRow)
      goals.push({
        name: `(b) HC-only prefill T=${prefillRow.tokens} / roofline bound`,
        goal: `<= ${GOALS.mixOverBound}`,
        value: prefillRow.overBound,
        met: prefillRow.met,
      });
    for (const m of mix) {
      goals.push({
        name: `(d) HC mix T=${m.tokens} addon peak / must-live`,
        goal: `<= ${GOALS.memoryOverLive}`,
        value: m.memory.addonOverLive,
        met: m.memory.addonMet,
      });
      goals.push({
        name: `(d) HC mix T=${m.tokens} RSS rise / must-live`,
        goal: `<= ${GOALS.memoryOverLive}`,
        value: m.memory.rssDeltaOverLive,
        met: m.memory.rssMet,
      });
    }
    if (prefillRow) {
      goals.push({
        name: `(d) HC-only prefill addon peak / must-live`,
        goal: `<= ${GOALS.memoryOverLive}`,
        value: prefillRow.memory.addonOverLive,
        met: prefillRow.memory.addonMet,
      });
      goals.push({
        name: `(d) HC-only prefill RSS rise / must-live`,
        goal: `<= ${GOALS.memoryOverLive}`,
        value: prefillRow.memory.rssDeltaOverLive,
        met: prefillRow.memory.rssMet,
      });
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
