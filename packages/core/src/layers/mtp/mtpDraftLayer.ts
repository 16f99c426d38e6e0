import { layerKind, type ModelConfig } from '../../config/modelConfig.ts';
import type { ValueId, WeightRef } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { ExtraInputs, SubLayerBuilders } from '../../model/subLayerBuilders.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';
import { numel, type DType, type Tensor } from '../../tensor/tensor.ts';
import { MTP_LAYER_PREFIX } from './mtpWeights.ts';

// The MTP draft layer (ATOM Qwen4ExpMultiTokenPredictor.layers[0]: one QSA decoder layer,
// prefix `mtp.layers.0`, layer_num = num_hidden_layers, no PLE) built by the decoder's own
// sub-layer builders, so it gets whatever attention and MoE the main layers get. The
// builders know only main layers (`model.layers.{i}`, i < numLayers, the kind from the
// layer index), so they build it as a "host" main layer of the same kind, through a view
// of the graph builder that renames that layer's tensors to `mtp.layers.0.*` and labels
// the nodes with layer numLayers.

/** The main layer the draft layer is built as: the last full-attention layer without a PLE. */
export function mtpHostLayer(config: ModelConfig): number {
  for (let layer = config.numLayers - 1; layer >= 0; layer--) {
    if (layerKind(config, layer) === 'attention' && !config.ple.layerIds.includes(layer)) return layer;
  }
  throw new Error(`mtp: config '${config.name}' has no full-attention layer without a PLE to build the draft layer as`);
}

function renamer(config: ModelConfig): (name: string) => string {
  const from = `model.layers.${mtpHostLayer(config)}.`;
  return (name) => {
    if (!name.startsWith(from)) throw new Error(`mtp: the draft layer's sub-layers read '${name}', which is not a tensor of their layer (${from}*)`);
    return `${MTP_LAYER_PREFIX}.${name.slice(from.length)}`;
  };
}

/** `b` as the draft layer's sub-layer builders must see it (see the file comment). */
export function mtpDraftLayerBuilder(b: GraphBuilder, config: ModelConfig): GraphBuilder {
  const rename = renamer(config);
  const weight = (ref: WeightRef, shape: number[], dtype?: DType): ValueId =>
    b.weight({ ...ref, name: rename(ref.name), ...(ref.concat ? { concat: ref.concat.map(rename) } : {}) }, shape, dtype);
  const node = (n: Parameters<GraphBuilder['node']>[0]) => b.node({ ...n, layer: config.numLayers });
  return new Proxy(b, {
    get(target, prop) {
      if (prop === 'weight') return weight;
      if (prop === 'node') return node;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** The draft layer's sub-layer tensors (attention with its indexer, MoE) under `mtp.layers.0`. */
export function mtpDraftLayerWeightSpecs(config: ModelConfig, subLayers: SubLayerBuilders): WeightSpec[] {
  const rename = renamer(config);
  return subLayers.weightSpecs(config, mtpHostLayer(config)).map((s) => ({ ...s, name: rename(s.name) }));
}

/**
 * The sub-layers' extra inputs (RoPE tables) for the draft rows, whose positions are the
 * target's + 1 (ATOM eagle_proposer): the builders declare them over T + 1 positions, under
 * `mtp/` ids; each input of T + 1 rows becomes a graph input of rows 1..T, its feed cut on
 * the host (an exact copy), so one set serves every rank. They must depend on positions
 * only: the draft ids exist only inside the graph.
 */
export function mtpDraftExtraInputs(b: GraphBuilder, config: ModelConfig, subLayers: SubLayerBuilders, tokens: number): ExtraInputs {
  const cut = new Set<ValueId>();
  const shifted = new Proxy(b, {
    get(target, prop) {
      if (prop === 'input') {
        return (id: ValueId, shape: number[], dtype: DType) => {
          if (shape[0] !== tokens + 1) return target.input(`mtp/${id}`, shape, dtype);
          const declared = target.input(`mtp/${id}`, [tokens, ...shape.slice(1)], dtype);
          cut.add(declared);
          return declared;
        };
      }
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const full = subLayers.declareInputs(shifted, config, tokens + 1);
  return {
    ids: full.ids,
    feeds: (tokenIds) =>
      new Map(
        [...full.feeds(tokenIds)].map(([id, t]): [ValueId, Tensor] => {
          if (!cut.has(id)) return [id, t];
          const row = numel(t.shape.slice(1));
          return [id, { dtype: t.dtype, shape: [tokens, ...t.shape.slice(1)], data: t.data.slice(row, (tokens + 1) * row) }];
        }),
      ),
  };
}
