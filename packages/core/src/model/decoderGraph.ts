import type { ModelConfig } from '../config/modelConfig.ts';
import type { Graph, ValueId } from '../graph/graph.ts';
import type { SpPlan } from '../sp/plan.ts';
import { GraphBuilder } from '../graph/graphBuilder.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { buildHcCombine, buildHcMix, type HcStepContext, type PendingCombine } from '../hc/hcGraph.ts';
import { hcContractOf, type RoundingContract } from '../hc/hcContract.ts';
import { hcPrefix } from './hcWeights.ts';
import type { ExtraInputs, SubLayerBuilders } from './subLayerBuilders.ts';
import { QSA_BLOCKS } from '../layers/attention/qsaGraph.ts';
import { MOE_TOPK_IDS } from '../layers/moe/moeGraph.ts';
import { buildLmHead, type LogitsRows } from '../layers/mtp/lmHeadGraph.ts';
import { mtpDraftExtraInputs, mtpDraftLayerBuilder, mtpHostLayer } from '../layers/mtp/mtpDraftLayer.ts';
import { buildMtpInput } from '../layers/mtp/mtpGraph.ts';
import { mtpHcPrefix } from '../layers/mtp/mtpWeights.ts';
import type { Fp8Rows, SubLayerContext } from '../layers/subLayerContext.ts';
import type { PleTable } from '../layers/ple/pleGraph.ts';
import { fp8QuantizesInput } from '../layers/gdn/gdnGraph.ts';
import type { Fp8Format } from '../numerics/fp8.ts';
import type { TopkTies } from '../numerics/topkTies.ts';
import type { DType } from '../tensor/tensor.ts';

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
  contract: RoundingContract;
  /**
   * moeRoute's and qsaSelect's tie rule (numerics/topkTies.ts); absent: 'torch-cpu' under the
   * 'hf-eager' contract (torch.topk on the CPU, as an HF dump), else 'lower-index' (ATOM's)
   */
  ties?: TopkTies;
  subLayers: SubLayerBuilders;
  /** rows of the LM and MTP logits: the last position (default, as generation) or all T */
  logits?: LogitsRows;
  /**
   * where the MTP drafter's HC work runs when the streams are sharded: 'gathered' (default:
   * the pre-mixer state gathered, plan.gather 'hc_state', every row on every rank) or
   * 'sharded' (each rank's row shard, as the main stack under SP; the exit gathers the
   * mixer output instead). Bit-identical to each other at tp 2.
   */
  mtpDrafter?: 'gathered' | 'sharded';
  /** expose the golden-dump values (DecoderOutputs.dumpValues), gathering sharded ones */
  dump?: boolean;
  /**
   * where the QSA indexer selects on sharded layers: 'replicated' (default, as ATOM: every
   * rank selects for all T rows) or 'rowSharded' (each rank for its own C rows, selections
   * all-gathered: the production follow-up; the kept sets are identical)
   */
  qsaSelection?: 'replicated' | 'rowSharded';
  /**
   * the FP8 PTPC path (model.md "FP8"): the GDN input projection as FP8 GEMMs in this format,
   * its activation rows quantized as plan.quant says (fused into the mix, or separately on
   * the gathered rows); null or absent: bf16 GEMMs
   */
  fp8?: Fp8Format | null;
  /**
   * where the PLE's n-gram table lives (layers/ple/pleGraph.ts PleTable): 'gathered' (default:
   * rows read from the checkpoint as the ids need them, by a host op) or 'vocabParallel' (each
   * rank's slice on its device, as ATOM; the lookups all-reduced). Bit-identical to each other.
   */
  pleTable?: 'gathered' | 'vocabParallel';
}

/** One rank's value, and where its rows sit among the T rows. */
export interface RankValue {
  id: ValueId;
  rank: number;
  rowStart: number;
}

