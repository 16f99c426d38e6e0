import type { ModelConfig } from '../config/modelConfig.ts';
import type { ValueId } from '../graph/graph.ts';
import type { Fp8Format } from '../numerics/fp8.ts';
import type { TopkTies } from '../numerics/topkTies.ts';

/** A per-token fp8 quantization of a sub-layer input [T, H]: q (fp8) and its f32 scales [T]. */
export interface Fp8Rows {
  q: ValueId;
  scale: ValueId;
}

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
   * The FP8 PTPC path (model.md "FP8"): the sub-layer's FP8 GEMMs run in `format`; `x` is the
   * input's quantization fused into the HC mix (plan.quant 'fused'); without it the layer
   * quantizes its bf16 input rows itself (plan.quant 'separate'). Absent: bf16 GEMMs only.
   */
  fp8?: { format: Fp8Format; x?: Fp8Rows };
  /**
   * Row-sharded QSA selection (sequence parallelism): rank r selects for its query rows
   * [r * qsaRowChunk, (r + 1) * qsaRowChunk) only and the selections are all-gathered
   * (qsaRowChunk * tp >= tokens; the SP chunk). Absent: every rank selects for all rows, as
   * ATOM does under TP. Both give the same kept sets, bit for bit.
   */
  qsaRowChunk?: number;
  /**
   * The 'hf-eager' rounding contract (hc/hcContract.ts): the sub-layer rounds where HF's eager
   * PyTorch paths store bf16 (op attributes chosen here, e.g. gdnConvSilu roundConv). Absent:
   * the fused kernels' roundings ('atom' and 'hf').
   */
  eager?: boolean;
  /**
   * moeRoute's and qsaSelect's tie rule (numerics/topkTies.ts): 'torch-cpu' under the
   * 'hf-eager' contract unless the forward asks otherwise. Absent: 'lower-index' (ATOM's).
   */
  ties?: TopkTies;
}

/** moeRoute's and qsaSelect's `ties` attribute for this context: absent for the default rule, so those graphs stay as they were */
export function tiesAttr(ctx: SubLayerContext): { ties?: TopkTies } {
  return ctx.ties === 'torch-cpu' ? { ties: 'torch-cpu' } : {};
}
