// The prefill's graph, built as preparePrefill builds it but without its feeds (token ids,
// RoPE tables: T-sized allocations), so that its memory can be judged before any of it.
// The linears a checkpoint stores as per-channel FP8 are rewritten as preparePrefill
// rewrites them (keepFp8Weights), so they count as their FP8 bytes and F32 scales, not bf16.
import {
  buildDecoderGraph,
  keepFp8Weights,
  modelWeightSpecs,
  planForMode,
  RING_DEFAULT_CHANNELS,
  RING_DEFAULT_CHUNK_ELEMS,
  type Fp8Format,
  type Fp8WeightLookup,
  type ModelConfig,
  type ReduceAlgorithm,
  type SpMode,
  type SubLayerBuilders,
  type WeightSource,
} from '@hcsp/core';
import { estimateGraphMemory, type MemoryEstimate } from './memoryEstimate.ts';

export interface PrefillShape {
  config: ModelConfig;
  tokens: number;
  tp: number;
  sp: SpMode;
  reduce: ReduceAlgorithm;
  subLayers: SubLayerBuilders;
  /** DecoderGraphOptions.pleTable */
  pleTable?: 'gathered' | 'vocabParallel';
  env: Record<string, string | undefined>;
  /** weights from a checkpoint (each rank reads its slice) instead of synthetic ones */
  checkpoint: boolean;
  /**
   * the weight source preparePrefill will read, when it can serve FP8 weights (a checkpoint),
   * and the FP8 format the run asks for (--fp8; absent: the checkpoint's)
   */
  fp8Weights?: { source: WeightSource & Fp8WeightLookup; format?: Fp8Format };
}

export function estimatePrefillMemory(p: PrefillShape): MemoryEstimate {
  const plan = planForMode(p.config, p.tokens, p.tp, p.sp, p.env, p.config.mtp);
  const { graph } = buildDecoderGraph({
    config: p.config,
    plan,
    reduce: p.reduce,
    ring: { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS },
    contract: 'atom',
    subLayers: p.subLayers,
    pleTable: p.pleTable,
  });
  const run = p.fp8Weights ? keepFp8Weights(graph, p.fp8Weights.source, p.fp8Weights.format).graph : graph;
  return estimateGraphMemory(run, p.checkpoint ? { kind: 'checkpoint' } : { kind: 'synthetic', specs: modelWeightSpecs(p.config, p.subLayers) });
}
