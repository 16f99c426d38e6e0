// xcheck's orchestration, for every caller (the CLI's `hcsp xcheck`, the dev page's live
// xcheck): the same prefill (inputs and weights) run once per side, each side's named values
// read back, the float64 evaluation of the first side's graph, every other side (and a golden
// dump) compared against the first by name, and the report. The caller opens the backends
// (core knows none) and supplies its event-loop turn and progress display.
import { runOnce, type Backend } from '../backend/backend.ts';
import type { ModelConfig } from '../config/modelConfig.ts';
import type { PreparedPrefill } from '../model/prefill.ts';
import { bf16ToF32 } from '../numerics/bf16.ts';
import { ropeTablesExact } from '../reference/exact/attentionExact.ts';
import { evaluateExact } from '../reference/exact/evaluateExact.ts';
import type { ExactTensor } from '../reference/exact/exactTensor.ts';
import { selectionFlips } from './flipDiff.ts';
import { collectNamed, diffNamedSteps, namedValueIds, namedValues } from './namedValues.ts';
import { routingDifferences } from './routingDiff.ts';
import type { AlignedTensor } from './tensorDiff.ts';
import { pairVerdict } from './verdict.ts';
import { overGate, type XcheckPair, type XcheckReport, type XcheckRun, type XcheckTensor } from './xcheckReport.ts';

/** What a step's computation on the caller's thread needs from it. */
export interface XcheckHooks {
  /** called between nodes and between tensor comparisons; a promise it returns is awaited (RunOptions.turn) */
  turn?: () => Promise<void> | undefined;
  /** a progress display for one step ('xcheck cpu:sp=on', 'xcheck float64 evaluation'): its per-node callback, and stop when the step ends */
  progress?: (label: string) => { onNode: (done: number, total: number) => void; stop: () => void };
}

/** The float64 values of the named values, by name, with their rows' start. */
export type ExactNamed = Map<string, { tensor: ExactTensor; rowStart: number }>;

/** One side's run: its named values, its backend's description and the run's seconds. */
export interface NamedRun {
  named: Map<string, AlignedTensor>;
  device: string;
  seconds: number;
}

/** Runs the prefill (prepared with dump: true) on `backend`, keeping its named values, and reads them back. */
export async function runNamed(
  backend: Backend,
  prepared: PreparedPrefill,
  options: { onNode?: (done: number, total: number) => void; turn?: XcheckHooks['turn'] } = {},
): Promise<NamedRun> {
  const device = backend.describe();
  const result = await runOnce(backend, prepared.graph, prepared.feeds, prepared.weights, {
    keep: namedValueIds(prepared),
    onNode: options.onNode,
    turn: options.turn,
  });
  return { named: collectNamed(prepared, result.values), device, seconds: result.stats.seconds };
}

/** What the report says of a side besides its run: its SPEC, backend, options and reduction. */
export interface XcheckSideInfo {
  spec: string;
  backend: string;
  options: Record<string, string>;
  reduce: string;
}

/** A side's run as the report lists it (`plan`: the SP plan its prefill used). */
export function xcheckRun(side: XcheckSideInfo, plan: { sp: boolean; chunk: number }, device: string, seconds: number): XcheckRun {
  return { spec: side.spec, backend: side.backend, device, options: side.options, sp: plan.sp, chunk: plan.chunk, reduce: side.reduce, seconds };
}

/**
 * The float64 RoPE tables for the graph's bf16 cos/sin inputs: `rope_cos`, `rope_sin` (positions
 * 0..T-1) and the MTP draft layer's `mtp/rope_*` (positions 1..T: the target's + 1,
 * mtpDraftExtraInputs); the bf16 tables are a rounding of them. Each is checked to be within
 * one bf16 rounding of its feed.
 */
function exactRopeFeeds(config: ModelConfig, prepared: PreparedPrefill): Map<string, ExactTensor> {
  const out = new Map<string, ExactTensor>();
  for (const id of prepared.graph.inputs) {
    const m = /rope_(cos|sin)$/.exec(id);
    if (!m) continue;
    const feed = prepared.feeds.get(id)!;
    const first = id.startsWith('mtp/') ? 1 : 0;
    const [rows, half] = feed.shape;
    const full = ropeTablesExact(config, rows + first)[m[1] as 'cos' | 'sin'];
    const table: ExactTensor = { dtype: feed.dtype, shape: [rows, half], data: full.data.slice(first * half, (first + rows) * half) };
    const bits = feed.data as Uint16Array;
    for (let i = 0; i < bits.length; i++) {
      const e = table.data[i];
      // a bf16 rounding moves a value in [-1, 1] by at most 2^-9 (half an ulp of 1)
      if (Math.abs(bf16ToF32(bits[i]) - e) > 2 ** -9)
        throw new Error(`xcheck: the float64 RoPE table of '${id}' is not the feed's (element ${i}: ${bf16ToF32(bits[i])} against ${e})`);
    }
    out.set(id, table);
  }
  return out;
}

/** The float64 evaluation of the prefill's graph (its RoPE tables exact too), its named values by name. */
export async function exactNamed(
  config: ModelConfig,
  prepared: PreparedPrefill,
  options: { onNode?: (done: number, total: number) => void; turn?: XcheckHooks['turn'] } = {},
): Promise<ExactNamed> {
  const values = await evaluateExact(prepared.graph, prepared.feeds, prepared.weights, {
    keep: namedValueIds(prepared),
    onNode: options.onNode,
    turn: options.turn,
    exactFeeds: exactRopeFeeds(config, prepared),
  });
  return new Map(namedValues(prepared).map((v) => [v.name, { tensor: values.get(v.id)!, rowStart: v.rowStart }]));
}

