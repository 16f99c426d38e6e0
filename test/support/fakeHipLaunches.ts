// Launch-shape tests over the fake hip runtime (fakeGpuLibraries.ts): the device opened on
// code objects that name the kernels, and an op run on zero inputs, whose launches (grids,
// blocks) the fake's log records.
import { type GpuDevice, loadNativeAddon } from '../../packages/backend-rocm/src/nativeAddon.ts';
import type { FakeGpuFolder } from './fakeGpuLibraries.ts';

const addon = loadNativeAddon();

/** The hip device over the fake runtime, logging to its log, with gfx942 code objects <fake>/<name> holding these kernels per file. */
export function openFakeHip(fake: FakeGpuFolder, name: string, kernels: Record<string, string[]>): GpuDevice {
  process.env.HCSP_HIP_LIB = fake.lib('fakehip.so');
  process.env.FAKE_GPU_LOG = fake.log();
  return addon.openGpu('hip', { codeObjects: fake.codeObjects(name, 'gfx942', kernels) });
}

/** One run of `op` with the exact kernels on zero bf16 inputs of these shapes on gpu; its outputs and inputs freed. */
export async function runOnZeros(gpu: GpuDevice, op: string, shapes: number[][], attrs: Record<string, unknown>): Promise<void> {
  const inputs = shapes.map((s) => addon.upload('bf16', s, new Uint16Array(s.reduce((a, d) => a * d, 1)), gpu));
  try {
    for (const t of await addon.run(op, inputs, attrs, 'exact', gpu)) addon.free(t!);
  } finally {
    for (const t of inputs) addon.free(t);
  }
}
