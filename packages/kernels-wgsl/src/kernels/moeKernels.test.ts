import { describe, expect, it } from 'vitest';
import { SMALL, f32ToBf16, Rng, type Tensor, cpuKernel, type OpName } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { canonicalAttnMoeCases } from '@hcsp/bench/cases';
import { checkedPlanner } from '../checkedPlanner.ts';
import { moeExpertsPlanner } from './moeExperts.ts';
import { moeRoutePlanner } from './moeRoute.ts';
import { moeSwiGluPlanner } from './moeSwiGlu.ts';

// The MoE WGSL kernels against core's CPU reference kernels, bit for bit, on random inputs
// of the 'small' config's shapes, through Chromium's WebGPU (SwiftShader).
const { hiddenSize: H } = SMALL;
const { numExperts: E, topK: K, intermediate: I } = SMALL.moe;

const rng = new Rng(20240611);

function f32Normal(shape: number[], std: number): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return { dtype: 'f32', shape, data: Float32Array.from({ length: n }, () => rng.normal() * std) };
}

const gpu = useChromiumGpu();

/** Runs op on the CPU reference and on the GPU; expects every output's bits equal. */
function expectBitExact(op: OpName, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

describe.each([48, 37])('MoE kernels, T = %i', (T) => {
  it('moeRoute: softmax, top-k and renormalized weights', async () => {
    await expectBitExact('moeRoute', [bf16Normal(rng, [T, E], 2)], { topK: K, normTopkProb: true });
    await expectBitExact('moeRoute', [bf16Normal(rng, [T, E], 2)], { topK: K, normTopkProb: false });
  });

  it('moeRoute: ties go to the lower expert, odd k packs across tokens', async () => {
    // logits on a coarse grid: many equal probabilities per row
    const logits: Tensor = { dtype: 'bf16', shape: [T, E], data: Uint16Array.from({ length: T * E }, () => f32ToBf16(Math.floor(rng.nextFloat() * 3))) };
    await expectBitExact('moeRoute', [logits], { topK: K, normTopkProb: true });
    await expectBitExact('moeRoute', [logits], { topK: 3, normTopkProb: true });
    await expectBitExact('moeRoute', [bf16Normal(rng, [T, E], 2)], { topK: 1, normTopkProb: false });
  });

  it('moeSwiGlu', async () => {
    await expectBitExact('moeSwiGlu', [bf16Normal(rng, [T, 2 * I], 3)], {});
  });

  it('moeExperts: routed sum over all experts and over a rank of them', async () => {
    const x = bf16Normal(rng, [T, H], 1);
    const [ids, weights] = cpuKernel('moeRoute')([bf16Normal(rng, [T, E], 2)], { topK: K, normTopkProb: true }) as Tensor[];
    const gateUp = bf16Normal(rng, [E * 2 * I, H], 1 / Math.sqrt(H));
    const down = bf16Normal(rng, [E * H, I], 1 / Math.sqrt(I));
    await expectBitExact('moeExperts', [x, ids, weights, gateUp, down], { firstExpert: 0, numLocal: E, intermediate: I });
    // rank 1 of 4 under EP: experts [4, 8), their slices of the stacked weights
    const first = 4;
    const local = 4;
    const slice = (t: Tensor, rowsPerExpert: number): Tensor => ({
      dtype: 'bf16',
      shape: [local * rowsPerExpert, t.shape[1]],
      data: (t.data as Uint16Array).slice(first * rowsPerExpert * t.shape[1], (first + local) * rowsPerExpert * t.shape[1]),
    });
    await expectBitExact('moeExperts', [x, ids, weights, slice(gateUp, 2 * I), slice(down, H)], {
      firstExpert: first,
      numLocal: local,
      intermediate: I,
    });
  });

  it.each([
    [H, 7],
    [35, 7],
    [40, 12],
  ])('moeExperts: hidden %i, intermediate %i (scalar loads, cut tiles), a token choosing an expert twice', async (hid, inter) => {
    const x = bf16Normal(rng, [T, hid], 1);
    // ids in ascending-expert order only by chance, repeats allowed: the order of adding is the CPU's
    const ids: Tensor = { dtype: 'i32', shape: [T, K], data: Int32Array.from({ length: T * K }, () => Math.floor(rng.nextFloat() * E)) };
    const weights = bf16Normal(rng, [T, K], 0.5);
    const gateUp = bf16Normal(rng, [E * 2 * inter, hid], 0.1);
    const down = bf16Normal(rng, [E * hid, inter], 0.4);
    await expectBitExact('moeExperts', [x, ids, weights, gateUp, down], { firstExpert: 0, numLocal: E, intermediate: inter });
  });

  it('moeCombine', async () => {
    await expectBitExact('moeCombine', [f32Normal([T, H], 2), bf16Normal(rng, [T, H], 1), bf16Normal(rng, [T, 1], 3)], {});
  });
});

describe('MoE planners reject bad shapes (their declarations do)', () => {
  it('names the bad value', () => {
    const info = (shape: number[], dtype: string) => ({ shape, dtype });
    expect(() =>
      checkedPlanner('moeRoute', moeRoutePlanner)([info([4, E], 'bf16')], [info([4, K], 'i32'), info([4, K], 'bf16')], { topK: E + 1, normTopkProb: true }),
    ).toThrow(`topK ${E + 1}`);
    expect(() => checkedPlanner('moeSwiGlu', moeSwiGluPlanner)([info([4, 9], 'bf16')], [info([4, 4], 'bf16')], {})).toThrow(
      "moeSwiGlu: input 'gateUp': 9 columns do not split into 2",
    );
    expect(() =>
      checkedPlanner('moeExperts', moeExpertsPlanner)(
        [info([4, H], 'bf16'), info([4, K], 'i32'), info([4, K], 'bf16'), info([E * 2 * I, H + 1], 'bf16'), info([E * H, I], 'bf16')],
        [info([4, H], 'f32')],
        { firstExpert: 0, numLocal: E, intermediate: I },
      ),
    ).toThrow(`moeExperts: input 'gateUp' is [${E * 2 * I},${H + 1}]`);
  });
});

describe("moeRoute: the softmax's sum over the experts in canonical order v1", () => {
  // 512 experts with a probability on a bf16 tie (core's moeMath.test.ts: the sequential order
  // rounds it the other way), and 600 random experts
  for (const c of canonicalAttnMoeCases().filter((x) => x.op === 'moeRoute')) {
    it(c.name, async () => {
      await expectBitExact(c.op, c.inputs as Tensor[], c.attrs);
    });
  }
});