/** diffNamed (namedValues.ts), turning the caller's event loop between tensors. */
export async function compareNamed(
  a: ReadonlyMap<string, AlignedTensor>,
  b: ReadonlyMap<string, AlignedTensor>,
  exitLayer: number,
  exact: ExactNamed | undefined,
  turn?: XcheckHooks['turn'],
): Promise<{ tensors: XcheckTensor[]; onlyIn: { a: string[]; b: string[] } }> {
  const steps = diffNamedSteps(a, b, exitLayer, exact);
  const tensors: XcheckTensor[] = [];
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return { tensors, onlyIn: step.value };
    tensors.push(step.value);
    await turn?.();
  }
}

/** A pair of runs compared: its tensors, routing and QSA selection flips, and the verdict on them. */
export function xcheckPair(
  a: string,
  b: string,
  tensors: XcheckTensor[],
  na: ReadonlyMap<string, AlignedTensor>,
  nb: ReadonlyMap<string, AlignedTensor>,
): XcheckPair {
  const pair: XcheckPair = {
    a,
    b,
    tensors,
    differing: tensors.reduce((acc, t) => acc + t.differing, 0),
    maxUlp: tensors.reduce((acc, t) => Math.max(acc, t.maxUlp ?? 0), 0),
    // the MTP head's router at the layer the report places its values (the exit layer)
    routing: routingDifferences(na, nb, tensors.find((t) => t.name === 'mtp.mlp.topk_ids')?.layer),
    selection: selectionFlips(na, nb),
  };
  pair.verdict = pairVerdict(pair);
  return pair;
}

/** One side: its prefill (prepared with dump: true) and how to open its backend. */
export interface XcheckSide extends XcheckSideInfo {
  prepared: PreparedPrefill;
  /** the side's backend, opened when its run starts and disposed after it */
  open: () => Promise<Backend>;
}

/** A whole xcheck: the sides (the first is the one compared against) and what the report records. */
export interface XcheckPlan {
  config: ModelConfig;
  tokens: number;
  tp: number;
  seed: number;
  layers: [number, number];
  /** how the report names the weights (a checkpoint's path, 'synthetic') */
  weights: string;
  sides: XcheckSide[];
  /** run the float64 evaluation of the first side's graph (attribution) */
  exact: boolean;
  /** a golden dump compared against the first side: its tensors, and the run's names it lacks */
  golden: { file: string; tensors: ReadonlyMap<string, AlignedTensor>; notCompared: string[] } | null;
  /** the gate on row-scaled ulps; null: none */
  maxUlp: number | null;
}

async function runSide(side: XcheckSide, hooks: XcheckHooks): Promise<{ named: Map<string, AlignedTensor>; run: XcheckRun }> {
  const backend = await side.open();
  const progress = hooks.progress?.(`xcheck ${side.spec}`);
  try {
    const r = await runNamed(backend, side.prepared, { onNode: progress?.onNode, turn: hooks.turn });
    return { named: r.named, run: xcheckRun(side, side.prepared.plan, r.device, r.seconds) };
  } finally {
    progress?.stop();
    await backend.dispose();
  }
}

/**
 * Runs every side and compares each other side (then the golden dump) against the first; the
 * float64 evaluation of the first side's graph attributes the differences. One other side's
 * values are held at a time.
 */
export async function runXcheckPlan(plan: XcheckPlan, hooks: XcheckHooks = {}): Promise<XcheckReport> {
  const exitLayer = plan.layers[1];
  const [base, ...others] = plan.sides;
  const first = await runSide(base, hooks);
  let exact: ExactNamed | undefined;
  if (plan.exact) {
    const progress = hooks.progress?.('xcheck float64 evaluation');
    try {
      exact = await exactNamed(plan.config, base.prepared, { onNode: progress?.onNode, turn: hooks.turn });
    } finally {
      progress?.stop();
    }
  }
  const runs: XcheckRun[] = [first.run];
  const pairs: XcheckPair[] = [];
  for (const side of others) {
    const r = await runSide(side, hooks);
    runs.push(r.run);
    pairs.push(xcheckPair(side.spec, base.spec, (await compareNamed(r.named, first.named, exitLayer, exact, hooks.turn)).tensors, r.named, first.named));
  }
  let golden: XcheckReport['golden'] = null;
  if (plan.golden) {
    const d = await compareNamed(plan.golden.tensors, first.named, exitLayer, exact, hooks.turn);
    pairs.push(xcheckPair(`golden:${plan.golden.file}`, base.spec, d.tensors, plan.golden.tensors, first.named));
    golden = { file: plan.golden.file, unused: d.onlyIn.a, notCompared: plan.golden.notCompared };
  }
  return {
    ok: plan.maxUlp === null || overGate(pairs, plan.maxUlp).length === 0,
    config: plan.config.name,
    tokens: plan.tokens,
    tp: plan.tp,
    seed: plan.seed,
    layers: plan.layers,
    weights: plan.weights,
    maxUlpGate: plan.maxUlp,
    exact: plan.exact,
    runs,
    pairs,
    golden,
  };
}
