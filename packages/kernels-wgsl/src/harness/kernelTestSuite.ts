// The shared setup of the kernel tests (vitest): one Chromium WebGPU page per test file,
// bit-for-bit comparison of a plan's outputs with CPU reference tensors, and random bf16 inputs.
import { afterAll, beforeAll, expect } from 'vitest';
import { f32ArrayToBf16 } from '../../../core/src/numerics/bf16.ts';
import type { Rng } from '../../../core/src/numerics/rng.ts';
import type { CpuKernel } from '../../../core/src/reference/cpuKernel.ts';
import { tensor, type Tensor } from '../../../core/src/tensor/tensor.ts';
import type { KernelPlanner } from '../kernelProgram.ts';
import { launchChromiumGpu, type ChromiumGpu } from './chromiumGpu.ts';
import { bitDiff, runPlannerOnGpu, tensorBits, tensorInfo, type ElementBits } from './runPlanner.ts';

/** Launches the harness before the file's tests and closes it after; call at the top level of a test file. */
export function useChromiumGpu(): () => ChromiumGpu {
  let gpu: ChromiumGpu | undefined;
  beforeAll(async () => {
    gpu = await launchChromiumGpu();
  });
  afterAll(async () => {
    await gpu?.close();
  });
  return () => {
    if (!gpu) throw new Error('useChromiumGpu: the harness is not launched (used outside a test?)');
    return gpu;
  };
}

/** Expects every present output's element bits equal to the reference tensor's. */
export function expectBitsEqual(op: string, got: (ElementBits | null)[], want: (Tensor | null)[]): void {
  want.forEach((w, i) => {
    if (!w) return;
    const d = bitDiff(got[i]!, tensorBits(w));
    expect(d.differing, `${op} output ${i} [${w.shape.join(',')}]: ${d.differing} of ${w.data.length} differ, ${d.first}`).toBe(0);
  });
}

/** Runs op on the CPU reference kernel and its plan on the GPU, expects identical bits; returns the CPU outputs. */
export async function expectPlannerMatchesCpu(
  gpu: ChromiumGpu,
  op: string,
  planner: KernelPlanner,
  cpu: CpuKernel,
  inputs: Tensor[],
  attrs: Record<string, unknown>,
): Promise<Tensor[]> {
  const want = cpu(inputs, attrs) as Tensor[];
  const run = await runPlannerOnGpu(gpu, planner, inputs, want.map(tensorInfo), attrs);
  expectBitsEqual(op, run.bits, want);
  return want;
}

/** A bf16 tensor of normal samples bf(mean + std * N(0, 1)) (bf(std * N(0, 1)) when mean is 0). */
export function bf16Normal(rng: Rng, shape: number[], std: number, mean = 0): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = mean === 0 ? rng.fillBf16Normal(n, std) : f32ArrayToBf16(Array.from({ length: n }, () => mean + std * rng.normal()));
  return tensor('bf16', shape, data);
}
