import type { ModelConfig } from '../config/modelConfig.ts';
import { mtpDraftLayerWeightSpecs } from '../layers/mtp/mtpDraftLayer.ts';
import { lmHeadWeightSpec, mtpHeadWeightSpecs } from '../layers/mtp/mtpWeights.ts';
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
  specs.push(lmHeadWeightSpec(config));
  // the MTP head's own tensors and its draft layer's sub-layers (embed_tokens and lm_head are shared)
  if (config.mtp) specs.push(...mtpHeadWeightSpecs(config), ...mtpDraftLayerWeightSpecs(config, subLayers));
  return specs;
}
