// What `hcsp xcheck` holds at its peak, from the configuration alone, judged before anything
// is allocated (no token ids, RoPE tables or weights): every SPEC's graph is built as
// preparePrefill builds it (with its named values kept to the end), and the run holds
// besides its own graph what the comparison keeps: the first SPEC's named values while the
// others run, and their float64 values once the float64 evaluation ran. A checkpoint's
// per-channel FP8 linears are rewritten as preparePrefill rewrites them (keepFp8Weights), so
// they count as their FP8 bytes and F32 scales.
import {
  buildDecoderGraph,
  bytesPerElement,
  keepFp8Weights,
  modelWeightSpecs,
  numel,
  planForMode,
  RING_DEFAULT_CHANNELS,
  RING_DEFAULT_CHUNK_ELEMS,
  type Fp8WeightLookup,
  type Graph,
  type ModelConfig,
  type SubLayerBuilders,
  type ValueId,
  type WeightSource,
} from '@hcsp/core';
import { estimateGraphMemory, GARBAGE_FACTOR, type MemoryEstimate } from '../guards/memoryEstimate.ts';
import type { XcheckSpec } from './xcheckSpec.ts';

// The float64 evaluation holds each value at 8 bytes an element where the run holds a bf16
// value in 2 (and its working copy in 4): its activations and weight slices are counted
// this many times the run's.
const FLOAT64_FACTOR = 4;

export interface XcheckShape {
  config: ModelConfig;
  subLayers: SubLayerBuilders;
  tokens: number;
  tp: number;
  layers: [number, number];
  specs: readonly XcheckSpec[];
  exact: boolean;
  /** weights from a checkpoint (each rank reads its slice) instead of synthetic ones */
  checkpoint: boolean;
  /** the opened checkpoint, whose FP8 linears each SPEC's run keeps as FP8 (in the SPEC's fp8 format when it has one) */
  fp8Weights?: WeightSource & Fp8WeightLookup;
  env: Record<string, string | undefined>;
}

/** One stage of the comparison: what it is and its estimate. */
export interface XcheckStage {
  what: string;
  estimate: MemoryEstimate;
}

function namedIds(spec: XcheckSpec, x: XcheckShape): { graph: Graph; named: ValueId[] } {
  const plan = planForMode(x.config, x.tokens, x.tp, spec.sp, x.env, x.config.mtp, x.layers);
  const { graph, outputs } = buildDecoderGraph({
    config: x.config,
    plan: spec.quant ? { ...plan, quant: spec.quant } : plan,
    reduce: spec.reduce,
    ring: { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS },
    contract: spec.contract,
    subLayers: x.subLayers,
    dump: true,
    fp8: spec.fp8,
  });
  const run = x.fp8Weights ? keepFp8Weights(graph, x.fp8Weights, spec.fp8 ?? undefined).graph : graph;
  return { graph: run, named: [...Object.values(outputs.dumpValues), ...Object.values(outputs.rankValues).map((v) => v.id)] };
}

/** the total as estimateGraphMemory makes it */
function totalOf(e: MemoryEstimate): number {
  return e.sourceWeights + e.rankWeights + e.inputs + Math.max(e.weightScratch, GARBAGE_FACTOR * e.activationPeak) + e.runtime;
}

function plus(e: MemoryEstimate, bytes: number): MemoryEstimate {
  return { ...e, bytes: e.bytes + bytes };
}

/** Every stage's estimate: each SPEC's run and the float64 evaluation, with what each holds of the others. */
export function estimateXcheckMemory(x: XcheckShape): XcheckStage[] {
  const origin = x.checkpoint ? ({ kind: 'checkpoint' } as const) : ({ kind: 'synthetic', specs: modelWeightSpecs(x.config, x.subLayers) } as const);
  const stages: XcheckStage[] = [];
  let firstNamed = 0;
  let float64Named = 0;
  for (const [i, spec] of x.specs.entries()) {
    const { graph, named } = namedIds(spec, x);
    // the named values are read back at the end: alive from where they are made
    const estimate = estimateGraphMemory({ ...graph, outputs: [...new Set([...graph.outputs, ...named])] }, origin);
    if (i === 0) {
      const kept = [...new Set(named)];
      firstNamed = kept.reduce((s, id) => s + numel(graph.values[id].shape) * bytesPerElement(graph.values[id].dtype), 0);
      stages.push({ what: `xcheck ${spec.text}`, estimate });
      if (x.exact) {
        float64Named = kept.reduce((s, id) => s + numel(graph.values[id].shape) * 8, 0);
        // its activations (its named values among them) replace the run's; the run's named values stay
        const e = { ...estimate, rankWeights: FLOAT64_FACTOR * estimate.rankWeights, activationPeak: FLOAT64_FACTOR * estimate.activationPeak };
        stages.push({ what: `xcheck float64 evaluation of ${spec.text}`, estimate: { ...e, bytes: totalOf(e) + firstNamed } });
      }
      continue;
    }
    stages.push({
      what: `xcheck ${spec.text} (with ${x.specs[0].text}'s named values${x.exact ? ' and their float64 values' : ''} kept)`,
      estimate: plus(estimate, firstNamed + float64Named),
    });
  }
  return stages;
}
