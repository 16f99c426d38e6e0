import type { ModelConfig } from '../config/modelConfig.ts';
import { hcPrefix, hcWeightSpecs } from './hcWeights.ts';
import type { SubLayerBuilders } from './subLayerBuilders.ts';
import type { WeightSpec } from './weightSpec.ts';

/** Every checkpoint tensor a decoder stack with these sub-layers reads. */
export function modelWeightSpecs(config: ModelConfig, subLayers: SubLayerBuilders): WeightSpec[] {
  const specs: WeightSpec[] = [
    // std 1: the embedding rows enter the first combine-norm at RMS ~1.
    { name: 'model.embed_tokens.weight', shape: [config.vocabSize, config.hiddenSize], dtype: 'bf16', init: { kind: 'normal', std: 1 } },
  ];
  for (let layer = 0; layer < config.numLayers; layer++) {
    specs.push(...hcWeightSpecs(config, hcPrefix(layer, 'attn'), true));
    specs.push(...hcWeightSpecs(config, hcPrefix(layer, 'mlp'), true));
    specs.push(...subLayers.weightSpecs(config, layer));
  }
  specs.push(...hcWeightSpecs(config, hcPrefix('mixer'), false));
  return specs;
}
