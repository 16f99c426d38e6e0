// The kernel alone: one op of the rocm backend's native addon on bf16 tensors already on the
// device, its outputs freed after each call, the GPU waited for. Not a graph through the
// backend interface: PreparedGraph.run uploads its feeds, reads its outputs back and replays
// the engine's recorded program over its memory pool, each run, which is not what a device's
// GEMM and copy ceilings or the host bench's exact-GEMM ratio measure. (The host bench times
// the one-node graph beside the kernel: exactGraph, blasGraph.)
import type { GemmMode, GpuDevice, NativeAddon } from '@hcsp/backend-rocm';
import type { TensorData } from '@hcsp/core';
import { timed } from './timing.ts';

export interface KernelDevice {
  addon: NativeAddon;
  /** null: the host device */
  gpu: GpuDevice | null;
  mode: GemmMode;
}

/** Seconds of each of `reps` calls of `op` on `inputs` (bf16, uploaded once, freed at the end), after one untimed call. */
export async function timeDeviceKernel(
  d: KernelDevice,
  op: string,
  inputs: readonly { shape: readonly number[]; data: TensorData }[],
  attrs: Record<string, unknown>,
  reps: number,
): Promise<number[]> {
  const handles: ReturnType<NativeAddon['upload']>[] = [];
  try {
    for (const t of inputs) handles.push(d.addon.upload('bf16', t.shape, t.data, d.gpu));
    const once = async (): Promise<void> => {
      for (const t of await d.addon.run(op, handles, attrs, d.mode, d.gpu)) if (t) d.addon.free(t);
      d.gpu?.synchronize();
    };
    await once();
    return await timed(reps, once);
  } finally {
    for (const h of handles) d.addon.free(h);
  }
}
