// hcCombineNorm: the pending combine (when blockOut and raw are bound) fused with the
// grouped RMS norm, one invocation per (row, stream) group of H elements, mirroring
// core/hc/combineNorm.ts: X = bf(X + y * inj_s) ('hf': bf(X + bf(y * inj_s))); sumsq over j
// in order (fp32); rstd = 1/sqrt(fp32(sumsq / H) + eps); normed = bf((X * rstd) * (1 + w)),
// the norm the same under both contracts (HF's RMSNorm computes in fp32 and rounds once).
// H must be even so that every group starts on a word and groups never share a word.
import type { KernelBinding, KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { contractOf, injectScaleWgsl } from './elementwiseBf16.ts';
import { f32Bits, flatDispatch, flatMain, readInput, requireIntAttr, requireTensor, writeOutput } from './planParts.ts';

function combineNormKernel(pending: boolean, contract: 'atom' | 'hf'): { wgsl: string; bindings: KernelBinding[] } {
  const combineInputs = pending ? [buf('blk', readInput(1)), buf('raw', readInput(2))] : [];
  const pre = preamble(
    ['rows', 'n', 'h', 'eps: f32', 'groupsX'],
    [buf('xin', readInput(0)), ...combineInputs, buf('nw', readInput(3)), buf('xout', writeOutput(0)), buf('normed', writeOutput(1))],
  );
  const prod = (v: string) => (contract === 'atom' ? `${v} * inj` : `rbf(${v} * inj)`);
  const combine = pending
    ? `let rawBits = (raw[(t * u.n + s) >> 1u] >> (((t * u.n + s) & 1u) * 16u)) & 0xffffu;
  let inj = inject_scale(bitcast<f32>(rawBits << 16u), f32(u.n));
  let yb = t * u.h / 2u;
  for (var q = 0u; q < hw; q = q + 1u) {
    let xw = xin[base + q];
    let yw = blk[yb + q];
    xout[base + q] = pack_bf16(bf16_lo(xw) + ${prod('bf16_lo(yw)')}, bf16_hi(xw) + ${prod('bf16_hi(yw)')});
  }`
    : `for (var q = 0u; q < hw; q = q + 1u) { xout[base + q] = xin[base + q]; }`;
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}
${pre.wgsl}
${ROUND_BF16_WGSL}
${pending ? injectScaleWgsl(contract) : ''}
${flatMain(
  64,
  'u.rows * u.n',
  `let t = inv / u.n;
  let s = inv % u.n;
  let hw = u.h / 2u;
  let base = (t * u.n + s) * hw;
  ${combine}
  var sumsq: f32 = 0.0;
  for (var q = 0u; q < hw; q = q + 1u) {
    let xw = xout[base + q];
    let lo = bf16_lo(xw);
    let hi = bf16_hi(xw);
    sumsq = sumsq + lo * lo;
    sumsq = sumsq + hi * hi;
  }
  let rstd = rsqrt_f32(sumsq / f32(u.h) + u.eps);
  let wb = s * hw;
  for (var q = 0u; q < hw; q = q + 1u) {
    let xw = xout[base + q];
    let ww = nw[wb + q];
    normed[base + q] = pack_bf16((bf16_lo(xw) * rstd) * (1.0 + bf16_lo(ww)), (bf16_hi(xw) * rstd) * (1.0 + bf16_hi(ww)));
  }`,
)}`;
  return { wgsl, bindings: pre.bindings };
}

export const hcCombineNormPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'hcCombineNorm: input x');
  const blk = inputs[1] ?? null;
  const raw = inputs[2] ?? null;
  const w = requireTensor(inputs[3], 'hcCombineNorm: input normWeight');
  requireTensor(outputs[0], 'hcCombineNorm: output x');
  requireTensor(outputs[1], 'hcCombineNorm: output normed');
  const contract = contractOf(attrs, 'hcCombineNorm');
  const n = requireIntAttr(attrs, 'streams', 'hcCombineNorm', 1);
  const eps = attrs.eps;
  if (typeof eps !== 'number' || !(eps >= 0)) throw new Error(`hcCombineNorm: eps = ${String(eps)} is not a non-negative number`);
  if ((blk === null) !== (raw === null)) throw new Error('hcCombineNorm: blockOut and raw come together (the pending combine) or not at all');
  if (x.shape.length !== 2 || x.shape[1] % n !== 0) throw new Error(`hcCombineNorm: x must be [rows, ${n}*H], got [${x.shape.join(',')}]`);
  const [rows, width] = x.shape;
  const h = width / n;
  if (h % 2 !== 0) throw new Error(`hcCombineNorm: H = ${h} is odd; the WGSL kernel needs whole bf16 words per stream`);
  if (w.shape.length !== 1 || w.shape[0] !== width) throw new Error(`hcCombineNorm: normWeight is [${w.shape.join(',')}], expected [${width}]`);
  if (blk && (blk.shape[0] !== rows || blk.shape[1] !== h)) throw new Error(`hcCombineNorm: blockOut is [${blk.shape.join(',')}], expected [${rows},${h}]`);
  if (raw && (raw.shape[0] !== rows || raw.shape[1] !== n)) throw new Error(`hcCombineNorm: raw is [${raw.shape.join(',')}], expected [${rows},${n}]`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const pending = blk !== null;
  const kernel = combineNormKernel(pending, contract);
  const key = `hcCombineNorm-${pending ? 'pending' : 'plain'}-${contract}`;
  return { scratch: [], dispatches: [flatDispatch(key, kernel.wgsl, kernel.bindings, rows * n, 64, [rows, n, h, f32Bits(eps)])] };
};
