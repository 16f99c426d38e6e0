import type { ModelConfig } from '../config/modelConfig.ts';

/** Where a sub-layer's nodes go: which layer, which rank of how many, how many tokens. */
export interface SubLayerContext {
  config: ModelConfig;
  layer: number;
  rank: number;
  tp: number;
  tokens: number;
  /** prefix of the value ids and node scopes, e.g. "L3.attn" */
  scope: string;
}