/** Names of the values a caller reads from the decoder graph. */
export interface DecoderOutputs {
  /** final mixer output [T, H] (rank 0's copy; every rank holds the same) */
  h: ValueId;
  /** the pre-mixer HC state [T, nH] on all rows (the gathered MTP input), when MTP is on with the gathered drafter */
  mtpState: ValueId | null;
  /** each rank's streams value at the end of every sub-layer step of the main stack, for padding checks */
  streamsPerStep: ValueId[][];
  /** bf16 [1 or T, vocab]: lm_head logits of the last position (or all, DecoderGraphOptions.logits) */
  logits: ValueId;
  /** i32 [1 or T]: the greedy next tokens, argmax of `logits` */
  nextTokens: ValueId;
  /** the MTP head: draft logits [1 or T, vocab], their argmax (the draft tokens), the draft ids [T] it read */
  mtp: { logits: ValueId; draftTokens: ValueId; draftIds: ValueId } | null;
  /** the golden-dump values by issue 8's names (embed, layers.{i}.in, ..., logits, mtp.logits); empty unless dump */
  dumpValues: Record<string, ValueId>;
  /**
   * with dump: each rank's own values of every sub-layer step: `layers.{i}.{attn|mlp}.partial.r{r}`
   * (its partial sums, [T, H]) and `.out.r{r}` (the collective's output: [T, H], or under SP its
   * shard of C rows starting at global row rowStart)
   */
  rankValues: Record<string, RankValue>;
}

