import { defineOp } from './opDef.ts';
import { info, num, ShapeRule } from './shapeRules.ts';
import { fp8Info, type Fp8Format } from '../../numerics/fp8.ts';
import { QUANT_STYLES } from '../../numerics/quant.ts';

// Per-token fp8 quantization of the sub-layers' inputs (numerics.md "Per-token (row)
// quantization", sequence-parallel.md "FP8 input quantization path"). `format` is
// 'e4m3fn' or 'e4m3fnuz' (it follows the target GPU and decides q's dtype); `style` is
// 'divide' (x / scale) or 'reciprocal' (x * (1/scale)), the two production kernel styles.
export const quantFp8PerToken = defineOp({
  name: 'quantFp8PerToken',
  doc: 'The separate per-token kernel: scale = fround(amax(|x_row|) / fp8_max) over the bf16 row (1 for a zero row), q = cvt(x / scale) RNE and saturating.',
  inputs: [{ name: 'x', dtypes: ['bf16'] }],
  outputs: [
    { name: 'q', dtypes: ['fp8e4m3fn', 'fp8e4m3fnuz'] },
    { name: 'scale', dtypes: ['f32'] },
  ],
  attrs: { format: { kind: 'string', oneOf: ['e4m3fn', 'e4m3fnuz'] }, style: { kind: 'string', oneOf: QUANT_STYLES } },
  opClass: 'quant',
  shape: (ins, a) => {
    const r = new ShapeRule('quantFp8PerToken');
    const [rows, cols] = r.matrix(r.port(ins, 0, 'x'), 'x');
    return [info([rows, cols], fp8Info(a.format as Fp8Format).dtype), info([rows], 'f32')];
  },
});

export const hcGatedMeanQuant = defineOp({
  name: 'hcGatedMeanQuant',
  doc: "Fused gated mean + quant (ATOM hc_gated_mean_quant): v = fround(acc / n), acc = fround(acc + fround(sigmoid(up_s) * normed_s)) over s = 0..n-1; x = bf(v) (hcGatedMean's 'atom' bits); scale from amax over the fp32 v before rounding; q = cvt(x / scale) saturating.",
  inputs: [
    { name: 'up', dtypes: ['bf16'] },
    { name: 'normed', dtypes: ['bf16'] },
  ],
  outputs: [
    { name: 'x', dtypes: ['bf16'] },
    { name: 'q', dtypes: ['fp8e4m3fn', 'fp8e4m3fnuz'] },
    { name: 'scale', dtypes: ['f32'] },
  ],
  attrs: { streams: { kind: 'int', min: 1 }, format: { kind: 'string', oneOf: ['e4m3fn', 'e4m3fnuz'] }, style: { kind: 'string', oneOf: QUANT_STYLES } },
  opClass: 'quant',
  shape: (ins, a) => {
    const r = new ShapeRule('hcGatedMeanQuant');
    const normed = r.port(ins, 1, 'normed');
    const [rows, width] = r.matrix(normed, 'normed');
    r.same(r.port(ins, 0, 'up'), normed, 'up');
    const h = r.split(width, num(a, 'streams'), "input 'normed'");
    return [info([rows, h], 'bf16'), info([rows, h], fp8Info(a.format as Fp8Format).dtype), info([rows], 'f32')];
  },
});
