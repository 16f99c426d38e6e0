// gdnConvSilu: y[t,c] = bf(silu(acc)), acc = sum_{j<K} w[c,j] * x[t-K+1+j, c] in fp32, j in
// order from +0, rows before 0 read as zeros (core gdnMath.gdnConvSilu). The w * 0 products
// of those rows are still added, as the CPU does, so even a non-finite weight gives its bits.
// bf16 x bf16 products are exact in fp32: only the order of the adds matters.
// One invocation per output word (two elements), any T, C, K.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatInvocation, gridFor, readInput, requireIntAttr, requirePort, requireRows, uniformWords, writeOutput } from './planParts.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';

const WG = 64;
const inv = flatInvocation(WG, 'u.groupsX');

const CONV_SILU_WGSL = `${BF16_WGSL}
${FP32_MATH_WGSL}
struct U { C: u32, K: u32, n: u32, words: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
${bf16Element('x', 'xAt')}
${bf16Element('w', 'wAt')}
fn convSilu(e: u32) -> f32 {
  let t = e / u.C;
  let c = e % u.C;
  var acc: f32 = 0.0;
  for (var j = 0u; j < u.K; j = j + 1u) {
    // source row t - K + 1 + j, zero before row 0
    var xv: f32 = 0.0;
    if (t + 1u + j >= u.K) { xv = xAt((t + 1u + j - u.K) * u.C + c); }
    acc = acc + wAt(c * u.K + j) * xv;
  }
  return silu_f32(acc);
}
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.words) { return; }
  let e = 2u * inv;
  var hi: f32 = 0.0;
  if (e + 1u < u.n) { hi = convSilu(e + 1u); }
  y[inv] = pack_bf16(convSilu(e), hi);
}`;

export const gdnConvSiluPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'gdnConvSilu';
  const K = requireIntAttr(attrs, 'kernel', op, 1);
  const wInfo = inputs[1];
  const C = wInfo?.shape[0] ?? 0;
  requirePort(wInfo, `${op}: input w`, 'bf16', [C, 1, K]);
  const T = requireRows(inputs[0], `${op}: input x`, 'bf16', C);
  requirePort(outputs[0], `${op}: output y`, 'bf16', [T, C]);
  const n = T * C;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  const grid = gridFor(words, WG);
  return {
    scratch: [],
    dispatches: [
      {
        key: 'gdn-conv-silu',
        wgsl: CONV_SILU_WGSL,
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([C, K, n, words, grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
