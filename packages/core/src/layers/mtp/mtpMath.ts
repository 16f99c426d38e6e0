import { bf16ArrayToF32, bf16ToF32, f32ToBf16 } from '../../numerics/bf16.ts';
import { combineNorm } from '../../hc/combineNorm.ts';
import { linearBf16 } from '../linearMath.ts';

// The MTP head's input stage (ATOM Qwen4ExpMultiTokenPredictor.forward), per draft row t:
//   ee   = fc_embedding(RMS1p_H(embed_tokens[id]))              [H]
//   hh   = RMS1p over all n*H values of the target's pre-mixer HC state X[t] (one group)
//   X0_s = bf(fc_hidden(hh_s) + ee)   for each stream s          (fc_hidden shared by streams)
// X0 [T, n*H] then enters the draft decoder layer (mtp.layers.0), whose output streams go
// through mtp.hyper_connection_mixer.mix and the shared lm_head. RMS1p is ATOM's
// Qwen4ExpGroupedRMSNorm (gemma_rmsnorm_triton): fp32 inside, weight (1 + w), one rounding,
// which is combineNorm with a single group of the given width.

const fr = Math.fround;

export interface MtpHeadWeights {
  /** mtp.pre_fc_norm_embedding.weight [H] */
  normEmbedding: Uint16Array;
  /** mtp.pre_fc_norm_hidden.weight [n*H] */
  normHidden: Uint16Array;
  /** mtp.fc_embedding.weight [H, H] */
  fcEmbedding: Uint16Array;
  /** mtp.fc_hidden.weight [H, H] */
  fcHidden: Uint16Array;
}

/**
 * The drafter's token stream (ATOM eagle_proposer: the target's ids shifted by one, the
 * last row taking the token just sampled, positions = target positions + 1): row t drafts
 * from the state of token t with the id of token t+1.
 */
export function mtpDraftInputs(ids: readonly number[], nextToken: number, firstPosition = 0): { ids: number[]; positions: number[] } {
  if (ids.length === 0) throw new Error('mtpDraftInputs: no target tokens');
  return {
    ids: [...ids.slice(1), nextToken],
    positions: ids.map((_, t) => firstPosition + t + 1),
  };
}

/**
 * X0 of the draft layer from `embedded` (embed_tokens rows of the draft ids, [rows, H]) and
 * the gathered target state `state` ([rows, n*H], pending combine applied).
 */
export function mtpLayerInput(embedded: Uint16Array, state: Uint16Array, w: MtpHeadWeights, rows: number, h: number, n: number, eps: number): Uint16Array {
  const width = n * h;
  if (embedded.length !== rows * h) throw new Error(`mtpLayerInput: embedded has ${embedded.length} values, expected ${rows}x${h}`);
  if (state.length !== rows * width) throw new Error(`mtpLayerInput: state has ${state.length} values, expected ${rows}x${width}`);
  if (w.fcEmbedding.length !== h * h || w.fcHidden.length !== h * h) throw new Error(`mtpLayerInput: fc_embedding and fc_hidden must be ${h}x${h}`);
  const en = combineNorm(embedded, null, null, w.normEmbedding, rows, h, 1, eps, 'atom').normed;
  const ee = linearBf16(bf16ArrayToF32(en), bf16ArrayToF32(w.fcEmbedding), rows, h, h);
  const hn = combineNorm(state, null, null, w.normHidden, rows, width, 1, eps, 'atom').normed;
  // [rows, n*H] is [rows*n, H] row-major: fc_hidden runs once over every stream of every row
  const hh = linearBf16(bf16ArrayToF32(hn), bf16ArrayToF32(w.fcHidden), rows * n, h, h);
  const x0 = new Uint16Array(rows * width);
  for (let t = 0; t < rows; t++) {
    for (let s = 0; s < n; s++) {
      for (let j = 0; j < h; j++) {
        const i = t * width + s * h + j;
        x0[i] = f32ToBf16(fr(bf16ToF32(hh[i]) + bf16ToF32(ee[t * h + j])));
      }
    }
  }
  return x0;
}
