import type { ModelConfig } from '../../config/modelConfig.ts';
import type { ValueId } from '../../graph/graph.ts';
import type { GraphBuilder } from '../../graph/graphBuilder.ts';

export interface MtpInputContext {
  config: ModelConfig;
  rank: number;
  tp: number;
  /** target tokens T = draft rows */
  tokens: number;
  /** rows this rank runs: T, or C when the drafter works on row shards */
  rows: number;
  layer: number;
  /** node scope and value id prefix, e.g. "mtp" */
  scope: string;
}

export interface MtpInputValues {
  /** i32 [T]: the target ids shifted by one, the sampled token last */
  draftIds: ValueId;
  /** bf16 [rows, n*H]: the draft layer's input streams */
  x0: ValueId;
}

/**
 * Rank ctx.rank's MTP input stage (layers/mtp/mtpMath.ts mtpLayerInput; ATOM
 * Qwen4ExpMultiTokenPredictor.forward): draft ids -> embed_tokens (the target's table) ->
 * pre_fc_norm_embedding -> fc_embedding = ee; the target's pre-mixer state [rows, n*H] ->
 * pre_fc_norm_hidden (one group over all n*H values) -> fc_hidden on the [rows*n, H] view;
 * X0_s = bf(hh_s + ee). The RMS1p norms are hcCombineNorm with one stream (fp32 inside,
 * (1 + w), one rounding: Qwen4ExpGroupedRMSNorm). With row shards (rows = C) the embedded
 * draft rows are cut to the rank's rows; padding rows stay zero through every step.
 */
export function buildMtpInput(b: GraphBuilder, ctx: MtpInputContext, tokenIds: ValueId, next: ValueId, table: ValueId, state: ValueId): MtpInputValues {
  const { config, rank, tp, tokens: T, rows, layer, scope } = ctx;
  const H = config.hiddenSize;
  const n = config.hc.count;
  const width = n * H;
  const id = (name: string) => `r${rank}/${scope}/${name}`;
  const node = (
    op: Parameters<GraphBuilder['node']>[0]['op'],
    name: string,
    inputs: (ValueId | null)[],
    outputs: ValueId[],
    attrs: Record<string, unknown> = {},
  ) => b.node({ op, rank, layer, scope: `${scope}.${name}`, inputs, outputs, attrs });
  const norm = (name: string, x: ValueId, w: number) => {
    const copy = b.value(id(`${name}.x`), [rows, w], 'bf16', rank);
    const y = b.value(id(name), [rows, w], 'bf16', rank);
    node('hcCombineNorm', name, [x, null, null, b.weight({ name: `mtp.${name}.weight` }, [w])], [copy, y], {
      streams: 1,
      eps: config.rmsNormEps,
      contract: 'atom',
    });
    return y;
  };
  const linear = (name: string, x: ValueId, outRows: number) => {
    const y = b.value(id(name), [outRows, H], 'bf16', rank);
    node('linear', name, [x, b.weight({ name: `mtp.${name}.weight` }, [H, H])], [y]);
    return y;
  };

  const draftIds = b.value(id('draft_ids'), [T], 'i32', rank);
  node('mtpDraftIds', 'draft_ids', [tokenIds, next], [draftIds]);
  let e = b.value(id('embed'), [T, H], 'bf16', rank);
  node('embed', 'embed_tokens', [draftIds, table], [e]);
  if (rows !== T) {
    const s = b.value(id('embed_shard'), [rows, H], 'bf16', rank);
    node('shard', 'embed_shard', [e], [s], { rank, tp, chunk: rows });
    e = s;
  }
  const ee = linear('fc_embedding', norm('pre_fc_norm_embedding', e, H), rows);
  const streamsView = b.value(id('hidden_streams'), [rows * n, H], 'bf16', rank);
  node('reshape', 'hidden_streams', [norm('pre_fc_norm_hidden', state, width)], [streamsView], { shape: [rows * n, H] });
  const hh = b.value(id('fc_hidden_rows'), [rows, width], 'bf16', rank);
  node('reshape', 'fc_hidden_rows', [linear('fc_hidden', streamsView, rows * n)], [hh], { shape: [rows, width] });
  const eeStreams = b.value(id('fc_embedding_streams'), [rows, width], 'bf16', rank);
  node('hcExpand', 'fc_embedding_streams', [ee], [eeStreams], { streams: n });
  const x0 = b.value(id('x0'), [rows, width], 'bf16', rank);
  node('add', 'x0', [hh, eeStreams], [x0]);
  return { draftIds, x0 };
}
