import type { CpuKernelTable } from '../cpuKernel.ts';
import { tensor } from '../../tensor/tensor.ts';
import { attr, input, rows2d } from './kernelArgs.ts';
import { gdnConvSilu, gdnGatedNorm, gdnGates, gdnQkvChannels, gdnRecurrence } from '../../layers/gdn/gdnMath.ts';

// CPU reference kernels of the GatedDeltaNet ops (graph/ops/gdnOps.ts): shape checks and
// tensor plumbing around layers/gdn/gdnMath.ts.

export const gdnKernels: CpuKernelTable = {
  perRank: {
    gdnConvSilu: (inputs, attrs) => {
      const op = 'gdnConvSilu';
      const x = input(inputs, 0, 'x', op, 'bf16');
      const w = input(inputs, 1, 'w', op, 'bf16');
      const kernel = attr(attrs, 'kernel', op);
      const channels = w.shape[0];
      if (w.shape.length !== 3 || w.shape[1] !== 1 || w.shape[2] !== kernel) {
        throw new Error(`${op}: weight is [${w.shape.join(',')}], expected [C,1,${kernel}]`);
      }
      const T = rows2d(x, 'x', op, channels);
      return [
        tensor('bf16', [T, channels], gdnConvSilu(x.data as Uint16Array, w.data as Uint16Array, T, channels, kernel, undefined, attrs.roundConv === true)),
      ];
    },
    gdnGates: (inputs) => {
      const op = 'gdnGates';
      const b = input(inputs, 0, 'b', op, 'bf16');
      const a = input(inputs, 1, 'a', op, 'bf16');
      const aLog = input(inputs, 2, 'aLog', op, 'bf16');
      const dtBias = input(inputs, 3, 'dtBias', op, 'bf16');
      const heads = aLog.data.length;
      const T = rows2d(b, 'b', op, heads);
      rows2d(a, 'a', op, heads);
      const { g, beta } = gdnGates(b.data as Uint16Array, a.data as Uint16Array, aLog.data as Uint16Array, dtBias.data as Uint16Array, T, heads);
      return [tensor('f32', [T, heads], g), tensor('bf16', [T, heads], beta)];
    },
    gdnRecurrence: (inputs, attrs) => {
      const op = 'gdnRecurrence';
      const heads = {
        keyHeads: attr(attrs, 'keyHeads', op),
        valueHeads: attr(attrs, 'valueHeads', op),
        keyDim: attr(attrs, 'keyDim', op),
        valueDim: attr(attrs, 'valueDim', op),
      };
      const qkv = input(inputs, 0, 'qkv', op, 'bf16');
      const g = input(inputs, 1, 'g', op, 'f32');
      const beta = input(inputs, 2, 'beta', op, 'bf16');
      const T = rows2d(qkv, 'qkv', op, gdnQkvChannels(heads));
      rows2d(g, 'g', op, heads.valueHeads);
      rows2d(beta, 'beta', op, heads.valueHeads);
      const { o } = gdnRecurrence(
        qkv.data as Uint16Array,
        g.data as Float32Array,
        beta.data as Uint16Array,
        T,
        heads,
        attr(attrs, 'scale', op),
        attr(attrs, 'l2Eps', op),
      );
      return [tensor('bf16', [T, heads.valueHeads * heads.valueDim], o)];
    },
    gdnGatedNorm: (inputs, attrs) => {
      const op = 'gdnGatedNorm';
      const heads = attr(attrs, 'heads', op);
      const headDim = attr(attrs, 'headDim', op);
      const o = input(inputs, 0, 'o', op, 'bf16');
      const z = input(inputs, 1, 'z', op, 'bf16');
      const w = input(inputs, 2, 'w', op, 'bf16');
      const T = rows2d(o, 'o', op, heads * headDim);
      rows2d(z, 'z', op, heads * headDim);
      const y = gdnGatedNorm(o.data as Uint16Array, z.data as Uint16Array, w.data as Uint16Array, T, heads, headDim, attr(attrs, 'eps', op));
      return [tensor('bf16', [T, heads * headDim], y)];
    },
  },
};
