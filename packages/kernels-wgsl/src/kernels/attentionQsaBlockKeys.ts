// qsaBlockKeys: the QSA indexer's block keys (core qsaIndexer.qsaBlockKeys). One invocation
// per block b < nb = floor(T / ratio): per dim c the fp32 sum of rows b*ratio .. b*ratio +
// ratio - 1 of kRaw in row order, pooled_c = bf(fr(sum / ratio)), then the RMS1p norm and
// RoPE of attnHeadNormRopeBf16 (normRopeWgsl) at position ratio * b.
import type { KernelPlanner } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { normRopeBuffers, normRopeWgsl, requireEvenHeadDim } from './attentionHeadNormRope.ts';
import { f32Bits, flatDispatch, flatMain, readInput } from './planParts.ts';

const WG = 64;

const BLOCK_KEYS = preamble(['ratio', 'ropeDims', 'blocks', 'eps', 'groupsX'], normRopeBuffers(bf16Buf('k', readInput(0), 'kAt')));

function blockKeysWgsl(hd: number): string {
  return `${BF16_WGSL}
${FP32_MATH_WGSL}
${ROUND_BF16_WGSL}
${BLOCK_KEYS.wgsl}
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

export const qsaBlockKeysPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const [hd, ratio, ropeDims, eps] = ['headDim', 'compressRatio', 'ropeDims', 'eps'].map((name) => attrs[name] as number);
  requireEvenHeadDim('qsaBlockKeys', hd);
  const nb = Math.floor(inputs[0]!.shape[0] / ratio);
  if (nb === 0) return { scratch: [], dispatches: [] };
  return {
    scratch: [],
    dispatches: [flatDispatch(`qsa-block-keys-hd${hd}`, blockKeysWgsl(hd), BLOCK_KEYS.bindings, nb, WG, [ratio, ropeDims, nb, f32Bits(eps)])],
  };
};
