// FP8 PTPC linear (model.md "FP8"): per-token activation scales x per-channel weight
// scales. Both operands come from the same per-row quantizer (numerics/quant.ts):
//   weights: ATOM's online quantization (LinearBase.online_quantize_weight ->
//     quant_weight_online -> aiter get_hip_quant(per_Token) = per_token_quant_hip) runs
//     the separate kernel over W's rows [out, in]: sw[o] = fl(amax(|W[o,:]|) * fl(1/max)),
//     qW = cvt(fl(W * rcp(sw))), i.e. the 'reciprocal' arithmetic, not a division;
//   activations: quantized by the caller with the kernel the plan chose.
// The GEMM (aiter gemm_a8w8_bpreshuffle) accumulates the exact fp8 products in fp32 and
// applies both scales in its epilogue, in an order that depends on the backend the tuned
// table picks per row count: CK's MultiplyMultiply computes c * d0 * d1 with d0 = w_scale,
// d1 = x_scale, i.e. fl(fl(acc * sw) * sx) ('weightFirst'); CK-tile's MultiDMultiply
// computes fl(fl(acc * sx) * sw) ('tokenFirst'). The bf16 output is one RNE rounding.
// Modelled: the k sum runs sequentially 0..K-1 (production tiles it over MFMA blocks, so
// bits can differ from hardware); each product of two fp8 values is exact in fp32.
import { f32ToBf16 } from '../numerics/bf16.ts';
import { type Fp8Format, fp8ArrayToF32 } from '../numerics/fp8.ts';
import { quantizeBf16RowsFp8, type RowQuant } from '../numerics/quant.ts';

export type PtpcScaleOrder = 'weightFirst' | 'tokenFirst';

/** The epilogue order of each aiter a8w8 bpreshuffle backend (the tuned CSV's libtype). */
export const PTPC_SCALE_ORDER_OF_GEMM = { ck: 'weightFirst', cktile: 'tokenFirst' } as const satisfies Record<string, PtpcScaleOrder>;

const fr = Math.fround;

/** Online per-output-channel quantization of a bf16 weight [outF, inF] (PyTorch layout). */
export function quantizeWeightPerChannel(w: Uint16Array, outF: number, inF: number, format: Fp8Format): RowQuant {
  return quantizeBf16RowsFp8(w, outF, inF, format, 'reciprocal');
}

function checkOperand(what: string, m: RowQuant, rows: number, cols: number): void {
  if (m.q.length !== rows * cols) throw new Error(`fp8LinearPtpc: ${what} has ${m.q.length} values, expected ${rows}x${cols}`);
  if (m.scale.length !== rows) throw new Error(`fp8LinearPtpc: ${what} needs ${rows} scales, got ${m.scale.length}`);
}

/**
 * out[t, o] = bf(scaled(sum_k qx[t,k] * qW[o,k])), the sum in fp32 in k order and the two
 * scales applied in `order`. x: [rows, inF] with per-row scales; w: [outF, inF] with
 * per-output-channel scales; both in `format`.
 */
export function fp8LinearPtpc(x: RowQuant, w: RowQuant, rows: number, inF: number, outF: number, format: Fp8Format, order: PtpcScaleOrder): Uint16Array {
  if (order !== 'weightFirst' && order !== 'tokenFirst') throw new Error(`fp8LinearPtpc: unknown scale order '${String(order)}'`);
  checkOperand('x', x, rows, inF);
  checkOperand('w', w, outF, inF);
  const xv = fp8ArrayToF32(x.q, format);
  const wv = fp8ArrayToF32(w.q, format);
  const y = new Uint16Array(rows * outF);
  for (let t = 0; t < rows; t++) {
    const sx = x.scale[t];
    for (let o = 0; o < outF; o++) {
      let acc = 0;
      for (let k = 0; k < inF; k++) acc = fr(acc + xv[t * inF + k] * wv[o * inF + k]);
      const sw = w.scale[o];
      y[t * outF + o] = f32ToBf16(order === 'weightFirst' ? fr(fr(acc * sw) * sx) : fr(fr(acc * sx) * sw));
    }
  }
  return y;
}
