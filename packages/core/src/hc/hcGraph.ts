import type { ModelConfig } from '../config/modelConfig.ts';
import type { ValueId } from '../graph/graph.ts';
import type { GraphBuilder } from '../graph/graphBuilder.ts';
import type { Fp8Rows } from '../layers/subLayerContext.ts';
import { type Fp8Format, fp8Info } from '../numerics/fp8.ts';
import { PRODUCTION_QUANT_STYLE } from '../numerics/quant.ts';
import { HC_QUANT_ROWS_MAX } from '../sp/gate.ts';
import type { HcContract } from './hcContract.ts';

/** The deferred combine a sub-layer leaves for the next HC step: its output and raw logits. */
export interface PendingCombine {
  y: ValueId;
  raw: ValueId;
}

export interface HcStepContext {
  config: ModelConfig;
  rank: number;
  /** rows this rank runs through the HC ops: C when sharded, T when not */
  rows: number;
  /** checkpoint prefix, see model/hcWeights.ts */
  prefix: string;
  scope: string;
  layer: number;
  contract: HcContract;
  /**
   * The FP8 PTPC path with plan.quant 'fused' for the sub-layer this mix feeds: the gated
   * mean is the fused hc_gated_mean_quant (hcGatedMeanQuant, unsharded, rows <= 1024), which
   * also emits x's per-token quantization in this format. Absent: the bf16 hcGatedMean.
   */
  fp8Fused?: Fp8Format;
}

export interface HcMixValues {
  /** the sub-layer input [rows, H] */
  x: ValueId;
  /** the streams after the pending combine [rows, nH] */
  streams: ValueId;
  /** inject logits [rows, n]; null on the mixer */
  raw: ValueId | null;
  /** x's per-token fp8 quantization when the mix fused it (ctx.fp8Fused); null otherwise */
  xQuant: Fp8Rows | null;
}

/**
 * Appends combine-norm + mix for one rank. With `withInject` (a layer's HC) the first GEMM
 * uses W_cat = [down; inject] (r + n outputs) as production does; the mixer has no inject.
 */
export function buildHcMix(b: GraphBuilder, ctx: HcStepContext, streams: ValueId, pending: PendingCombine | null, withInject: boolean): HcMixValues {
  const { config, rank, rows, prefix, scope, layer, contract } = ctx;
  const n = config.hc.count;
  const h = config.hiddenSize;
  const r = config.hc.lowRank;
  const width = n * h;
  const id = (name: string): string => `r${rank}/${scope}/${name}`;
  const common = { rank, layer };
  const normW = b.weight({ name: `${prefix}.hc_norm.weight` }, [width]);
  const dWidth = withInject ? r + n : r;
  const wFirst = withInject
    ? b.weight({ name: `${prefix}.W_cat`, concat: [`${prefix}.input_mix_weight_down.weight`, `${prefix}.block_inject_weight.weight`] }, [r + n, width])
    : b.weight({ name: `${prefix}.input_mix_weight_down.weight` }, [r, width]);
  const wUp = b.weight({ name: `${prefix}.input_mix_weight_up.weight` }, [width, r]);

  const xOut = b.value(id('streams'), [rows, width], 'bf16', rank);
  const normed = b.value(id('normed'), [rows, width], 'bf16', rank);
  b.node({
    op: 'hcCombineNorm',
    ...common,
    scope: `${scope}.combine_norm`,
    inputs: [streams, pending?.y ?? null, pending?.raw ?? null, normW],
    outputs: [xOut, normed],
    attrs: { streams: n, eps: config.rmsNormEps, contract },
  });
  const d = b.value(id('d'), [rows, dWidth], 'bf16', rank);
  b.node({ op: 'linear', ...common, scope: `${scope}.down`, inputs: [normed, wFirst], outputs: [d], attrs: {} });
  const gate = b.value(id('gate'), [rows, r], 'bf16', rank);
  const raw = withInject ? b.value(id('raw'), [rows, n], 'bf16', rank) : null;
  b.node({ op: 'hcScaledSilu', ...common, scope: `${scope}.scaled_silu`, inputs: [d], outputs: [gate, raw], attrs: { streams: n, lowRank: r, contract } });
  const up = b.value(id('up'), [rows, width], 'bf16', rank);
  b.node({ op: 'linear', ...common, scope: `${scope}.up`, inputs: [gate, wUp], outputs: [up], attrs: {} });
  const x = b.value(id('x'), [rows, h], 'bf16', rank);
  if (!ctx.fp8Fused) {
    b.node({ op: 'hcGatedMean', ...common, scope: `${scope}.gated_mean`, inputs: [up, normed], outputs: [x], attrs: { streams: n, contract } });
    return { x, streams: xOut, raw, xQuant: null };
  }
  // the fused kernel computes the 'atom' gated mean only, and takes at most 1024 rows
  if (contract !== 'atom') throw new Error(`HC mix ${scope}: the fused gated mean + quant follows the 'atom' contract, not '${contract}'`);
  if (rows > HC_QUANT_ROWS_MAX) throw new Error(`HC mix ${scope}: the fused gated mean + quant takes at most ${HC_QUANT_ROWS_MAX} rows, got ${rows}`);
  const q = b.value(id('x_q'), [rows, h], fp8Info(ctx.fp8Fused).dtype, rank);
  const scale = b.value(id('x_scale'), [rows], 'f32', rank);
  b.node({
    op: 'hcGatedMeanQuant',
    ...common,
    scope: `${scope}.gated_mean_quant`,
    inputs: [up, normed],
    outputs: [x, q, scale],
    attrs: { streams: n, format: ctx.fp8Fused, style: PRODUCTION_QUANT_STYLE.fused },
  });
  return { x, streams: xOut, raw, xQuant: { q, scale } };
}

/** The unfused combine, for where the pending combine cannot wait for the next mix. */
export function buildHcCombine(b: GraphBuilder, ctx: HcStepContext, streams: ValueId, pending: PendingCombine): ValueId {
  const out = b.value(`r${ctx.rank}/${ctx.scope}/combined`, [ctx.rows, ctx.config.hc.count * ctx.config.hiddenSize], 'bf16', ctx.rank);
  b.node({
    op: 'hcCombine',
    rank: ctx.rank,
    layer: ctx.layer,
    scope: `${ctx.scope}.combine`,
    inputs: [streams, pending.y, pending.raw],
    outputs: [out],
    attrs: { streams: ctx.config.hc.count, contract: ctx.contract },
  });
  return out;
}
