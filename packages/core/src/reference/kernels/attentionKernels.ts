import type { CpuKernelTable } from '../cpuKernel.ts';
import { tensor } from '../../tensor/tensor.ts';
import { bits, headLayoutAttrs, numAttrs } from './kernelArgs.ts';
import { attnCausalQsa, attnHeadNormRopeBf16, attnOutputGate } from '../../layers/attention/attentionMath.ts';
import { qsaBlockKeys, qsaBlockScores, qsaSelectBlocks, type QsaIndexerDims } from '../../layers/attention/qsaIndexer.ts';
import { topkTiesOf } from '../../numerics/topkTies.ts';

// CPU reference kernels of the full-attention ops (graph/ops/attentionOps.ts): tensor plumbing
// around layers/attention/attentionMath.ts and qsaIndexer.ts (the declaration checks the shapes).

export const attentionKernels: CpuKernelTable = {
  perRank: {
    attnHeadNormRopeBf16: ([x, w, cos, sin], attrs) => {
      const layout = headLayoutAttrs(attrs);
      const { ropeDims, eps } = numAttrs(attrs);
      const rows = x!.shape[0];
      const y = attnHeadNormRopeBf16(bits(x), bits(w), bits(cos), bits(sin), rows, layout, ropeDims, eps, { start: 0, step: 1 });
      return [tensor('bf16', [rows, layout.heads * layout.headDim], y)];
    },
    qsaBlockKeys: ([kRaw, w, cos, sin], attrs) => {
      const { headDim, compressRatio, ropeDims, eps } = numAttrs(attrs);
      const T = kRaw!.shape[0];
      const d: QsaIndexerDims = { nHeads: 1, headDim, ropeDims, compressRatio, width: 1, eps };
      const kb = qsaBlockKeys(bits(kRaw), bits(w), bits(cos), bits(sin), T, { stride: headDim, offset: 0 }, d);
      return [tensor('bf16', [Math.floor(T / compressRatio), headDim], kb)];
    },
    qsaKeptCount: ([blocks], attrs) => {
      const ratio = numAttrs(attrs).compressRatio;
      const [rows, width] = blocks!.shape;
      const b = blocks!.data as Int32Array;
      const kept = new Int32Array(rows);
      for (let t = 0; t < rows; t++) {
        let listed = 0;
        for (let i = 0; i < width; i++) if (b[t * width + i] >= 0) listed++;
        kept[t] = listed * ratio + (t + 1 - Math.floor((t + 1) / ratio) * ratio);
      }
      return [tensor('i32', [rows], kept)];
    },
    qsaSelect: ([q, kb], attrs) => {
      const { r0, tokens, nHeads, headDim, compressRatio, width } = numAttrs(attrs);
      const rows = q!.shape[0];
      const nb = kb!.shape[0];
      // rows at or past the last token (sequence-parallel padding) select nothing
      const real = Math.max(0, Math.min(rows, tokens - r0));
      const d: QsaIndexerDims = { nHeads, headDim, ropeDims: 0, compressRatio, width, eps: 0 };
      const qReal = bits(q).subarray(0, real * nHeads * headDim);
      const sel = qsaSelectBlocks(qsaBlockScores(qReal, bits(kb), r0, r0 + real, nb, d), r0, r0 + real, nb, d, topkTiesOf(attrs));
      const blocks = new Int32Array(rows * width).fill(-1);
      blocks.set(sel.blocks);
      return [tensor('i32', [rows, width], blocks)];
    },
    attnCausalQsa: ([q, k, v, blocks], attrs) => {
      const { heads, kvHeads, headDim: hd, width, compressRatio, scale } = numAttrs(attrs);
      const T = q!.shape[0];
      const selection = { r0: 0, rows: T, width, compressRatio, blocks: blocks!.data as Int32Array };
      const o = attnCausalQsa(bits(q), bits(k), bits(v), T, heads, kvHeads, hd, scale, selection, attrs.eagerSoftmax === true);
      return [tensor('bf16', [T, heads * hd], o)];
    },
    attnOutputGate: ([o, qg], attrs) => {
      const { heads, headDim: hd } = numAttrs(attrs);
      const T = o!.shape[0];
      return [tensor('bf16', [T, heads * hd], attnOutputGate(bits(o), bits(qg), T, heads, hd))];
    },
  },
};