/**
 * The decoder stack as a graph over tp ranks (model.md "Model forward", sequence-parallel.md).
 * SP off: every rank runs the HC ops on all T rows and all-reduces each sub-layer's partial
 * sum. SP on: from `sp.startLayer` (after the PLE layer) each rank keeps C rows of the
 * streams; the sub-layer input is all-gathered (and trimmed to T), the partial sum padded to
 * C*tp rows and reduce-scattered, and travels with `raw` of the same rows as the pending
 * combine. At the boundary the pending combine is applied to all T rows and then the
 * streams are sharded (sequence-parallel.md "Where it starts and ends"). After the final
 * mixer: the vocab-parallel LM head (layers/mtp/lmHeadGraph.ts) and, with MTP, the MTP head
 * on the pre-mixer state: input stage, the draft layer (the same HC steps and sub-layer
 * builders, layers/mtp/mtpDraftLayer.ts), its mixer and the shared LM head.
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
  const logitsRows = o.logits ?? 'last';
  // the sharded drafter keeps the pre-mixer state on the ranks' rows: the exit gathers the mixer output
  const shardedDrafter = plan.mtp && sp !== null && o.mtpDrafter === 'sharded';
  const exitGather = shardedDrafter ? 'mixer' : plan.gather;
  const b = new GraphBuilder(tp, {
    config: config.name,
    tokens: T,
    tp,
    layers,
    sp,
    mtp: plan.mtp,
    gather: exitGather,
    quant: plan.quant,
    fp8: o.fp8 ?? null,
    qsaSelection: o.qsaSelection ?? 'replicated',
    pleTable: o.pleTable ?? 'gathered',
    reduce: o.reduce,
    ring: o.ring,
    contract: o.contract,
    subLayers: o.subLayers.name,
    logits: logitsRows,
    mtpDrafter: plan.mtp ? (o.mtpDrafter ?? 'gathered') : null,
  });
  const marked = new Set<ValueId>();
  const output = (id: ValueId): void => {
    if (!marked.has(id)) b.markOutput(id);
    marked.add(id);
  };
  const ids = b.input('ids', [T], 'i32');
  const extra = o.subLayers.declareInputs(b, config, T);
  const table = b.weight({ name: 'model.embed_tokens.weight' }, [config.vocabSize, h]);

  let pending: (PendingCombine | null)[] = ranks.map(() => null);
  let rows = T;
  const streamsPerStep: ValueId[][] = [];
  const dumpValues: Record<string, ValueId> = {};
  const rankValues: Record<string, RankValue> = {};
  const hcCtx = (r: number, layer: number, prefix: string, scope: string): HcStepContext => ({
    config,
    rank: r,
    rows,
    prefix,
    scope,
    layer,
    contract: hcContractOf(o.contract),
  });
  const subCtx = (layer: number, r: number, scope: string, fp8?: SubLayerContext['fp8']): SubLayerContext => ({
    config,
    layer,
    rank: r,
    tp,
    tokens: T,
    scope,
    ...(fp8 ? { fp8 } : {}),
    ...(o.qsaSelection === 'rowSharded' && rows !== T ? { qsaRowChunk: rows } : {}),
    ...(o.contract === 'hf-eager' ? { eager: true } : {}),
    ...((o.ties ?? (o.contract === 'hf-eager' ? 'torch-cpu' : 'lower-index')) === 'torch-cpu' ? { ties: 'torch-cpu' as const } : {}),
  });
  const embedded = ranks.map((r) => {
    const e = b.value(`r${r}/embed/e`, [T, h], 'bf16', r);
    b.node({ op: 'embed', rank: r, layer: -1, scope: 'embed', inputs: [ids, table], outputs: [e], attrs: {} });
    return e;
  });
  let streams: ValueId[] = ranks.map((r) => {
    const x = b.value(`r${r}/embed/streams`, [T, width], 'bf16', r);
    b.node({ op: 'hcExpand', rank: r, layer: -1, scope: 'embed.expand', inputs: [embedded[r]], outputs: [x], attrs: { streams: n } });
    return x;
  });
  const applyPending = (layer: number, scope: string): void => {
    streams = ranks.map((r) => {
      const p = pending[r];
      return p ? buildHcCombine(b, hcCtx(r, layer, '', scope), streams[r], p) : streams[r];
    });
    pending = ranks.map(() => null);
  };
  /** all-gather each rank's [C, w] shard and trim to the T real rows */
  const gather = (vals: ValueId[], w: number, layer: number, scope: string, dtype: DType = 'bf16'): ValueId[] => {
    const full = ranks.map((r) => b.value(`r${r}/${scope}/gathered`, [rows * tp, w], dtype, r));
    b.node({ op: 'allGather', rank: null, layer, scope: `${scope}.all_gather`, inputs: vals, outputs: full, attrs: {} });
    return ranks.map((r) => {
      const t = b.value(`r${r}/${scope}/trimmed`, [T, w], dtype, r);
      b.node({ op: 'trim', rank: r, layer, scope: `${scope}.trim`, inputs: [full[r]], outputs: [t], attrs: { rows: T } });
      return t;
    });
  };
  /** a golden-dump value (rank 0's copy of a replicated value) */
  const dump = (name: string, id: ValueId): void => {
    if (!o.dump) return;
    dumpValues[name] = id;
    output(id);
  };
  /** a golden-dump value of T rows, gathered when the ranks hold row shards of it */
  const dumpAs = (name: string, vals: ValueId[], layer: number): void => {
    if (!o.dump) return;
    const { shape, dtype } = b.build().values[vals[0]];
    dump(name, shape[0] === T ? vals[0] : gather(vals, shape[1], layer, `dump.${name}`, dtype)[0]);
  };
  // the ring's chunking is recorded on every all-reduce; the other orders do not use it
  const reduceAttrs = { algorithm: o.reduce, channels: o.ring.channels, chunkElems: o.ring.chunkElems };

  /**
   * One HC step on every rank: the mix (with the pending combine), the sub-layer on all T
   * rows (its input all-gathered when the streams are sharded), its partial sums all-reduced
   * (or reduce-scattered to the rank's rows), left as the next pending combine.
   */
  const hcStep = (
    layer: number,
    prefix: string,
    scope: string,
    sub: (xs: ValueId[], xq: (Fp8Rows | null)[]) => ValueId[],
    fp8Fused: Fp8Format | null = null,
  ) => {
    const mixes = ranks.map((r) =>
      buildHcMix(b, { ...hcCtx(r, layer, prefix, `${scope}_hc`), ...(fp8Fused ? { fp8Fused } : {}) }, streams[r], pending[r], true),
    );
    streams = mixes.map((m) => m.streams);
    const xs =
      rows === T
        ? mixes.map((m) => m.x)
        : gather(
            mixes.map((m) => m.x),
            h,
            layer,
            `${scope}_in`,
          );
    const partials = sub(
      xs,
      mixes.map((m) => m.xQuant),
    );
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
    return { streams, mixed: xs, out: ys, partials };
  };
  /**
   * Each rank's side of a sub-layer step (dump only): its partial sums before the collective
   * (all T rows) and the collective's output (T rows, or its C-row shard under SP, the rows
   * from r*C on), named `<name>.partial.r<r>` and `<name>.out.r<r>`.
   */
  const dumpRanks = (name: string, step: { partials: ValueId[]; out: ValueId[] }): void => {
    if (!o.dump) return;
    for (const r of ranks) {
      rankValues[`${name}.partial.r${r}`] = { id: step.partials[r], rank: r, rowStart: 0 };
      rankValues[`${name}.out.r${r}`] = { id: step.out[r], rank: r, rowStart: rows === T ? 0 : r * rows };
      output(step.partials[r]);
      output(step.out[r]);
    }
  };
  /** every rank's sub-layer `sub` at `layer` (attnRanks, when the builders have it, builds all ranks at once) */
  const subLayer =
    (bb: GraphBuilder, sub: 'attn' | 'mlp', layer: number, scope: string, ex: ExtraInputs, fp8: Fp8Format | null = null) =>
    (xs: ValueId[], xq: (Fp8Rows | null)[]): ValueId[] => {
      const ctxs = ranks.map((r) => subCtx(layer, r, scope, fp8 ? { format: fp8, ...(xq[r] ? { x: xq[r]! } : {}) } : undefined));
      if (sub === 'attn' && o.subLayers.attnRanks) return o.subLayers.attnRanks(bb, ctxs, xs, ex);
      return ranks.map((r) => o.subLayers[sub](bb, ctxs[r], xs[r], ex));
    };

  dumpAs('embed', embedded, -1);
  for (let layer = layers[0]; layer < layers[1]; layer++) {
    const name = `layers.${layer}`;
    let layerIn = false;
    if (sp && layer === sp.startLayer) {
      applyPending(layer, `L${layer}.sp_start`);
      dumpAs(`${name}.in`, streams, layer);
      layerIn = true;
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
      dumpAs(`${name}.in`, streams, layer);
      layerIn = true;
      const pleTable: PleTable = o.pleTable === 'vocabParallel' ? { kind: 'vocabParallel', reduce: reduceAttrs } : { kind: 'gathered' };
      const outs = o.subLayers.ple(
        b,
        ranks.map((r) => ({ config, layer, rank: r, tp, tokens: T, scope: `L${layer}.ple` })),
        streams,
        ids,
        extra,
        pleTable,
      );
      streams = ranks.map((r) => {
        const x = b.value(`r${r}/L${layer}.ple/streams`, [T, width], 'bf16', r);
        b.node({ op: 'add', rank: r, layer, scope: `L${layer}.ple.add`, inputs: [streams[r], outs[r]], outputs: [x], attrs: {} });
        return x;
      });
      if (o.dump) dump(`${name}.ple.ngram_ids`, pleNgramIdsOf(b, layer));
      dumpAs(`${name}.ple.out`, streams, layer);
    }
    for (const sub of ['attn', 'mlp'] as const) {
      const scope = `L${layer}.${sub}`;
      // the FP8 path quantizes the GDN input: in the mix when plan.quant is 'fused', else in the layer
      const fp8 = o.fp8 && fp8QuantizesInput(config, layer, sub) ? o.fp8 : null;
      const step = hcStep(layer, hcPrefix(layer, sub), scope, subLayer(b, sub, layer, scope, extra, fp8), plan.quant === 'fused' ? fp8 : null);
      streamsPerStep.push(step.streams);
      if (sub === 'attn' && !layerIn) dumpAs(`${name}.in`, step.streams, layer);
      dumpAs(`${name}.${sub}_hc.mixed`, step.mixed, layer);
      dumpAs(`${name}.${sub}.out`, step.out, layer);
      dumpRanks(`${name}.${sub}`, step);
      if (sub === 'attn' && o.dump) {
        const kept = keptCountsOf(b, config, layer, T);
        if (kept) dump(`${name}.attn.kept`, kept);
      }
      // the router's choice, so that a comparison tells a routing flip from arithmetic
      if (sub === 'mlp' && o.dump && b.has(`r0/${scope}/${MOE_TOPK_IDS}`)) dump(`${name}.mlp.topk_ids`, `r0/${scope}/${MOE_TOPK_IDS}`);
    }
  }

  const exitLayer = layers[1];
  let mtpState: ValueId | null = null;
  let draftState: ValueId[] = [];
  if (plan.mtp) {
    // The MTP head reads every row of the pre-mixer state: combine; the gathered drafter
    // gathers it when sharded (plan.gather 'hc_state') and the mixer then runs on all T rows.
    applyPending(exitLayer, 'mtp');
    if (exitGather === 'hc_state') {
      streams = gather(streams, width, exitLayer, 'mtp_state');
      rows = T;
    }
    if (rows === T) {
      mtpState = streams[0];
      output(mtpState);
    }
    draftState = streams;
  }
  const mixer = ranks.map((r) => buildHcMix(b, hcCtx(r, exitLayer, hcPrefix('mixer'), 'mixer'), streams[r], pending[r], false));
  dumpAs(
    'final.in',
    mixer.map((m) => m.streams),
    exitLayer,
  );
  const mixed = mixer.map((m) => m.x);
  const final = exitGather === 'mixer' ? gather(mixed, h, exitLayer, 'mixer_out') : mixed;
  output(final[0]);
  dumpAs('final.mixed', final, exitLayer);
  const head = buildLmHead(b, { config, tp, tokens: T, rows: logitsRows, scope: 'lm_head', layer: exitLayer }, final);
  output(head.logits[0]);
  output(head.ids[0]);
  dump('logits', head.logits[0]);

  let mtp: DecoderOutputs['mtp'] = null;
  // the draft layer's RoPE tables join the stack's extra inputs
  let inputs = extra;
  if (plan.mtp) {
    rows = b.shapeOf(draftState[0])[0];
    const input = ranks.map((r) => {
      let next = head.ids[r];
      if (logitsRows === 'all') {
        next = b.value(`r${r}/mtp/next_token`, [1], 'i32', r);
        b.node({
          op: 'sliceRows',
          rank: r,
          layer: exitLayer,
          scope: 'mtp.next_token',
          inputs: [head.ids[r]],
          outputs: [next],
          attrs: { start: T - 1, end: T },
        });
      }
      return buildMtpInput(b, { config, rank: r, tp, tokens: T, rows, layer: exitLayer, scope: 'mtp' }, ids, next, table, draftState[r]);
    });
    streams = input.map((v) => v.x0);
    pending = ranks.map(() => null);
    const draftB = mtpDraftLayerBuilder(b, config);
    const draftExtra = mtpDraftExtraInputs(b, config, o.subLayers, T);
    const host = mtpHostLayer(config);
    for (const sub of ['attn', 'mlp'] as const)
      dumpRanks(`mtp.${sub}`, hcStep(exitLayer, mtpHcPrefix(sub), `mtp.${sub}`, subLayer(draftB, sub, host, `mtp.${sub}`, draftExtra)));
    // the MTP head's router choice, as each layer's (every rank routes all T rows)
    if (o.dump && b.has(`r0/mtp.mlp/${MOE_TOPK_IDS}`)) dump('mtp.mlp.topk_ids', `r0/mtp.mlp/${MOE_TOPK_IDS}`);
    const xm = ranks.map((r) => buildHcMix(b, hcCtx(r, exitLayer, mtpHcPrefix('mixer'), 'mtp.mixer'), streams[r], pending[r], false).x);
    const hm = rows === T ? xm : gather(xm, h, exitLayer, 'mtp.mixer_out');
    const draft = buildLmHead(b, { config, tp, tokens: T, rows: logitsRows, scope: 'mtp.lm_head', layer: exitLayer }, hm);
    mtp = { logits: draft.logits[0], draftTokens: draft.ids[0], draftIds: input[0].draftIds };
    for (const id of [mtp.logits, mtp.draftTokens, mtp.draftIds]) output(id);
    dump('mtp.logits', draft.logits[0]);
    inputs = { ids: extra.ids, feeds: (tokenIds) => new Map([...extra.feeds(tokenIds), ...draftExtra.feeds(tokenIds)]) };
  }
  return {
    graph: b.build(),
    outputs: { h: final[0], mtpState, streamsPerStep, logits: head.logits[0], nextTokens: head.ids[0], mtp, dumpValues, rankValues },
    extra: inputs,
  };
}

