import type { CpuKernelTable } from '../cpuKernel.ts';
import { tensor } from '../../tensor/tensor.ts';
import { attr, input, rows2d } from './kernelArgs.ts';
import { attnCausal, attnHeadNormRope, attnOutputGate } from '../../layers/attention/attentionMath.ts';

// CPU reference kernels of the full-attention ops (graph/ops/attentionOps.ts): shape checks
// and tensor plumbing around layers/attention/attentionMath.ts.

export const attentionKernels: CpuKernelTable = {
  perRank: {
    attnHeadNormRope: (inputs, attrs) => {
      const op = 'attnHeadNormRope';
      const layout = {
        heads: attr(attrs, 'heads', op),
        headDim: attr(attrs, 'headDim', op),
        stride: attr(attrs, 'stride', op),
        offset: attr(attrs, 'offset', op),
      };
      const ropeDims = attr(attrs, 'ropeDims', op);
      const x = input(inputs, 0, 'x', op, 'bf16');
      const w = input(inputs, 1, 'w', op, 'bf16');
      const cos = input(inputs, 2, 'cos', op, 'f32');
      const sin = input(inputs, 3, 'sin', op, 'f32');
      const T = rows2d(x, 'x', op, layout.heads * layout.stride);
      if (rows2d(cos, 'cos', op, ropeDims / 2) !== T || rows2d(sin, 'sin', op, ropeDims / 2) !== T) {
        throw new Error(`${op}: RoPE tables have ${cos.shape[0]}/${sin.shape[0]} rows, x has ${T}`);
      }
      const y = attnHeadNormRope(x.data as Uint16Array, w.data as Uint16Array, cos.data as Float32Array, sin.data as Float32Array, T, layout, ropeDims, attr(attrs, 'eps', op));
      return [tensor('bf16', [T, layout.heads * layout.headDim], y)];
    },
    attnCausal: (inputs, attrs) => {
      const op = 'attnCausal';
      const heads = attr(attrs, 'heads', op);
      const kvHeads = attr(attrs, 'kvHeads', op);
      const hd = attr(attrs, 'headDim', op);
      const q = input(inputs, 0, 'q', op, 'bf16');
      const k = input(inputs, 1, 'k', op, 'bf16');
      const v = input(inputs, 2, 'v', op, 'bf16');
      const T = rows2d(q, 'q', op, heads * hd);
      if (rows2d(k, 'k', op, kvHeads * hd) !== T || rows2d(v, 'v', op, kvHeads * hd) !== T) {
        throw new Error(`${op}: k/v have ${k.shape[0]}/${v.shape[0]} rows, q has ${T}`);
      }
      const o = attnCausal(q.data as Uint16Array, k.data as Uint16Array, v.data as Uint16Array, T, heads, kvHeads, hd, attr(attrs, 'scale', op));
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
