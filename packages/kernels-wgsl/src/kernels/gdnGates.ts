// gdnGates: per token and value head, g = (-exp(A_log)) * softplus(a + dt_bias) in fp32
// (kept f32) and beta = bf(sigmoid(b)) (core gdnMath.gdnGates). One invocation per beta word
// (two elements); it also writes those two elements' g words.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, flatMain, readInput, writeOutput } from './planParts.ts';

const WG = 64;

const GATES = preamble(
  ['heads', 'n', 'words', 'groupsX'],
  [
    bf16Buf('b', readInput(0), 'bAt'),
    bf16Buf('a', readInput(1), 'aAt'),
    bf16Buf('aLog', readInput(2), 'aLogAt'),
    bf16Buf('dtBias', readInput(3), 'dtBiasAt'),
    buf('g', writeOutput(0), 'f32'),
    buf('beta', writeOutput(1)),
  ],
);

const GATES_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
${GATES.wgsl}
fn gate(e: u32) -> f32 {
  let h = e % u.heads;
  let negA = -exp_f32(aLogAt(h));
  return negA * softplus_f32(aAt(e) + dtBiasAt(h));
}
${flatMain(
  WG,
  'u.words',
  `let e = 2u * inv;
  g[e] = gate(e);
  var hi: f32 = 0.0;
  if (e + 1u < u.n) {
    g[e + 1u] = gate(e + 1u);
    hi = sigmoid_f32(bAt(e + 1u));
  }
  beta[inv] = pack_bf16(sigmoid_f32(bAt(e)), hi);`,
)}`;

export const gdnGatesPlanner: KernelPlanner = (inputs) => {
  const [T, heads] = inputs[0]!.shape;
  const n = T * heads;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  return { scratch: [], dispatches: [flatDispatch('gdn-gates', GATES_WGSL, GATES.bindings, words, WG, [heads, n, words])] };
};
