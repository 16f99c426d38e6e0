import type { CpuKernelTable } from '../cpuKernel.ts';
import { tensor } from '../../tensor/tensor.ts';
import { bits, numAttrs } from './kernelArgs.ts';
import { gdnConvSilu, gdnGatedNorm, gdnGates, gdnRecurrence } from '../../layers/gdn/gdnMath.ts';

// CPU reference kernels of the GatedDeltaNet ops (graph/ops/gdnOps.ts): tensor plumbing
// around layers/gdn/gdnMath.ts (the declaration checks the shapes).

export const gdnKernels: CpuKernelTable = {
  perRank: {
    gdnConvSilu: ([x, w], attrs) => {
      const kernel = numAttrs(attrs).kernel;
      const [T, channels] = x!.shape;
      return [tensor('bf16', [T, channels], gdnConvSilu(bits(x), bits(w), T, channels, kernel, undefined, attrs.roundConv === true))];
    },
    gdnGates: ([b, a, aLog, dtBias]) => {
      const [T, heads] = b!.shape;
      const { g, beta } = gdnGates(bits(b), bits(a), bits(aLog), bits(dtBias), T, heads);
      return [tensor('f32', [T, heads], g), tensor('bf16', [T, heads], beta)];
    },
    gdnRecurrence: ([qkv, g, beta], attrs) => {
      const { keyHeads, valueHeads, keyDim, valueDim, scale, l2Eps } = numAttrs(attrs);
      const heads = { keyHeads, valueHeads, keyDim, valueDim };
      const T = qkv!.shape[0];
      const { o } = gdnRecurrence(bits(qkv), g!.data as Float32Array, bits(beta), T, heads, scale, l2Eps);
      return [tensor('bf16', [T, valueHeads * valueDim], o)];
    },
    gdnGatedNorm: ([o, z, w], attrs) => {
      const { heads, headDim, eps } = numAttrs(attrs);
      const T = o!.shape[0];
      return [tensor('bf16', [T, heads * headDim], gdnGatedNorm(bits(o), bits(z), bits(w), T, heads, headDim, eps))];
    },
  },
};
