// qsaBlockKeys: the QSA indexer's block keys (core qsaIndexer.qsaBlockKeys). One invocation
// per block b < nb = floor(T / ratio): per dim c the fp32 sum of rows b*ratio .. b*ratio +
// ratio - 1 of kRaw in row order, pooled_c = bf(fr(sum / ratio)), then the RMS1p norm and
// RoPE of attnHeadNormRopeBf16 (normRopeWgsl) at position ratio * b.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { checkNormRopeDims, normRopeWgsl } from './attentionHeadNormRope.ts';
import { f32Bits, flatDispatch, flatMain, readInput, requireFloatAttr, requireIntAttr, requirePort, requireRows, writeOutput } from './planParts.ts';

const WG = 64;

function blockKeysWgsl(hd: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
struct U { ratio: u32, ropeDims: u32, blocks: u32, eps: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> k: array<u32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> cosT: array<u32>;
@group(0) @binding(3) var<storage, read> sinT: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;
@group(0) @binding(5) var<uniform> u: U;
${bf16Element('k', 'kAt')}
${normRopeWgsl(hd)}
${flatMain(
  WG,
  'u.blocks',
  `let first = inv * u.ratio; // the block's first row, and its RoPE position
  for (var c = 0u; c < HD; c = c + 1u) {
    var sum: f32 = 0.0;
    for (var j = 0u; j < u.ratio; j = j + 1u) { sum = sum + kAt((first + j) * HD + c); }
    hv[c] = rbf(sum / f32(u.ratio));
  }
  normRope(inv * HD, first * (u.ropeDims / 2u));`,
)}`;
}

export const qsaBlockKeysPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const op = 'qsaBlockKeys';
  const hd = requireIntAttr(attrs, 'headDim', op, 2);
  const ratio = requireIntAttr(attrs, 'compressRatio', op, 1);
  const ropeDims = requireIntAttr(attrs, 'ropeDims', op, 0);
  const eps = requireFloatAttr(attrs, 'eps', op);
  checkNormRopeDims(op, hd, ropeDims);
  const T = requireRows(inputs[0], `${op}: input kRaw`, 'bf16', hd);
  requirePort(inputs[1], `${op}: input w`, 'bf16', [hd]);
  requirePort(inputs[2], `${op}: input cos`, 'bf16', [T, ropeDims / 2]);
  requirePort(inputs[3], `${op}: input sin`, 'bf16', [T, ropeDims / 2]);
  const nb = Math.floor(T / ratio);
  requirePort(outputs[0], `${op}: output kb`, 'bf16', [nb, hd]);
  if (nb === 0) return { scratch: [], dispatches: [] };
  const bindings = [readInput(0), readInput(1), readInput(2), readInput(3), writeOutput(0)];
  return { scratch: [], dispatches: [flatDispatch(`qsa-block-keys-hd${hd}`, blockKeysWgsl(hd), bindings, nb, WG, [ratio, ropeDims, nb, f32Bits(eps)])] };
};
