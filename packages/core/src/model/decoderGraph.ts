import type { ModelConfig } from '../config/modelConfig.ts';
import type { Graph, ValueId } from '../graph/graph.ts';
import type { SpPlan } from '../sp/plan.ts';
import { GraphBuilder } from '../graph/graphBuilder.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { buildHcCombine, buildHcMix, type HcStepContext, type PendingCombine } from '../hc/hcGraph.ts';
import type { HcContract } from '../hc/hcContract.ts';
import { hcPrefix } from './hcWeights.ts';
import type { ExtraInputs, SubLayerBuilders } from './subLayerBuilders.ts';

export interface RingParams {
  channels: number;
  chunkElems: number;
}

export interface DecoderGraphOptions {
  config: ModelConfig;
  /**
   * every decision about this forward, made once by the planner (sp/plan.ts): T, tp (validated
   * there), the stage's layers, whether and from which layer the streams are sharded, the
   * rows per rank, the exit gather, the MTP head and the FP8 quant path
   */
  plan: SpPlan;
  reduce: ReduceAlgorithm;
  ring: RingParams;
  contract: HcContract;
  subLayers: SubLayerBuilders;
}

/** Names of the values a caller reads from the decoder graph. */
export interface DecoderOutputs {
  /** final mixer output [T, H] (rank 0's copy; every rank holds the same) */
  h: ValueId;
  /** the pre-mixer HC state [T, nH] gathered for the MTP head, when MTP is on */
  mtpState: ValueId | null;
  /** each rank's streams value at the end of every sub-layer step, for padding checks */
  streamsPerStep: ValueId[][];
}

/**
 * The decoder stack as a graph over tp ranks (model.md "Model forward", sequence-parallel.md).
 * SP off: every rank runs the HC ops on all T rows and all-reduces each sub-layer's partial
 * sum. SP on: from `sp.startLayer` (after the PLE layer) each rank keeps C rows of the
 * streams; the sub-layer input is all-gathered (and trimmed to T), the partial sum padded to
 * C*tp rows and reduce-scattered, and travels with `raw` of the same rows as the pending
 * combine. At the boundary the pending combine is applied to all T rows and then the
 * streams are sharded (sequence-parallel.md "Where it starts and ends").
 */
