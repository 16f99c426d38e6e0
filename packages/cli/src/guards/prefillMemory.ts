// The prefill's graph, built as preparePrefill builds it but without its feeds (token ids,
// RoPE tables: T-sized allocations), so that its memory can be judged before any of it.
import {
  buildDecoderGraph,
  modelWeightSpecs,
  planForMode,
  RING_DEFAULT_CHANNELS,
  RING_DEFAULT_CHUNK_ELEMS,
  type ModelConfig,
  type ReduceAlgorithm,
  type SpMode,
  type SubLayerBuilders,
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
  return estimateGraphMemory(graph, p.checkpoint ? { kind: 'checkpoint' } : { kind: 'synthetic', specs: modelWeightSpecs(p.config, p.subLayers) });
}
