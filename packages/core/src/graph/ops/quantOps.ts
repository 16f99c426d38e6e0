import { COUNT, FP8_FORMAT, QUANT_STYLE, SCALE_ORDER } from './attrSpecs.ts';
import { bf16, defineOp, f32, FP8, port, weight } from './opDef.ts';
import type { ValueInfo } from './shapeRules.ts';
import { fp8Dtype, info, num } from './shapeRules.ts';

// FP8 PTPC (model.md "FP8", numerics.md "Per-token (row) quantization", sequence-parallel.md
// "FP8 input quantization path"). `format` is 'e4m3fn' or 'e4m3fnuz' (it follows the target
// GPU and decides the fp8 dtype). `style` picks the arithmetic of a per-token quantization:
// 'reciprocal' scale = fl(amax * fl(1/fp8_max)), q = cvt(fl(x * fl(1/scale))) (the separate
// aiter kernel; its v_rcp_f32 is modelled as the correctly rounded fl(1/scale));
// 'divide' scale = fl(amax / fp8_max), q = cvt(fl(x / scale)) (the fused
// hc_gated_mean_quant). Production pairs quantFp8PerToken with 'reciprocal' and
// hcGatedMeanQuant with 'divide' (PRODUCTION_QUANT_STYLE). Both take amax over the bf16
// values they quantize; a zero row gets scale 1; cvt rounds to nearest even and saturates.

/** the quantized rows and their per-row scales */
const QUANTIZED = [port('q', FP8), f32('scale')];
/** QUANTIZED's shapes for [rows, cols] quantized to the op's `format` */
const quantized = ([rows, cols]: [number, number], a: Readonly<Record<string, unknown>>): ValueInfo[] => [info([rows, cols], fp8Dtype(a)), info([rows], 'f32')];

export const quantFp8PerToken = defineOp({
  name: 'quantFp8PerToken',
  doc: "The separate per-token kernel over bf16 rows: amax = max |x| of the row; 'reciprocal': scale = fl(amax * fl(1/fp8_max)), q = cvt(fl(x * fl(1/scale))); 'divide': scale = fl(amax / fp8_max), q = cvt(fl(x / scale)); a zero row gets scale 1 and q = 0; cvt RNE, saturating.",
  inputs: [bf16('x')],
  outputs: QUANTIZED,
  attrs: { format: FP8_FORMAT, style: QUANT_STYLE },
  opClass: 'quant',
  costFamily: 'other',
  shape: (ins, a, r) => quantized(r.mat(ins, 0, 'x'), a),
});

export const hcGatedMeanQuant = defineOp({
  name: 'hcGatedMeanQuant',
  doc: "Fused gated mean + per-token quant (hc_gated_mean_quant): x = hcGatedMean's 'atom' bits, bf(fl(acc / n)) with acc = fl(acc + fl(sigmoid(up_s) * normed_s)) over s = 0..n-1; then x's bf16 rows are quantized exactly as quantFp8PerToken with the same style does (amax over the bf16 x, not over the fp32 mean).",
  inputs: [bf16('up'), bf16('normed')],
  outputs: [bf16('x'), ...QUANTIZED],
  attrs: { streams: COUNT, format: FP8_FORMAT, style: QUANT_STYLE },
  opClass: 'quant',
  costFamily: 'hc',
  shape: (ins, a, r) => {
    const [normed, rows, width] = r.matrixPort(ins, 1, 'normed');
    r.sameAs(ins, 0, 'up', normed);
    const h = r.split(width, num(a, 'streams'), "input 'normed'");
    return [info([rows, h], 'bf16'), ...quantized([rows, h], a)];
  },
});

export const fp8QuantWeightPerChannel = defineOp({
  name: 'fp8QuantWeightPerChannel',
  doc: "ATOM's online per-output-channel weight quantization (quant_weight_online -> aiter per_token_quant_hip over W's rows [out, in]): sw[o] = fl(amax(|W[o,:]|) * fl(1/fp8_max)) (1 for a zero row), qW = cvt(fl(W * fl(1/sw[o]))), i.e. quantFp8PerToken 'reciprocal' on the rows of W.",
  inputs: [weight('w')],
  outputs: QUANTIZED,
  attrs: { format: FP8_FORMAT },
  opClass: 'quant',
  costFamily: 'other',
  shape: (ins, a, r) => quantized(r.mat(ins, 0, 'w'), a),
});

export const fp8LinearPtpc = defineOp({
  name: 'fp8LinearPtpc',
  doc: "FP8 PTPC GEMM (aiter gemm_a8w8_bpreshuffle): acc = sum_k dec(q[t,k]) * dec(qW[o,k]) in fp32, k = 0..K-1 in order (each fp8 product is exact); scaleOrder 'weightFirst' (CK MultiplyMultiply): y = bf(fl(fl(acc * sw[o]) * sx[t])), 'tokenFirst' (CK-tile MultiDMultiply): y = bf(fl(fl(acc * sx[t]) * sw[o])); one RNE rounding to bf16.",
  inputs: [port('q', FP8), f32('sx'), weight('qW', FP8), weight('sw', ['f32'])],
  outputs: [bf16('y')],
  attrs: { format: FP8_FORMAT, scaleOrder: SCALE_ORDER },
  opClass: 'gemm',
  costFamily: 'gemm',
  shape: (ins, a, r) => {
    const dtype = fp8Dtype(a);
    const q = r.port(ins, 0, 'q');
    const qW = r.port(ins, 2, 'qW');
    const [rows, k] = r.matrix(q, 'q');
    const [out] = r.matrix(qW, 'qW', k);
    r.fp8(q, 'q', dtype, a);
    r.fp8(qW, 'qW', dtype, a);
    // both scales present before either's length is checked
    r.port(ins, 1, 'sx');
    r.port(ins, 3, 'sw');
    r.vec(ins, 1, 'sx', rows);
    r.vec(ins, 3, 'sw', out);
    return [info([rows, out], 'bf16')];
  },
});
