import { layerKind, type ModelConfig } from '../config/modelConfig.ts';
import type { SubLayerBuilders } from '../model/subLayerBuilders.ts';
import type { WeightSpec } from '../model/weightSpec.ts';
import { buildAttention, buildAttentionRanks } from './attention/attentionGraph.ts';
import { attentionWeightSpecs } from './attention/attentionWeights.ts';
import { ropeTablesBf16 } from './attention/ropeTables.ts';
import { buildGdn } from './gdn/gdnGraph.ts';
import { gdnWeightSpecs } from './gdn/gdnWeights.ts';
import { buildMoe } from './moe/moeGraph.ts';
import { moeWeightSpecs } from './moe/moeWeights.ts';
import { buildPle } from './ple/pleGraph.ts';
import { pleWeightSpecs } from './ple/pleWeights.ts';

/**
 * The Flash-Next sub-layers: full attention on every 4th layer and GatedDeltaNet on the
 * others, then MoE, with the PLE on its layers. The bf16 RoPE tables are graph inputs
 * computed on the host once (ropeTables.ts says why), shared by every attention layer, its
 * QSA indexer and every rank.
 */
export const MODEL_SUB_LAYERS: SubLayerBuilders = {
  name: 'qwen4-exp decoder (attention / GatedDeltaNet, MoE, PLE)',
  declareInputs(b, config: ModelConfig, tokens: number) {
    const half = config.attention.ropeDims / 2;
    const ids = { cos: b.input('rope_cos', [tokens, half], 'bf16'), sin: b.input('rope_sin', [tokens, half], 'bf16') };
    return {
      ids,
      feeds: () => {
        const t = ropeTablesBf16(config, tokens);
        return new Map([
          [ids.cos, t.cos],
          [ids.sin, t.sin],
        ]);
      },
    };
  },
  attn: (b, ctx, x, extra) =>
    layerKind(ctx.config, ctx.layer) === 'attention' ? buildAttention(b, ctx, x, { cos: extra.ids.cos, sin: extra.ids.sin }) : buildGdn(b, ctx, x),
  attnRanks: (b, ctxs, xs, extra) =>
    layerKind(ctxs[0].config, ctxs[0].layer) === 'attention'
      ? buildAttentionRanks(b, ctxs, xs, { cos: extra.ids.cos, sin: extra.ids.sin })
      : ctxs.map((ctx, r) => buildGdn(b, ctx, xs[r])),
  mlp: (b, ctx, x) => buildMoe(b, ctx, x),
  ple: (b, ctxs, streams, tokenIds, _extra, table) => buildPle(b, ctxs, streams, tokenIds, table),
  weightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
    const specs = layerKind(config, layer) === 'attention' ? attentionWeightSpecs(config, layer) : gdnWeightSpecs(config, layer);
    specs.push(...moeWeightSpecs(config, layer));
    if (config.ple.layerIds.includes(layer)) specs.push(...pleWeightSpecs(config, layer));
    return specs;
  },
};
