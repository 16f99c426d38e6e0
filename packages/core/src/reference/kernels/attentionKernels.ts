import type { CpuKernelTable } from '../cpuKernel.ts';
import { tensor } from '../../tensor/tensor.ts';
import { attr, checkRopeTables, headLayoutAttrs, input, rows2d } from './kernelArgs.ts';
import { attnCausalQsa, attnHeadNormRopeBf16, attnOutputGate } from '../../layers/attention/attentionMath.ts';
import { qsaBlockKeys, qsaBlockScores, qsaSelectBlocks, type QsaIndexerDims } from '../../layers/attention/qsaIndexer.ts';
import { topkTiesOf } from '../../numerics/topkTies.ts';

// CPU reference kernels of the full-attention ops (graph/ops/attentionOps.ts): shape checks
// and tensor plumbing around layers/attention/attentionMath.ts and qsaIndexer.ts.

export const attentionKernels: CpuKernelTable = {
  perRank: {
    attnHeadNormRopeBf16: (inputs, attrs) => {
      const op = 'attnHeadNormRopeBf16';
      const layout = headLayoutAttrs(attrs, op);
      const ropeDims = attr(attrs, 'ropeDims', op);
      const x = input(inputs, 0, 'x', op, 'bf16');
      const w = input(inputs, 1, 'w', op, 'bf16');
      const cos = input(inputs, 2, 'cos', op, 'bf16');
      const sin = input(inputs, 3, 'sin', op, 'bf16');
      const rows = rows2d(x, 'x', op, layout.heads * layout.stride);
      checkRopeTables(op, cos, sin, ropeDims / 2, rows);
      const y = attnHeadNormRopeBf16(
        x.data as Uint16Array,
        w.data as Uint16Array,
        cos.data as Uint16Array,
        sin.data as Uint16Array,
        rows,
        layout,
        ropeDims,
        attr(attrs, 'eps', op),
        { start: 0, step: 1 },
      );
      return [tensor('bf16', [rows, layout.heads * layout.headDim], y)];
    },
    qsaBlockKeys: (inputs, attrs) => {
      const op = 'qsaBlockKeys';
      const headDim = attr(attrs, 'headDim', op);
      const compressRatio = attr(attrs, 'compressRatio', op);
      const ropeDims = attr(attrs, 'ropeDims', op);
      const kRaw = input(inputs, 0, 'kRaw', op, 'bf16');
      const w = input(inputs, 1, 'w', op, 'bf16');
      const cos = input(inputs, 2, 'cos', op, 'bf16');
      const sin = input(inputs, 3, 'sin', op, 'bf16');
      const T = rows2d(kRaw, 'kRaw', op, headDim);
      checkRopeTables(op, cos, sin, ropeDims / 2, T);
      const d: QsaIndexerDims = { nHeads: 1, headDim, ropeDims, compressRatio, width: 1, eps: attr(attrs, 'eps', op) };
      const kb = qsaBlockKeys(
        kRaw.data as Uint16Array,
        w.data as Uint16Array,
        cos.data as Uint16Array,
        sin.data as Uint16Array,
        T,
        { stride: headDim, offset: 0 },
        d,
      );
      return [tensor('bf16', [Math.floor(T / compressRatio), headDim], kb)];
    },
    qsaKeptCount: (inputs, attrs) => {
      const op = 'qsaKeptCount';
      const ratio = attr(attrs, 'compressRatio', op);
      const blocks = input(inputs, 0, 'blocks', op, 'i32');
      const [rows, width] = blocks.shape;
      const b = blocks.data as Int32Array;
      const kept = new Int32Array(rows);
      for (let t = 0; t < rows; t++) {
        let listed = 0;
        for (let i = 0; i < width; i++) if (b[t * width + i] >= 0) listed++;
        kept[t] = listed * ratio + (t + 1 - Math.floor((t + 1) / ratio) * ratio);
      }
      return [tensor('i32', [rows], kept)];
    },
    qsaSelect: (inputs, attrs) => {
      const op = 'qsaSelect';
      const [r0, tokens, nHeads, headDim, compressRatio, width] = ['r0', 'tokens', 'nHeads', 'headDim', 'compressRatio', 'width'].map((n) =>
        attr(attrs, n, op),
      );
      const q = input(inputs, 0, 'q', op, 'bf16');
      const kb = input(inputs, 1, 'kb', op, 'bf16');
      const rows = rows2d(q, 'q', op, nHeads * headDim);
      const nb = rows2d(kb, 'kb', op, headDim);
      if (nb !== Math.floor(tokens / compressRatio)) throw new Error(`${op}: kb has ${nb} blocks, ${tokens} tokens make ${Math.floor(tokens / compressRatio)}`);
      // rows at or past the last token (sequence-parallel padding) select nothing
      const real = Math.max(0, Math.min(rows, tokens - r0));
      const d: QsaIndexerDims = { nHeads, headDim, ropeDims: 0, compressRatio, width, eps: 0 };
      const qReal = (q.data as Uint16Array).subarray(0, real * nHeads * headDim);
      const sel = qsaSelectBlocks(qsaBlockScores(qReal, kb.data as Uint16Array, r0, r0 + real, nb, d), r0, r0 + real, nb, d, topkTiesOf(attrs));
      const blocks = new Int32Array(rows * width).fill(-1);
      blocks.set(sel.blocks);
      return [tensor('i32', [rows, width], blocks)];
    },
    attnCausalQsa: (inputs, attrs) => {
      const op = 'attnCausalQsa';
      const heads = attr(attrs, 'heads', op);
      const kvHeads = attr(attrs, 'kvHeads', op);
      const hd = attr(attrs, 'headDim', op);
      const width = attr(attrs, 'width', op);
      const q = input(inputs, 0, 'q', op, 'bf16');
      const k = input(inputs, 1, 'k', op, 'bf16');
      const v = input(inputs, 2, 'v', op, 'bf16');
      const blocks = input(inputs, 3, 'blocks', op, 'i32');
      const T = rows2d(q, 'q', op, heads * hd);
      if (rows2d(k, 'k', op, kvHeads * hd) !== T || rows2d(v, 'v', op, kvHeads * hd) !== T || rows2d(blocks, 'blocks', op, width) !== T) {
        throw new Error(`${op}: k/v/blocks have ${k.shape[0]}/${v.shape[0]}/${blocks.shape[0]} rows, q has ${T}`);
      }
      const selection = { r0: 0, rows: T, width, compressRatio: attr(attrs, 'compressRatio', op), blocks: blocks.data as Int32Array };
      const o = attnCausalQsa(
        q.data as Uint16Array,
        k.data as Uint16Array,
        v.data as Uint16Array,
        T,
        heads,
        kvHeads,
        hd,
        attr(attrs, 'scale', op),
        selection,
        attrs.eagerSoftmax === true,
      );
      return [tensor('bf16', [T, heads * hd], o)];
    },
    attnOutputGate: (inputs, attrs) => {
      const op = 'attnOutputGate';
      const heads = attr(attrs, 'heads', op);
      const hd = attr(attrs, 'headDim', op);
      const o = input(inputs, 0, 'o', op, 'bf16');
      const qg = input(inputs, 1, 'qg', op, 'bf16');
      const T = rows2d(o, 'o', op, heads * hd);
      if (rows2d(qg, 'qg', op, heads * 2 * hd) !== T) throw new Error(`${op}: qg has ${qg.shape[0]} rows, o has ${T}`);
      return [tensor('bf16', [T, heads * hd], attnOutputGate(o.data as Uint16Array, qg.data as Uint16Array, T, heads, hd))];
    },
  },
};
