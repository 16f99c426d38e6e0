import { layerKind, type ModelConfig } from '../config/modelConfig.ts';
import type { SubLayerBuilders } from '../model/subLayerBuilders.ts';
import type { WeightSpec } from '../model/weightSpec.ts';
import { buildAttention } from './attention/attentionGraph.ts';
import { attentionWeightSpecs } from './attention/attentionWeights.ts';
import { ropeTables } from './attention/ropeTables.ts';
import { buildGdn } from './gdn/gdnGraph.ts';
import { gdnWeightSpecs } from './gdn/gdnWeights.ts';
import { buildMoe } from './moe/moeGraph.ts';
import { moeWeightSpecs } from './moe/moeWeights.ts';
import { buildPle } from './ple/pleGraph.ts';
import { pleWeightSpecs } from './ple/pleWeights.ts';

/**
 * The Flash-Next sub-layers: full attention on every 4th layer and GatedDeltaNet on the
 * others, then MoE, with the PLE on its layers. RoPE tables are graph inputs computed on
 * the host once (ropeTables.ts says why), shared by every attention layer and rank.
 */
export const MODEL_SUB_LAYERS: SubLayerBuilders = {
  name: 'qwen4-exp decoder (attention / GatedDeltaNet, MoE, PLE)',
  declareInputs(b, config: ModelConfig, tokens: number) {
    const half = config.attention.ropeDims / 2;
    const ids = { cos: b.input('rope_cos', [tokens, half], 'f32'), sin: b.input('rope_sin', [tokens, half], 'f32') };
    return {
      ids,
      feeds: () => {
        const t = ropeTables(config, tokens);
        return new Map([
          [ids.cos, t.cos],
          [ids.sin, t.sin],
        ]);
      },
    };
  },
  attn: (b, ctx, x, extra) =>
    layerKind(ctx.config, ctx.layer) === 'attention' ? buildAttention(b, ctx, x, { cos: extra.ids.cos, sin: extra.ids.sin }) : buildGdn(b, ctx, x),
  mlp: (b, ctx, x) => buildMoe(b, ctx, x),
  ple: (b, ctx, streams, tokenIds) => buildPle(b, ctx, streams, tokenIds),
  weightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
    const specs = layerKind(config, layer) === 'attention' ? attentionWeightSpecs(config, layer) : gdnWeightSpecs(config, layer);
    specs.push(...moeWeightSpecs(config, layer));
    if (config.ple.layerIds.includes(layer)) specs.push(...pleWeightSpecs(config, layer));
    return specs;
  },
};
