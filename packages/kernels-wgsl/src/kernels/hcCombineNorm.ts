// hcCombineNorm: the pending combine (when blockOut and raw are bound) fused with the
// grouped RMS norm, mirroring core/hc/combineNorm.ts: X = bf(X + y * inj_s) ('hf':
// bf(X + bf(y * inj_s))); sumsq in fp32 in canonical reduction order v1; rstd =
// 1/sqrt(fp32(sumsq / H) + eps); normed = bf((X * rstd) * (1 + w)), the norm the same under
// both contracts (HF's RMSNorm computes in fp32 and rounds once).
// One workgroup of 64 invocations per (row, stream) group of H elements: invocation l is
// v1's lane l. It combines and stores the 8-element chunks at 8l + 512i (i in order), adding
// each stored value's square in element order; the 64 lane sums then meet in v1's xor
// butterfly through workgroup memory (at step m lane l < m adds lane l + m, which is l ^ m),
// and every invocation normalizes its own chunks with lane 0's total.
// H must be even so that every group and every chunk starts on a word and groups never share a word.
import { CANONICAL_CHUNK, CANONICAL_LANES } from '@hcsp/core';
import type { KernelBinding, KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { canonicalButterflyWgsl } from '../wgsl/canonicalSum.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { type Contract, injectScaleWgsl } from './elementwiseBf16.ts';
import { f32Bits, flatDispatch, flatInvocation, readInput, writeOutput } from './planParts.ts';

const LANES = CANONICAL_LANES;
/** words (two bf16 each) of one lane's chunk, and of one v1 step (a chunk of every lane) */
const CHUNK_WORDS = CANONICAL_CHUNK / 2;
const STEP_WORDS = LANES * CHUNK_WORDS;

function combineNormKernel(pending: boolean, contract: 'atom' | 'hf'): { wgsl: string; bindings: KernelBinding[] } {
  const combineInputs = pending ? [buf('blk', readInput(1)), buf('raw', readInput(2))] : [];
  const pre = preamble(
    ['rows', 'n', 'h', 'eps: f32', 'groupsX'],
    [buf('xin', readInput(0)), ...combineInputs, buf('nw', readInput(3)), buf('xout', writeOutput(0)), buf('normed', writeOutput(1))],
  );
  const prod = (v: string) => (contract === 'atom' ? `${v} * inj` : `rbf(${v} * inj)`);
  const inject = pending
    ? `let rawBits = (raw[pair >> 1u] >> ((pair & 1u) * 16u)) & 0xffffu;
  let inj = inject_scale(bitcast<f32>(rawBits << 16u), f32(u.n));
  let yb = t * hw;`
    : '';
  const stored = pending
    ? `let xw0 = xin[base + q];
        let yw = blk[yb + q];
        let xw = pack_bf16(bf16_lo(xw0) + ${prod('bf16_lo(yw)')}, bf16_hi(xw0) + ${prod('bf16_hi(yw)')});`
    : 'let xw = xin[base + q];';
  // the apply pass reads X back: the combined words this invocation stored, or the input
  const source = pending ? 'xout' : 'xin';
  const wg = flatInvocation(LANES, 'u.groupsX');
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}
${pre.wgsl}
${ROUND_BF16_WGSL}
${pending ? injectScaleWgsl(contract) : ''}
var<workgroup> lanes: array<f32, ${LANES}>;
@compute @workgroup_size(${LANES})
fn main(${wg.params}) {
  let pair = wid.x + wid.y * u.groupsX;
  if (pair >= u.rows * u.n) { return; }
  let t = pair / u.n;
  let s = pair % u.n;
  let hw = u.h / 2u;
  let base = pair * hw;
  let steps = (hw + ${STEP_WORDS - 1}u) / ${STEP_WORDS}u;
  ${inject}
  var acc: f32 = 0.0;
  for (var i = 0u; i < steps; i = i + 1u) {
    for (var k = 0u; k < ${CHUNK_WORDS}u; k = k + 1u) {
      let q = i * ${STEP_WORDS}u + lid * ${CHUNK_WORDS}u + k;
      if (q < hw) {
        ${stored}
        xout[base + q] = xw;
        let lo = bf16_lo(xw);
        let hi = bf16_hi(xw);
        acc = acc + lo * lo;
        acc = acc + hi * hi;
      }
    }
  }
  ${canonicalButterflyWgsl('lanes', 'lid', 'acc')}
  let rstd = rsqrt_f32(lanes[0] / f32(u.h) + u.eps);
  let wb = s * hw;
  for (var i = 0u; i < steps; i = i + 1u) {
    for (var k = 0u; k < ${CHUNK_WORDS}u; k = k + 1u) {
      let q = i * ${STEP_WORDS}u + lid * ${CHUNK_WORDS}u + k;
      if (q < hw) {
        let xw = ${source}[base + q];
        let ww = nw[wb + q];
        normed[base + q] = pack_bf16((bf16_lo(xw) * rstd) * (1.0 + bf16_lo(ww)), (bf16_hi(xw) * rstd) * (1.0 + bf16_hi(ww)));
      }
    }
  }
}`;
  return { wgsl, bindings: pre.bindings };
}

export const hcCombineNormPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const contract = attrs.contract as Contract;
  const n = attrs.streams as number;
  const eps = attrs.eps as number;
  if (!(eps >= 0)) throw new Error(`hcCombineNorm: eps = ${eps} is not a non-negative number`);
  const [rows, width] = inputs[0]!.shape;
  const h = width / n;
  if (h % 2 !== 0) throw new Error(`hcCombineNorm: H = ${h} is odd; the WGSL kernel needs whole bf16 words per stream`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const pending = Boolean(inputs[1]);
  const kernel = combineNormKernel(pending, contract);
  const key = `hcCombineNorm-${pending ? 'pending' : 'plain'}-${contract}`;
  // one workgroup per (row, stream) group
  return { scratch: [], dispatches: [flatDispatch(key, kernel.wgsl, kernel.bindings, rows * n * LANES, LANES, [rows, n, h, f32Bits(eps)])] };
};
