// Test support of the gpu-check steps' tests (no part of the check program): a step's chained
// graph must give the CPU reference's bits on the emulated device before its timing means
// anything, and the step must judge its timed kernel against the ceiling.
import { createRocmBackend } from '@hcsp/backend-rocm';
import { type Backend, CpuBackend, type Graph, type ModelConfig, runOnce, type WeightSource } from '@hcsp/core';
import { expect } from 'vitest';
import type { Verdict } from './gpuCheckVerdict.ts';

type Step = (backend: Backend, matrixTflops: number, options: { config?: ModelConfig; T?: number; reps?: number; runs?: number }) => Promise<Verdict[]>;

/** The graph on the emulated device with the exact kernels and GEMM gives the CPU reference's bits in every value. */
export async function expectExactChainBits(graph: Graph, weights: WeightSource): Promise<void> {
  const backend = await createRocmBackend({ device: 'emulated', gemm: 'exact', kernels: 'exact' });
  try {
    const want = await runOnce(new CpuBackend(), graph, new Map(), weights, { keep: 'all' });
    const got = await runOnce(backend, graph, new Map(), weights, { keep: 'all' });
    for (const [id, t] of want.values) expect(Buffer.from(got.values.get(id)!.data.buffer).equals(Buffer.from(t.data.buffer)), id).toBe(true);
  } finally {
    await backend.dispose();
  }
}

/**
 * The step on the emulated device with the fast kernels, at T rows of `config`: its headline, a
 * timed row for `op`, and FAIL against a ceiling no device reaches.
 */
export async function expectStepJudged(step: Step, config: ModelConfig, T: number, headline: RegExp, op: string): Promise<void> {
  const backend = await createRocmBackend({ device: 'emulated', gemm: 'exact', kernels: 'fast' });
  try {
    const fast = await step(backend, 1e-12, { config, T, reps: 3, runs: 1 });
    expect(fast[0]!.line).toMatch(headline);
    expect(fast[1]!.line).toMatch(new RegExp(`^ {2}${op} +-?\\d+\\.\\d+ s`));
    const slow = await step(backend, 1e12, { config, T, reps: 2, runs: 1 });
    expect(slow[1]!.pass).toBe(false);
    expect(slow[1]!.line).toMatch(/FAIL \(over 3x\)$/);
  } finally {
    await backend.dispose();
  }
}
