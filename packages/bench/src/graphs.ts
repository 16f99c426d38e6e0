// The benchmarks' graphs: the full HC mix of layer 0's attention step, the unfused HC combine,
// and each of the mix's two GEMMs alone, all at tp 1 over T rows.
import { buildHcCombine, buildHcMix, GraphBuilder, hcPrefix, hcWeightSpecs, type Graph, type ModelConfig, type WeightRef, type WeightSpec } from '@hcsp/core';

/** the weight prefix of layer 0's attention HC, whose mix the benchmarks run */
export const HC_MIX_PREFIX = hcPrefix(0, 'attn');

/** The weights the HC mix graph reads (with inject). */
export function hcMixWeightSpecs(config: ModelConfig): WeightSpec[] {
  return hcWeightSpecs(config, HC_MIX_PREFIX, true);
}

/** tp-1 graph: streams [T, nH] -> combine-norm + mix of layer 0's attention HC (with inject). */
export function hcMixBenchGraph(config: ModelConfig, tokens: number): Graph {
  const width = config.hc.count * config.hiddenSize;
  const b = new GraphBuilder(1, { bench: 'hc mix', config: config.name, tokens });
  const streams = b.input('streams', [tokens, width], 'bf16');
  const mix = buildHcMix(b, { config, rank: 0, rows: tokens, prefix: HC_MIX_PREFIX, scope: 'L0.attn_hc', layer: 0, contract: 'atom' }, streams, null, true);
  b.markOutput(mix.x);
  b.markOutput(mix.streams);
  b.markOutput(mix.raw!);
  return b.build();
}

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

/** One-node graph: x [T, K] (input) times the mix's first (W_cat) or second (up) weight. */
export function linearBenchGraph(config: ModelConfig, tokens: number, which: 0 | 1): Graph {
  const prefix = HC_MIX_PREFIX;
  const n = config.hc.count;
  const width = n * config.hiddenSize;
  const r = config.hc.lowRank;
  const b = new GraphBuilder(1, { bench: 'hc mix gemm', which, config: config.name, tokens });
  const ref: WeightRef =
    which === 0
      ? { name: `${prefix}.W_cat`, concat: [`${prefix}.input_mix_weight_down.weight`, `${prefix}.block_inject_weight.weight`] }
      : { name: `${prefix}.input_mix_weight_up.weight` };
  const [K, O] = which === 0 ? [width, r + n] : [r, width];
  const x = b.input('x', [tokens, K], 'bf16');
  const w = b.weight(ref, [O, K]);
  const y = b.value('y', [tokens, O], 'bf16', 0);
  b.node({ op: 'linear', rank: 0, layer: 0, scope: which === 0 ? 'gemm.W_cat' : 'gemm.up', inputs: [x, w], outputs: [y], attrs: {} });
  b.markOutput(y);
  return b.build();
}
