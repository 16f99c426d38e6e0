import type { ModelConfig } from '../config/modelConfig.ts';
import type { WeightSpec } from './weightSpec.ts';

/** Checkpoint prefix of an HC module: a layer's attn/mlp hyper-connection, or the final mixer. */
export function hcPrefix(layer: number | 'mixer', sub: 'attn' | 'mlp' = 'attn'): string {
  return layer === 'mixer' ? 'model.hyper_connection_mixer' : `model.layers.${layer}.${sub}_hyper_connection`;
}

/**
 * The HC module's tensors (model.md). Synthetic scales keep the mix in its working range:
 * normed rows have RMS 1, so down std 2/sqrt(nH) gives d ~ N(0, 4) and d/n ~ N(0, 0.25);
 * up std 3/sqrt(r) puts the sigmoid gates' logits at RMS ~1; inject std 1/sqrt(nH) gives
 * inject logits ~ N(0, 1), i.e. inject scales 2 sigmoid(raw/4) around 1.
 */
export function hcWeightSpecs(config: ModelConfig, prefix: string, withInject: boolean): WeightSpec[] {
  const n = config.hc.count;
  const r = config.hc.lowRank;
  const width = n * config.hiddenSize;
  const specs: WeightSpec[] = [
    { name: `${prefix}.hc_norm.weight`, shape: [width], dtype: 'bf16', init: { kind: 'normal', std: 0.02 } },
    { name: `${prefix}.input_mix_weight_down.weight`, shape: [r, width], dtype: 'bf16', init: { kind: 'normal', std: 2 / Math.sqrt(width) } },
    { name: `${prefix}.input_mix_weight_up.weight`, shape: [width, r], dtype: 'bf16', init: { kind: 'normal', std: 3 / Math.sqrt(r) } },
  ];
  if (withInject) {
    specs.push({ name: `${prefix}.block_inject_weight.weight`, shape: [n, width], dtype: 'bf16', init: { kind: 'normal', std: 1 / Math.sqrt(width) } });
  }
  return specs;
}
