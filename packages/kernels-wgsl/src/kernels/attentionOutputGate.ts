// attnOutputGate: y = bf(o * bf(sigmoid(gate))), the gate being columns [hd, 2hd) of each
// head's [query | gate] block of qg [T, heads * 2hd] (core attentionMath.attnOutputGate;
// o * gate is a product of two bf16 values, exact in fp32). One invocation per output word.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatInvocation, gridFor, readInput, requireIntAttr, requirePort, requireRows, uniformWords, writeOutput } from './planParts.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';

const WG = 64;
const inv = flatInvocation(WG, 'u.groupsX');

const OUTPUT_GATE_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
struct U { hd: u32, n: u32, words: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> o: array<u32>;
@group(0) @binding(1) var<storage, read> qg: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
${bf16Element('o', 'oAt')}
${bf16Element('qg', 'qgAt')}
fn gated(e: u32) -> f32 {
  let row = e / u.hd; // (token, head)
  let d = e % u.hd;
  let gate = rbf(sigmoid_f32(qgAt(row * 2u * u.hd + u.hd + d)));
  return oAt(e) * gate;
}
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.words) { return; }
  let e = 2u * inv;
  var hi: f32 = 0.0;
  if (e + 1u < u.n) { hi = gated(e + 1u); }
  y[inv] = pack_bf16(gated(e), hi);
}`;

export const attnOutputGatePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'attnOutputGate';
  const heads = requireIntAttr(attrs, 'heads', op, 1);
  const hd = requireIntAttr(attrs, 'headDim', op, 1);
  const T = requireRows(inputs[0], `${op}: input o`, 'bf16', heads * hd);
  requirePort(inputs[1], `${op}: input qg`, 'bf16', [T, heads * 2 * hd]);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, heads * hd]);
  const n = T * heads * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  const grid = gridFor(words, WG);
  return {
    scratch: [],
    dispatches: [
      {
        key: 'attn-output-gate',
        wgsl: OUTPUT_GATE_WGSL,
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([hd, n, words, grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
