// gdnGates: per token and value head, g = (-exp(A_log)) * softplus(a + dt_bias) in fp32
// (kept f32) and beta = bf(sigmoid(b)) (core gdnMath.gdnGates). One invocation per beta word
// (two elements); it also writes those two elements' g words.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatDispatch, flatMain, readInput, requirePort, requireRows, writeOutput } from './planParts.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';

const WG = 64;

const GATES_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
struct U { heads: u32, n: u32, words: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> b: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> aLog: array<u32>;
@group(0) @binding(3) var<storage, read> dtBias: array<u32>;
@group(0) @binding(4) var<storage, read_write> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> beta: array<u32>;
@group(0) @binding(6) var<uniform> u: U;
${bf16Element('b', 'bAt')}
${bf16Element('a', 'aAt')}
${bf16Element('aLog', 'aLogAt')}
${bf16Element('dtBias', 'dtBiasAt')}
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

export const gdnGatesPlanner: KernelPlanner = (inputs, outputs) => {
  const op = 'gdnGates';
  const heads = inputs[2]?.shape[0] ?? 0;
  requirePort(inputs[2], `${op}: input aLog`, 'bf16', [heads]);
  requirePort(inputs[3], `${op}: input dtBias`, 'bf16', [heads]);
  const T = requireRows(inputs[0], `${op}: input b`, 'bf16', heads);
  requirePort(inputs[1], `${op}: input a`, 'bf16', [T, heads]);
  requirePort(outputs[0], `${op}: output g`, 'f32', [T, heads]);
  requirePort(outputs[1], `${op}: output beta`, 'bf16', [T, heads]);
  const n = T * heads;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  const bindings = [readInput(0), readInput(1), readInput(2), readInput(3), writeOutput(0), writeOutput(1)];
  return { scratch: [], dispatches: [flatDispatch('gdn-gates', GATES_WGSL, bindings, words, WG, [heads, n, words])] };
};
