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
  /**
   * Row-sharded QSA selection (sequence parallelism): rank r selects for its query rows
   * [r * qsaRowChunk, (r + 1) * qsaRowChunk) only and the selections are all-gathered
   * (qsaRowChunk * tp >= tokens; the SP chunk). Absent: every rank selects for all rows, as
   * ATOM does under TP. Both give the same kept sets, bit for bit.
   */
  qsaRowChunk?: number;
}
