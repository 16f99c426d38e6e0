// Test support for the GDN and attention kernels: runs an op's planner on Chromium's WebGPU
// with core Tensors as inputs (packed into the storage layout of kernelProgram.ts) and
// compares the outputs with the CPU reference bit for bit.
import type { Tensor } from '../../../core/src/tensor/tensor.ts';
import type { ChromiumGpu } from '../harness/chromiumGpu.ts';
import { storageWords, type KernelPlanner, type TensorInfo } from '../kernelProgram.ts';

/** A tensor's elements as storage words: bf16 two per word (low half first), f32/i32 one per word. */
export function tensorWords(t: Tensor): Uint32Array {
  const words = new Uint32Array(storageWords(t.dtype, t.data.length));
  if (t.dtype === 'bf16') {
    new Uint16Array(words.buffer).set(t.data as Uint16Array);
  } else if (t.dtype === 'f32' || t.dtype === 'i32') {
    words.set(new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length));
  } else {
    throw new Error(`tensorWords: dtype '${t.dtype}' is not used by these kernels`);
  }
  return words;
}

/** The raw element bits of a bf16 (16-bit) or f32 (32-bit) output from its storage words. */
function elementBits(words: Uint32Array, info: TensorInfo): Uint16Array | Uint32Array {
  const n = info.shape.reduce((a, b) => a * b, 1);
  if (info.dtype === 'bf16') return new Uint16Array(words.buffer, 0, n).slice();
  if (info.dtype === 'f32') return words.slice(0, n);
  throw new Error(`elementBits: dtype '${info.dtype}' is not used by these kernels`);
}

/** The element bits of a CPU output, in the same form as elementBits. */
export function tensorBits(t: Tensor): Uint16Array | Uint32Array {
  if (t.dtype === 'bf16') return t.data as Uint16Array;
  if (t.dtype === 'f32') return new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
  throw new Error(`tensorBits: dtype '${t.dtype}' is not used by these kernels`);
}

export interface GpuOpRun {
  /** output element bits, per output port */
  outputs: (Uint16Array | Uint32Array)[];
  seconds: number;
}

/** Plans `op` with `planner` for these tensors and runs it once on the page's WebGPU device. */
export async function runPlannerOnGpu(
  gpu: ChromiumGpu,
  planner: KernelPlanner,
  inputs: Tensor[],
  outputs: TensorInfo[],
  attrs: Record<string, unknown>,
): Promise<GpuOpRun> {
  const plan = planner(inputs.map((t) => ({ shape: t.shape, dtype: t.dtype })), outputs, attrs);
  const outWords = outputs.map((o) => storageWords(o.dtype, o.shape.reduce((a, b) => a * b, 1)));
  const run = await gpu.runPlan(plan, inputs.map(tensorWords), outWords);
  return { outputs: run.outputs.map((w, i) => elementBits(w, outputs[i])), seconds: run.seconds[0] };
}

export interface BitDiff {
  differing: number;
  /** the first differing element, for the failure message */
  first: string;
}

/** Elements whose bits differ (NaN patterns included: the GPU must give the CPU's NaN bits too). */
export function bitDiff(got: Uint16Array | Uint32Array, want: Uint16Array | Uint32Array): BitDiff {
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
