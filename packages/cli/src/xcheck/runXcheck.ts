// `hcsp xcheck`'s part of the cross-check: every SPEC's prefill over one weight source (the
// same inputs and weights), the golden dump read and checked against the run. Running the
// SPECs, the float64 attribution and the comparison are core's (xcheck/xcheckRuns.ts), which
// the dev page's live xcheck calls too.
import {
  modelWeightSpecs,
  preparePrefill,
  shapeStr,
  SyntheticWeightSource,
  type ModelConfig,
  type PreparedPrefill,
  type SubLayerBuilders,
  type WeightSource,
} from '@hcsp/core';
import { runXcheckPlan, type AlignedTensor, type XcheckReport, type XcheckSide } from '@hcsp/core/xcheck';
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

// The runs compute on this thread: core's xcheck turns the event loop between nodes and tensor
// comparisons, and the weight source before each read (eventLoopTurn.ts), so that a signal
// ends it within a second.

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
    ...(spec.ties ? { ties: spec.ties } : {}),
    fp8: spec.fp8,
    ...(spec.quant ? { quant: spec.quant } : {}),
    layers: x.layers,
    weights,
    ids: x.ids,
    env: process.env,
    dump: true,
  });
}

/** one SPEC as a side of core's xcheck (xcheck/xcheckRuns.ts): its prefill, what the report says of it, and its backend */
function sideOf(spec: XcheckSpec, prepared: PreparedPrefill): XcheckSide {
  return {
    spec: spec.text,
    backend: spec.backend,
    options: {
      ...spec.backendOptions,
      sp: spec.sp,
      reduce: spec.reduce,
      contract: spec.contract,
      ...(spec.ties ? { ties: spec.ties } : {}),
      ...(spec.fp8 ? { fp8: spec.fp8, quant: prepared.plan.quant } : {}),
    },
    reduce: spec.reduce,
    prepared,
    open: () => createBackend(spec.backend, spec.backendOptions),
  };
}

/** Runs every SPEC (the first is the one compared against) and compares; the float64 evaluation of the first SPEC's graph attributes the differences. */
export async function runXcheck(x: XcheckInputs): Promise<XcheckReport> {
  // one weight source for every SPEC: the same weights, generated (synthetic) or read once
  const weights = turningWeights(x.weights ?? new SyntheticWeightSource(modelWeightSpecs(x.config, x.subLayers), x.seed));
  const base = prepare(x, x.specs[0], weights);
  const notCompared = x.golden ? checkGolden(x.golden, base) : [];
  // every SPEC's graph is built (and checked) before anything runs
  const sides = [sideOf(x.specs[0], base), ...x.specs.slice(1).map((spec) => sideOf(spec, prepare(x, spec, weights)))];
  return runXcheckPlan(
    {
      config: x.config,
      tokens: x.tokens,
      tp: x.tp,
      seed: x.seed,
      layers: x.layers,
      weights: x.weightsLabel,
      sides,
      exact: x.exact,
      golden: x.golden ? { file: x.golden.file, tensors: x.golden.tensors, notCompared } : null,
      maxUlp: x.maxUlp,
    },
    { turn: eventLoopTurn, progress: (label) => nodeProgress(label, { quiet: x.quiet }) },
  );
}
