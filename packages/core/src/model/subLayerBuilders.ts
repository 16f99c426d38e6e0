import type { ModelConfig } from '../config/modelConfig.ts';
import type { ValueId } from '../graph/graph.ts';
import type { GraphBuilder } from '../graph/graphBuilder.ts';
import type { PleTable } from '../layers/ple/pleGraph.ts';
import type { SubLayerContext } from '../layers/subLayerContext.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { WeightSpec } from './weightSpec.ts';

/** Graph inputs a stack needs besides the token ids (e.g. RoPE tables), and their values. */
export interface ExtraInputs {
  /** value ids by name, for the builders */
  ids: Record<string, ValueId>;
  feeds(tokenIds: Int32Array): Map<ValueId, Tensor>;
}

/**
 * What sits between the HC steps of the decoder stack: the real sub-layers (attention or
 * GDN, then MoE, and the PLE) or a stand-in. Each returns this rank's PARTIAL [T, H] sum.
 */
export interface SubLayerBuilders {
  readonly name: string;
  declareInputs(b: GraphBuilder, config: ModelConfig, tokens: number): ExtraInputs;
  attn(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, extra: ExtraInputs): ValueId;
  /**
   * Every rank's attention-position sub-layer at once (ctxs[r], xs[r] of rank r), for
   * sub-layers with a collective inside (the row-sharded QSA selection, ctx.qsaRowChunk);
   * when present the decoder calls it instead of attn.
   */
  attnRanks?(b: GraphBuilder, ctxs: readonly SubLayerContext[], xs: readonly ValueId[], extra: ExtraInputs): ValueId[];
  mlp(b: GraphBuilder, ctx: SubLayerContext, x: ValueId, extra: ExtraInputs): ValueId;
  /**
   * every rank's PLE output [T, nH] of a PLE layer (replicated, all T rows), its n-gram table
   * placed as `table` says (a vocab-parallel table all-reduces); absent in HC-only stacks
   */
  ple?(b: GraphBuilder, ctxs: readonly SubLayerContext[], streams: readonly ValueId[], tokenIds: ValueId, extra: ExtraInputs, table: PleTable): ValueId[];
  weightSpecs(config: ModelConfig, layer: number): WeightSpec[];
}
