// `hcsp xcheck`: the same prefill (inputs and weights) run once per SPEC, every named tensor
// compared against the first SPEC's run, and against the float64 evaluation of the first
// SPEC's graph, so that each difference is attributed to the side that moved away from the
// exact value; optionally against a golden dump another engine wrote.
import {
  bf16ToF32,
  collectNamed,
  diffNamedSteps,
  evaluateExact,
  namedValueIds,
  namedValues,
  overGate,
  modelWeightSpecs,
  pairVerdict,
  preparePrefill,
  ropeTablesExact,
  routingDifferences,
  runOnce,
  selectionFlips,
  shapeStr,
  SyntheticWeightSource,
  type AlignedTensor,
  type ExactTensor,
  type ModelConfig,
  type PreparedPrefill,
  type SubLayerBuilders,
  type WeightSource,
  type XcheckPair,
  type XcheckReport,
  type XcheckRun,
  type XcheckTensor,
} from '@hcsp/core';
import { openSafetensorsFile } from '@hcsp/core/node';
import { createBackend } from '@hcsp/backends';
import { eventLoopTurn } from '../eventLoopTurn.ts';
import { nodeProgress } from '../progress.ts';
import type { XcheckSpec } from './xcheckSpec.ts';

export interface XcheckInputs {
  config: ModelConfig;
  subLayers: SubLayerBuilders;
  tokens: number;
  tp: number;
  seed: number;
  layers: [number, number];
  weights: WeightSource | undefined;
  weightsLabel: string;
  ids: Int32Array | undefined;
  specs: XcheckSpec[];
  exact: boolean;
  maxUlp: number | null;
  golden: GoldenDump | null;
  quiet: boolean;
}

/** A golden dump read whole: its tensors by name (input_ids as i32). */
export interface GoldenDump {
  file: string;
  tensors: Map<string, AlignedTensor>;
  ids: Int32Array;
}

/** Reads a golden dump (README "Golden dumps"): every tensor, int64 ids narrowed to i32 (checked). */
export function readGoldenDump(file: string): GoldenDump {
  const f = openSafetensorsFile(file);
  try {
    if (!f.has('input_ids')) throw new Error(`--golden ${file}: it has no input_ids tensor (a golden dump names the ids it was run on)`);
    const tensors = new Map<string, AlignedTensor>();
    for (const name of f.names()) {
      const e = f.entry(name);
      const tensor = e.dtype === 'I64' ? f.readInt64AsI32(name) : f.read(name);
      tensors.set(name, { tensor, rowStart: 0 });
    }
    const ids = tensors.get('input_ids')!.tensor;
    if (ids.shape.length !== 1) throw new Error(`--golden ${file}: input_ids has shape ${shapeStr(ids.shape)}, expected [T]`);
    tensors.delete('input_ids');
    return { file, tensors, ids: ids.data as Int32Array };
  } finally {
    f.close();
  }
}

/**
 * The run's golden-dump names (all T rows) the file lacks: not compared, listed in the report
 * (an HF dump has no MTP head, for one). A tensor both have must have the run's shape and dtype.
 */
function checkGolden(golden: GoldenDump, prepared: PreparedPrefill): string[] {
  const notCompared: string[] = [];
  for (const [name, id] of Object.entries(prepared.outputs.dumpValues)) {
    const g = golden.tensors.get(name);
    const v = prepared.graph.values[id];
    if (!g) {
      notCompared.push(name);
      continue;
    }
    if (shapeStr(g.tensor.shape) !== shapeStr(v.shape))
      throw new Error(`--golden ${golden.file}: tensor '${name}' has shape ${shapeStr(g.tensor.shape)}, the run's is ${shapeStr(v.shape)}`);
    if (g.tensor.dtype !== v.dtype) throw new Error(`--golden ${golden.file}: tensor '${name}' is ${g.tensor.dtype}, the run's is ${v.dtype}`);
  }
  return notCompared;
}

// Everything below computes on this thread: it turns the event loop between nodes, weight
// reads and tensor comparisons (eventLoopTurn.ts), so that a signal ends it within a second.

/** `source`, turning the event loop before each read (a synthetic tensor is generated on this thread) */
function turningWeights(source: WeightSource): WeightSource {
  return {
    has: (name) => source.has(name),
    info: (name) => source.info(name),
    read: async (name, slice) => {
      await eventLoopTurn();
      return source.read(name, slice);
    },
  };
}

/** diffNamed, turning the event loop between tensors */
async function compare(
  a: ReadonlyMap<string, AlignedTensor>,
  b: ReadonlyMap<string, AlignedTensor>,
  exitLayer: number,
  exact: ReadonlyMap<string, { tensor: ExactTensor; rowStart: number }> | undefined,
): Promise<{ tensors: XcheckTensor[]; onlyIn: { a: string[]; b: string[] } }> {
  const steps = diffNamedSteps(a, b, exitLayer, exact);
  const tensors: XcheckTensor[] = [];
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return { tensors, onlyIn: step.value };
    tensors.push(step.value);
    await eventLoopTurn();
  }
}