export function buildDecoderGraph(o: DecoderGraphOptions): { graph: Graph; outputs: DecoderOutputs; extra: ExtraInputs } {
  const { config, plan } = o;
  if (plan.config !== config.name) throw new Error(`decoder graph: the plan is for config '${plan.config}', not '${config.name}'`);
  const { tokens: T, tp } = plan;
  const sp = plan.sp ? { chunk: plan.chunk, startLayer: plan.spStartLayer! } : null;
  const layers = plan.layers;
  const n = config.hc.count;
  const h = config.hiddenSize;
  const width = n * h;
  const ranks = [...Array(tp).keys()];
  const b = new GraphBuilder(tp, {
    config: config.name,
    tokens: T,
    tp,
    layers,
    sp,
    mtp: plan.mtp,
    gather: plan.gather,
    quant: plan.quant,
    reduce: o.reduce,
    ring: o.ring,
    contract: o.contract,
    subLayers: o.subLayers.name,
  });
  const ids = b.input('ids', [T], 'i32');
  const extra = o.subLayers.declareInputs(b, config, T);
  const table = b.weight({ name: 'model.embed_tokens.weight' }, [config.vocabSize, h]);

  let streams: ValueId[] = ranks.map((r) => {
    const e = b.value(`r${r}/embed/e`, [T, h], 'bf16', r);
    b.node({ op: 'embed', rank: r, layer: -1, scope: 'embed', inputs: [ids, table], outputs: [e], attrs: {} });
    const x = b.value(`r${r}/embed/streams`, [T, width], 'bf16', r);
    b.node({ op: 'hcExpand', rank: r, layer: -1, scope: 'embed.expand', inputs: [e], outputs: [x], attrs: { streams: n } });
    return x;
  });
  let pending: (PendingCombine | null)[] = ranks.map(() => null);
  let rows = T;
  const streamsPerStep: ValueId[][] = [];
  const hcCtx = (r: number, layer: number, prefix: string, scope: string): HcStepContext => ({ config, rank: r, rows, prefix, scope, layer, contract: o.contract });
  const applyPending = (layer: number, scope: string): void => {
    streams = ranks.map((r) => {
      const p = pending[r];
      return p ? buildHcCombine(b, hcCtx(r, layer, '', scope), streams[r], p) : streams[r];
    });
    pending = ranks.map(() => null);
  };
  /** all-gather each rank's [C, w] shard and trim to the T real rows */
  const gather = (vals: ValueId[], w: number, layer: number, scope: string): ValueId[] => {
    const full = ranks.map((r) => b.value(`r${r}/${scope}/gathered`, [rows * tp, w], 'bf16', r));
    b.node({ op: 'allGather', rank: null, layer, scope: `${scope}.all_gather`, inputs: vals, outputs: full, attrs: {} });
    return ranks.map((r) => {
      const t = b.value(`r${r}/${scope}/trimmed`, [T, w], 'bf16', r);
      b.node({ op: 'trim', rank: r, layer, scope: `${scope}.trim`, inputs: [full[r]], outputs: [t], attrs: { rows: T } });
      return t;
    });
  };
  // the ring's chunking is recorded on every all-reduce; the other orders do not use it
  const reduceAttrs = { algorithm: o.reduce, channels: o.ring.channels, chunkElems: o.ring.chunkElems };

  for (let layer = layers[0]; layer < layers[1]; layer++) {
    if (sp && layer === sp.startLayer) {
      applyPending(layer, `L${layer}.sp_start`);
      streams = ranks.map((r) => {
        const s = b.value(`r${r}/L${layer}.sp_start/shard`, [sp.chunk, width], 'bf16', r);
        b.node({ op: 'shard', rank: r, layer, scope: `L${layer}.sp_start.shard`, inputs: [streams[r]], outputs: [s], attrs: { rank: r, tp, chunk: sp.chunk } });
        return s;
      });
      rows = sp.chunk;
    }
    if (config.ple.layerIds.includes(layer) && o.subLayers.ple) {
      if (rows !== T) throw new Error(`decoder graph: PLE layer ${layer} would run on sharded streams (SP starts at ${sp?.startLayer})`);
      applyPending(layer, `L${layer}.ple`);
      streams = ranks.map((r) => {
        const ctx = { config, layer, rank: r, tp, tokens: T, scope: `L${layer}.ple` };
        const out = o.subLayers.ple!(b, ctx, streams[r], ids, extra);
        const x = b.value(`r${r}/L${layer}.ple/streams`, [T, width], 'bf16', r);
        b.node({ op: 'add', rank: r, layer, scope: `L${layer}.ple.add`, inputs: [streams[r], out], outputs: [x], attrs: {} });
        return x;
      });
    }
    for (const sub of ['attn', 'mlp'] as const) {
      const scope = `L${layer}.${sub}`;
      const mixes = ranks.map((r) => buildHcMix(b, hcCtx(r, layer, hcPrefix(layer, sub), `${scope}_hc`), streams[r], pending[r], true));
      streams = mixes.map((m) => m.streams);
      streamsPerStep.push(streams);
      const xs = rows === T ? mixes.map((m) => m.x) : gather(mixes.map((m) => m.x), h, layer, `${scope}_in`);
      const partials = ranks.map((r) => o.subLayers[sub](b, { config, layer, rank: r, tp, tokens: T, scope }, xs[r], extra));
      let ys: ValueId[];
      if (tp === 1) {
        ys = partials;
      } else if (rows === T) {
        ys = ranks.map((r) => b.value(`r${r}/${scope}/reduced`, [T, h], 'bf16', r));
        b.node({ op: 'allReduce', rank: null, layer, scope: `${scope}.all_reduce`, inputs: partials, outputs: ys, attrs: reduceAttrs });
      } else {
        const padded = ranks.map((r) => {
          const p = b.value(`r${r}/${scope}/padded`, [rows * tp, h], 'bf16', r);
          b.node({ op: 'pad', rank: r, layer, scope: `${scope}.pad`, inputs: [partials[r]], outputs: [p], attrs: { rows: rows * tp } });
          return p;
        });
        ys = ranks.map((r) => b.value(`r${r}/${scope}/reduced`, [rows, h], 'bf16', r));
        b.node({ op: 'reduceScatter', rank: null, layer, scope: `${scope}.reduce_scatter`, inputs: padded, outputs: ys, attrs: { algorithm: o.reduce } });
      }
      pending = ranks.map((r) => ({ y: ys[r], raw: mixes[r].raw! }));
    }
  }

  const exitLayer = layers[1];
  let mtpState: ValueId | null = null;
  if (plan.mtp) {
    // The MTP head needs every row of the pre-mixer state: combine, gather it when sharded
    // (plan.gather 'hc_state') instead of the mixer output; the mixer then runs on all T rows.
    applyPending(exitLayer, 'mtp');
    if (plan.gather === 'hc_state') streams = gather(streams, width, exitLayer, 'mtp_state');
    rows = T;
    mtpState = streams[0];
    b.markOutput(mtpState);
  }
  const mixed = ranks.map((r) => buildHcMix(b, hcCtx(r, exitLayer, hcPrefix('mixer'), 'mixer'), streams[r], pending[r], false).x);
  const final = plan.gather === 'mixer' ? gather(mixed, h, exitLayer, 'mixer_out') : mixed;
  b.markOutput(final[0]);
  return { graph: b.build(), outputs: { h: final[0], mtpState, streamsPerStep }, extra };
}
