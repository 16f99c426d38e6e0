// fp8LinearPtpc (core graph/ops/quantOps.ts, layers/fp8Linear.ts): y[t,o] =
// bf(scaled(sum_k dec(q[t,k]) * dec(qW[o,k]))), one invocation per packed bf16 output word,
// each element's sum in fp32 in k order 0..K-1 as the CPU reference. Every fp8 x fp8 product
// is exact in fp32 (at most 8 significant bits, never below 2^-20), so a fused or separate
// multiply-add gives the same bits and no GPU flushing touches the sum. The epilogue applies
// the scales in `scaleOrder`; it differs from the CPU only where acc * (first scale) or the
// result is a nonzero fp32 below 2^-126, which SwiftShader flushes to zero.
import type { KernelPlan, KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP8_WGSL_FORMATS, type Fp8Format, fp8DecodeWgsl } from '../wgsl/fp8.wgsl.ts';
import { flatDispatch, packedWordsMain, readInput, writeOutput } from './planParts.ts';

const WG = 64;

const PTPC = preamble(
  ['n', 'words', 'k', 'outF', 'groupsX'],
  [buf('q', readInput(0)), buf('sx', readInput(1)), buf('qw', readInput(2)), buf('sw', readInput(3)), buf('y', writeOutput(0))],
);

function ptpcWgsl(format: 'e4m3fn' | 'e4m3fnuz', weightFirst: boolean): string {
  const epilogue = weightFirst ? '(acc * bitcast<f32>(sw[o])) * bitcast<f32>(sx[t])' : '(acc * bitcast<f32>(sx[t])) * bitcast<f32>(sw[o])';
  return `${BF16_WGSL}${fp8DecodeWgsl(format)}
${PTPC.wgsl}
fn byte_at(i: u32, w: u32) -> u32 { return (w >> ((i & 3u) * 8u)) & 0xffu; }
// bf16 bits of output element i; a NaN operand makes the sum NaN, as on the CPU
fn value_bits(i: u32) -> u32 {
  let t = i / u.outF;
  let o = i % u.outF;
  let xb = t * u.k;
  let wb = o * u.k;
  var acc: f32 = 0.0;
  var nan = false;
  for (var j = 0u; j < u.k; j = j + 1u) {
    let xi = xb + j;
    let wi = wb + j;
    let a = byte_at(xi, q[xi >> 2u]);
    let b = byte_at(wi, qw[wi >> 2u]);
    nan = nan || fp8_is_nan(a) || fp8_is_nan(b);
    acc = acc + fp8_to_f32(a) * fp8_to_f32(b);
  }
  if (nan) { return 0x7fc0u; }
  return f32_to_bf16(${epilogue});
}
${packedWordsMain(WG, 'value_bits', 'u.n', 'y')}`;
}

export const fp8LinearPtpcPlanner: KernelPlanner = (inputs, _outputs, attrs): KernelPlan => {
  const f = FP8_WGSL_FORMATS[attrs.format as Fp8Format];
  const order = attrs.scaleOrder as 'weightFirst' | 'tokenFirst';
  const [rows, k] = inputs[0]!.shape;
  const [outF] = inputs[2]!.shape;
  const n = rows * outF;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  return {
    scratch: [],
    dispatches: [
      flatDispatch(`fp8LinearPtpc-${f.format}-${order}`, ptpcWgsl(f.format, order === 'weightFirst'), PTPC.bindings, words, WG, [n, words, k, outF]),
    ],
  };
};
