// Test support for the MoE/PLE kernels: runs a planner on Chromium's WebGPU with core
// Tensors packed into the storage layout of kernelProgram.ts, and counts the output
// elements whose bits differ from the CPU reference kernel's.
import type { Tensor } from '../../../core/src/tensor/tensor.ts';
import type { ChromiumGpu } from '../harness/chromiumGpu.ts';
import { storageWords, type KernelPlanner } from '../kernelProgram.ts';

/** A tensor's elements as storage words: bf16 two per word (low half first), f32/i32 one per word. */
export function tensorWords(t: Tensor): Uint32Array {
  const words = new Uint32Array(storageWords(t.dtype, t.data.length));
  if (t.dtype === 'bf16') new Uint16Array(words.buffer).set(t.data as Uint16Array);
  else if (t.dtype === 'f32' || t.dtype === 'i32') words.set(new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length));
  else throw new Error(`tensorWords: dtype '${t.dtype}' is not used by the MoE/PLE kernels`);
  return words;
}

/** The element bits of a tensor: 16-bit for bf16, 32-bit for f32 and i32. */
export function tensorBits(t: Tensor): Uint16Array | Uint32Array {
  if (t.dtype === 'bf16') return t.data as Uint16Array;
  if (t.dtype === 'f32' || t.dtype === 'i32') return new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
  throw new Error(`tensorBits: dtype '${t.dtype}' is not used by the MoE/PLE kernels`);
}

/** The output element bits of the planner's dispatches for these inputs, per output. */
export async function gpuOutputBits(
  gpu: ChromiumGpu,
  planner: KernelPlanner,
  inputs: Tensor[],
  outputs: Tensor[],
  attrs: Record<string, unknown>,
): Promise<(Uint16Array | Uint32Array)[]> {
  const info = (t: Tensor) => ({ shape: t.shape, dtype: t.dtype });
  const plan = planner(inputs.map(info), outputs.map(info), attrs);
  const outWords = outputs.map((o) => storageWords(o.dtype, o.data.length));
  const run = await gpu.runPlan(plan, inputs.map(tensorWords), outWords);
  return run.outputs.map((w, i) =>
    outputs[i].dtype === 'bf16' ? new Uint16Array(w.buffer, 0, outputs[i].data.length).slice() : w.slice(0, outputs[i].data.length),
  );
}

/** Count of elements whose bits differ, and the first of them (NaN bits must match too). */
export function bitDiff(got: Uint16Array | Uint32Array, want: Uint16Array | Uint32Array): { differing: number; first: string } {
  if (got.length !== want.length) throw new Error(`bitDiff: ${got.length} elements against ${want.length}`);
  let differing = 0;
  let first = '';
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want[i]) {
      if (!first) first = `element ${i}: gpu 0x${got[i].toString(16)} cpu 0x${want[i].toString(16)}`;
      differing++;
    }
  }
  return { differing, first };
}