/** The PLE's n-gram ids [T, heads] of `layer` (rank 0): the output of its pleNgramIds node. */
function pleNgramIdsOf(b: GraphBuilder, layer: number): ValueId {
  const node = b.build().nodes.find((nd) => nd.op === 'pleNgramIds' && nd.layer === layer && nd.rank === 0);
  if (!node?.outputs[0]) throw new Error(`decoder graph: PLE layer ${layer} has no pleNgramIds node to dump`);
  return node.outputs[0];
}

/**
 * The per-row kept-token counts [T] of `layer`'s QSA selection on rank 0 (every rank holds
 * the same selection), added for the dump only; null on a layer without a QSA selection.
 */
function keptCountsOf(b: GraphBuilder, config: ModelConfig, layer: number, tokens: number): ValueId | null {
  const scope = `L${layer}.attn`;
  const blocks = `r0/${scope}/${QSA_BLOCKS}`;
  if (!b.has(blocks)) return null;
  const kept = b.value(`r0/${scope}/kept`, [tokens], 'i32', 0);
  b.node({
    op: 'qsaKeptCount',
    rank: 0,
    layer,
    scope: `${scope}.kept`,
    inputs: [blocks],
    outputs: [kept],
    attrs: { compressRatio: config.attention.indexer.compressRatio },
  });
  return kept;
}
