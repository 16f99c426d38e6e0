import { HC_QUANT_ROWS_MAX } from '../sp/gate.ts';
import type { ModelConfig } from '../config/modelConfig.ts';
import { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from '../collectives/ringAllReduce.ts';
import type { Graph, ValueId } from '../graph/graph.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import type { RoundingContract } from '../hc/hcContract.ts';
import type { LogitsRows } from '../layers/mtp/lmHeadGraph.ts';
import type { Fp8Format } from '../numerics/fp8.ts';
import { Rng } from '../numerics/rng.ts';
import type { TopkTies } from '../numerics/topkTies.ts';
import { readSpMinTokens } from '../sp/gate.ts';
import { planForward, type SpPlan } from '../sp/plan.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { buildDecoderGraph, type DecoderOutputs, type RingParams } from './decoderGraph.ts';
import { keepFp8Weights } from './fp8WeightLinears.ts';
import { modelWeightSpecs } from './modelWeights.ts';
import type { SubLayerBuilders } from './subLayerBuilders.ts';
import { SyntheticWeightSource } from './syntheticWeights.ts';
import type { WeightSource } from './weightSource.ts';

export type SpMode = 'auto' | 'on' | 'off';

export interface PrefillOptions {
  config: ModelConfig;
  tokens: number;
  tp: number;
  /** auto: the production gate; on: shard even below the thresholds (testing); off: never */
  sp: SpMode;
  reduce: ReduceAlgorithm;
  ring?: RingParams;
  seed: number;
  subLayers: SubLayerBuilders;
  contract?: RoundingContract;
  /** moeRoute's and qsaSelect's tie rule (DecoderGraphOptions.ties); absent: the contract's */
  ties?: TopkTies;
  mtp?: boolean;
  /** rows of the LM and MTP logits: the last position (default) or all */
  logits?: LogitsRows;
  /** the MTP drafter's HC work under SP: on the gathered state (default) or on row shards */
  mtpDrafter?: 'gathered' | 'sharded';
  /** expose the golden-dump values (DecoderOutputs.dumpValues) */
  dump?: boolean;
  /** the FP8 PTPC path's format (DecoderGraphOptions.fp8); null or absent: bf16 */
  fp8?: Fp8Format | null;
  /**
   * the FP8 activation quantization's place instead of the plan's: 'separate' (a quant op on
   * the gathered rows) anywhere, 'fused' (in the HC mix) only where the plan allows it
   * (unsharded, T <= HC_QUANT_ROWS_MAX): to compare the two paths on the same rows
   */
  quant?: 'fused' | 'separate';
  /** the decoder layers [A, B) (a pipeline stage; default all) */
  layers?: [number, number];
  /** DecoderGraphOptions.qsaSelection */
  qsaSelection?: 'replicated' | 'rowSharded';
  /** DecoderGraphOptions.pleTable */
  pleTable?: 'gathered' | 'vocabParallel';
  /** the prompt's token ids (validated against the vocabulary); default: seeded ids */
  ids?: Int32Array;
  /** a checkpoint; default: seeded synthetic weights */
  weights?: WeightSource;
  /**
   * linears whose weights the checkpoint stores as per-channel FP8: 'device' (default) runs
   * them as FP8 GEMMs on the stored bytes (fp8WeightLinears.ts; in `fp8`'s format when
   * given, e4m3fn converting to e4m3fnuz), 'dequantize' as bf16 GEMMs on weights dequantized
   * on read
   */
  fp8Weights?: 'device' | 'dequantize';
  /** where ATOM_QWEN4_EXP_SP_MIN_TOKENS is read for sp 'auto' */
  env?: Record<string, string | undefined>;
}

export interface PreparedPrefill {
  plan: SpPlan;
  graph: Graph;
  outputs: DecoderOutputs;
  feeds: Map<ValueId, Tensor>;
  weights: WeightSource;
  tokenIds: Int32Array;
  /** linears run as FP8 GEMMs on the checkpoint's FP8 weights */
  fp8WeightLinears: number;
}

/** Seeded token ids, uniform over the vocabulary (EOS included, as in real packed batches). */
export function seededTokenIds(config: ModelConfig, tokens: number, seed: number): Int32Array {
  const rng = new Rng(seed);
  return Int32Array.from({ length: tokens }, () => rng.int(0, config.vocabSize));
}

/**
 * The SP plan under a mode: 'auto' is the production gate (reading
 * ATOM_QWEN4_EXP_SP_MIN_TOKENS from env), 'off' is the variable's own "0 disables", 'on'
 * skips the token thresholds (testing) but keeps tp > 1 and the layer condition.
 */
export function planForMode(
  config: ModelConfig,
  tokens: number,
  tp: number,
  sp: SpMode,
  env: Record<string, string | undefined>,
  mtp: boolean,
  layers?: [number, number],
): SpPlan {
  return planForward({
    config,
    tokens,
    tp,
    minTokens: sp === 'off' ? 0 : readSpMinTokens(sp === 'auto' ? env : {}),
    capturing: false,
    mtp,
    force: sp === 'on',
    ...(layers ? { layers } : {}),
  });
}

/** Plans a prefill, builds its graph and gathers what any backend needs to run it. */
export function preparePrefill(o: PrefillOptions): PreparedPrefill {
  const mtp = o.mtp ?? o.config.mtp;
  const planned = planForMode(o.config, o.tokens, o.tp, o.sp, o.env ?? {}, mtp, o.layers);
  if (o.quant === 'fused' && planned.quant !== 'fused') {
    throw new Error(
      `prefill: quant=fused needs the unsharded path with T <= ${HC_QUANT_ROWS_MAX} (the mix quantizes at most that many rows); this plan (SP ${planned.sp ? 'on' : 'off'}, T ${o.tokens}) quantizes separately`,
    );
  }
  const plan = o.quant ? { ...planned, quant: o.quant } : planned;
  const {
    graph: built,
    outputs,
    extra,
  } = buildDecoderGraph({
    config: o.config,
    plan,
    reduce: o.reduce,
    ring: o.ring ?? { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS },
    contract: o.contract ?? 'atom',
    ...(o.ties ? { ties: o.ties } : {}),
    subLayers: o.subLayers,
    logits: o.logits,
    mtpDrafter: o.mtpDrafter,
    dump: o.dump,
    fp8: o.fp8 ?? null,
    qsaSelection: o.qsaSelection,
    pleTable: o.pleTable,
  });
  const weights = o.weights ?? new SyntheticWeightSource(modelWeightSpecs(o.config, o.subLayers), o.seed);
  const { graph, linears: fp8WeightLinears } =
    o.fp8Weights === 'dequantize' ? { graph: built, linears: 0 } : keepFp8Weights(built, weights, o.fp8 ?? undefined);
  const tokenIds = o.ids ?? seededTokenIds(o.config, o.tokens, o.seed);
  if (tokenIds.length !== o.tokens) throw new Error(`prefill: ${tokenIds.length} token ids given for ${o.tokens} tokens`);
  const bad = tokenIds.findIndex((v) => !(v >= 0 && v < o.config.vocabSize));
  if (bad >= 0)
    throw new Error(`prefill: token id ${tokenIds[bad]} at position ${bad} is outside the vocabulary [0, ${o.config.vocabSize}) of config '${o.config.name}'`);
  const feeds = new Map<ValueId, Tensor>([['ids', { dtype: 'i32', shape: [o.tokens], data: tokenIds }], ...extra.feeds(tokenIds)]);
  return { plan, graph, outputs, feeds, weights, tokenIds, fp8WeightLinears };
}
