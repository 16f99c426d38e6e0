// The suite's cases: the HC mix and combine at each T, a decoder layer, a prefill at tp 4;
// each builds its graph, weights, inputs and counts when it is run.
import {
  layerKind,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  numel,
  preparePrefill,
  SyntheticWeightSource,
  type Graph,
  type ModelConfig,
  type Tensor,
  type ValueId,
  type WeightSource,
  type WeightSpec,
} from '@hcsp/core';
import { matrixFlops, minimumBytes } from './graphCost.ts';
import { hcCombineBenchGraph, hcMixBenchGraph, hcMixWeightSpecs } from './graphs.ts';
import type { SuiteOptions } from './suiteOptions.ts';
import { tiledNormal } from './tiledWeights.ts';

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

const bf16 = (shape: number[], seed: number): Tensor => ({ dtype: 'bf16', shape, data: tiledNormal(numel(shape), seed) });

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
        const specs = hcMixWeightSpecs(hc);
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
  const p = preparePrefill({
    config,
    tokens,
    tp,
    sp,
    reduce: 'ring',
    seed,
    subLayers: MODEL_SUB_LAYERS,
    env: process.env,
    ...(layers ? { layers, mtp: false } : {}),
  });
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
