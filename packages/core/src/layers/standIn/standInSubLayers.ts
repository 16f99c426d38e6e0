import type { ModelConfig } from '../../config/modelConfig.ts';
import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';
import type { SubLayerBuilders } from '../../model/subLayerBuilders.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';
import type { SubLayerContext } from '../subLayerContext.ts';

function weightName(layer: number, sub: 'attn' | 'mlp'): string {
  return `model.layers.${layer}.standin_${sub}.weight`;
}

/**
 * A row-parallel linear y = x W^T with W [H, H] split by input columns: rank r multiplies
 * its H/tp columns of x by its H/tp columns of W and returns a partial [T, H] sum, as every
 * real TP sub-layer's output projection does. It stands in for attention/GDN and MoE in the
 * HC-only stack, so the HC and SP machinery can be tested on its own.
 */
function rowParallel(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, sub: 'attn' | 'mlp'): ValueId {
  const h = ctx.config.hiddenSize;
  const cols = h / ctx.tp;
  const [start, end] = [ctx.rank * cols, (ctx.rank + 1) * cols];
  const id = (n: string): string => `r${ctx.rank}/${ctx.scope}/${n}`;
  const w = b.weight({ name: weightName(ctx.layer, sub), slice: { axis: 1, ranges: [[start, end]] } }, [h, cols]);
  const xs = b.value(id('x_cols'), [ctx.tokens, cols], 'bf16', ctx.rank);
  b.node({ op: 'sliceCols', rank: ctx.rank, layer: ctx.layer, scope: `${ctx.scope}.slice`, inputs: [x], outputs: [xs], attrs: { start, end } });
  const partial = b.value(id('partial'), [ctx.tokens, h], 'bf16', ctx.rank);
  b.node({ op: 'linear', rank: ctx.rank, layer: ctx.layer, scope: `${ctx.scope}.row_parallel`, inputs: [xs, w], outputs: [partial], attrs: {} });
  return partial;
}

export const STAND_IN_SUB_LAYERS: SubLayerBuilders = {
  name: 'stand-in row-parallel linear',
  declareInputs: () => ({ ids: {}, feeds: () => new Map() }),
  attn: (b, ctx, x) => rowParallel(b, ctx, x, 'attn'),
  mlp: (b, ctx, x) => rowParallel(b, ctx, x, 'mlp'),
  weightSpecs(config: ModelConfig, layer: number): WeightSpec[] {
    // std 1/sqrt(H): x has RMS ~1, so the output has RMS ~1, like a real sub-layer's.
    const std = 1 / Math.sqrt(config.hiddenSize);
    return (['attn', 'mlp'] as const).map((sub) => ({
      name: weightName(layer, sub),
      shape: [config.hiddenSize, config.hiddenSize],
      dtype: 'bf16' as const,
      init: { kind: 'normal' as const, std },
    }));
  },
};