function prepare(x: XcheckInputs, spec: XcheckSpec, weights: WeightSource): PreparedPrefill {
  return preparePrefill({
    config: x.config,
    tokens: x.tokens,
    tp: x.tp,
    sp: spec.sp,
    reduce: spec.reduce,
    seed: x.seed,
    subLayers: x.subLayers,
    contract: spec.contract,
    fp8: spec.fp8,
    ...(spec.quant ? { quant: spec.quant } : {}),
    layers: x.layers,
    weights,
    ids: x.ids,
    env: process.env,
    dump: true,
  });
}

/** one SPEC's run: its named values and what the report says of it */
async function runSpec(x: XcheckInputs, spec: XcheckSpec, prepared: PreparedPrefill): Promise<{ named: Map<string, AlignedTensor>; run: XcheckRun }> {
  const backend = await createBackend(spec.backend, spec.backendOptions);
  const progress = nodeProgress(`xcheck ${spec.text}`, { quiet: x.quiet });
  try {
    const device = backend.describe();
    const result = await runOnce(backend, prepared.graph, prepared.feeds, prepared.weights, {
      keep: namedValueIds(prepared),
      onNode: progress.onNode,
      turn: eventLoopTurn,
    });
    const named = collectNamed(prepared, result.values);
    const { plan } = prepared;
    return {
      named,
      run: {
        spec: spec.text,
        backend: spec.backend,
        device,
        options: {
          ...spec.backendOptions,
          sp: spec.sp,
          reduce: spec.reduce,
          contract: spec.contract,
          ...(spec.fp8 ? { fp8: spec.fp8, quant: plan.quant } : {}),
        },
        sp: plan.sp,
        chunk: plan.chunk,
        reduce: spec.reduce,
        seconds: result.stats.seconds,
      },
    };
  } finally {
    progress.stop();
    await backend.dispose();
  }
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

/** A pair of runs compared: its tensors, routing and QSA selection flips, and the verdict on them. */
function pairOf(
  a: string,
  b: string,
  tensors: XcheckPair['tensors'],
  na: ReadonlyMap<string, AlignedTensor>,
  nb: ReadonlyMap<string, AlignedTensor>,
): XcheckPair {
  const pair: XcheckPair = {
    a,
    b,
    tensors,
    differing: tensors.reduce((acc, t) => acc + t.differing, 0),
    maxUlp: tensors.reduce((acc, t) => Math.max(acc, t.maxUlp ?? 0), 0),
    routing: routingDifferences(na, nb),
    selection: selectionFlips(na, nb),
  };
  pair.verdict = pairVerdict(pair);
  return pair;
}

/** Runs every SPEC (the first is the one compared against) and compares; the float64 evaluation of the first SPEC's graph attributes the differences. */
export async function runXcheck(x: XcheckInputs): Promise<XcheckReport> {
  const exitLayer = x.layers[1];
  // one weight source for every SPEC: the same weights, generated (synthetic) or read once
  const weights = turningWeights(x.weights ?? new SyntheticWeightSource(modelWeightSpecs(x.config, x.subLayers), x.seed));
  const base = prepare(x, x.specs[0], weights);
  const notCompared = x.golden ? checkGolden(x.golden, base) : [];
  // every SPEC's graph is built (and checked) before anything runs
  const others = x.specs.slice(1).map((spec) => ({ spec, prepared: prepare(x, spec, weights) }));
  const first = await runSpec(x, x.specs[0], base);
  let exact: Map<string, { tensor: ExactTensor; rowStart: number }> | undefined;
  if (x.exact) {
    const progress = nodeProgress('xcheck float64 evaluation', { quiet: x.quiet });
    try {
      const values = await evaluateExact(base.graph, base.feeds, base.weights, {
        keep: namedValueIds(base),
        onNode: progress.onNode,
        turn: eventLoopTurn,
        exactFeeds: exactRopeFeeds(x.config, base),
      });
      exact = new Map(namedValues(base).map((v) => [v.name, { tensor: values.get(v.id)!, rowStart: v.rowStart }]));
    } finally {
      progress.stop();
    }
  }
  const runs: XcheckRun[] = [first.run];
  const pairs: XcheckPair[] = [];
  for (const { spec, prepared } of others) {
    const r = await runSpec(x, spec, prepared);
    runs.push(r.run);
    pairs.push(pairOf(spec.text, x.specs[0].text, (await compare(r.named, first.named, exitLayer, exact)).tensors, r.named, first.named));
  }
  let golden: XcheckReport['golden'] = null;
  if (x.golden) {
    const d = await compare(x.golden.tensors, first.named, exitLayer, exact);
    pairs.push(pairOf(`golden:${x.golden.file}`, x.specs[0].text, d.tensors, x.golden.tensors, first.named));
    golden = { file: x.golden.file, unused: d.onlyIn.a, notCompared };
  }
  const ok = x.maxUlp === null || overGate(pairs, x.maxUlp).length === 0;
  return {
    ok,
    config: x.config.name,
    tokens: x.tokens,
    tp: x.tp,
    seed: x.seed,
    layers: x.layers,
    weights: x.weightsLabel,
    maxUlpGate: x.maxUlp,
    exact: x.exact,
    runs,
    pairs,
    golden,
  };
}
