import { describe, expect, it } from 'vitest';
import { SMALL, f32ToBf16, sigmoidF32, sqrtF32, Rng, PLE_GATE_SQRT_FLOOR, pleHeadCount, pleHeadVocabSizes, type Tensor, cpuKernel, type OpName } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import type { KernelPlan, KernelPlanner } from '../kernelProgram.ts';
import { pleConvSiluPlanner } from './pleConvSilu.ts';
import { pleGatePlanner } from './pleGate.ts';
import { pleNgramEmbedPlanner } from './pleNgramEmbed.ts';
import { pleRmsNormPlanner } from './pleRmsNorm.ts';

// The PLE WGSL kernels against core's CPU reference kernels, bit for bit, on random inputs
// of the 'small' config's shapes, through Chromium's WebGPU (SwiftShader).
const { hiddenSize: H, rmsNormEps: eps, vocabSize, eosTokenId } = SMALL;
const n = SMALL.hc.count;
const { embedDim: D, convKernel, convDilation, ngramSize, headsPerNgram } = SMALL.ple;
const vocabSizes = pleHeadVocabSizes(SMALL.ple);
const heads = pleHeadCount(SMALL.ple);

const rng = new Rng(777);

const gpu = useChromiumGpu();

/** Runs op on the CPU reference and on the GPU; expects every output's bits equal. */
function expectBitExact(op: OpName, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

describe.each([56, 41])('PLE kernels, T = %i', (T) => {
  it('pleNgramEmbed on the hashed ids of tokens with an EOS', async () => {
    const tokens: Tensor = { dtype: 'i32', shape: [T], data: Int32Array.from({ length: T }, () => Math.floor(rng.nextFloat() * vocabSize)) };
    (tokens.data as Int32Array)[5] = eosTokenId;
    const [ids] = cpuKernel('pleNgramIds')([tokens], { ngramSize, headsPerNgram, vocabSizes, vocabSize, eosTokenId }) as Tensor[];
    const tables = bf16Normal(rng, [vocabSizes.reduce((a, v) => a + v, 0), D / heads], 1);
    await expectBitExact('pleNgramEmbed', [ids, tables], { vocabSizes });
  });

  it('pleRmsNorm: one group (key), n groups (query/out), and groups of odd width', async () => {
    await expectBitExact('pleRmsNorm', [bf16Normal(rng, [T, H], 0.3), bf16Normal(rng, [H], 1)], { groups: 1, eps });
    await expectBitExact('pleRmsNorm', [bf16Normal(rng, [T, n * H], 2), bf16Normal(rng, [n * H], 1)], { groups: n, eps });
    await expectBitExact('pleRmsNorm', [bf16Normal(rng, [T, 3 * 5], 1), bf16Normal(rng, [3 * 5], 1)], { groups: 3, eps });
  });

  it('pleGate, scores of both signs, zero and below the sqrt floor', async () => {
    const q = bf16Normal(rng, [T, n * H], 1);
    const qd = q.data as Uint16Array;
    // row 1: all zero (score 0, gate 0.5); row 2: tiny values (|score| < 1e-6, clamped)
    qd.fill(0, n * H, 2 * n * H);
    for (let i = 2 * n * H; i < 3 * n * H; i++) qd[i] = f32ToBf16(rng.normal() * 1e-8);
    const [gate] = await expectBitExact('pleGate', [q, bf16Normal(rng, [T, H], 1)], { streams: n });
    // the rows meant to hit the zero and the clamp do
    const g = gate.data as Float32Array;
    const clamped = sqrtF32(PLE_GATE_SQRT_FLOOR);
    expect(Array.from(g.subarray(n, 2 * n))).toEqual(new Array(n).fill(0.5));
    for (const v of g.subarray(2 * n, 3 * n)) expect([sigmoidF32(clamped), sigmoidF32(-clamped)]).toContain(v);
  });

  it('pleGatedValue', async () => {
    const gate: Tensor = { dtype: 'f32', shape: [T, n], data: Float32Array.from({ length: T * n }, () => rng.nextFloat()) };
    await expectBitExact('pleGatedValue', [gate, bf16Normal(rng, [T, H], 1)], { streams: n });
  });

  it('pleConvSilu: causal dilated conv, silu, residual', async () => {
    const C = n * H;
    await expectBitExact('pleConvSilu', [bf16Normal(rng, [T, C], 1), bf16Normal(rng, [T, C], 1), bf16Normal(rng, [C, 1, convKernel], 0.5)], {
      dilation: convDilation,
    });
    // an odd channel count: words hold elements of two rows
    await expectBitExact('pleConvSilu', [bf16Normal(rng, [T, 7], 1), bf16Normal(rng, [T, 7], 1), bf16Normal(rng, [7, 1, 3], 0.5)], { dilation: 2 });
  });
});

describe('WGSL division and sqrt on this device', () => {
  // pleGate and moeRoute divide and take square roots in WGSL where the CPU rounds
  // correctly; this measures that the device does too, on random finite normal operands.
  it('are correctly rounded on 1M random operands', async () => {
    const N = 1 << 20;
    const a = new Float32Array(N);
    const b = new Float32Array(N);
    for (let i = 0; i < N; i++) {
      a[i] = (rng.nextFloat() * 2 - 1) * 2 ** Math.floor(rng.nextFloat() * 40 - 20);
      b[i] = (rng.nextFloat() * 2 - 1) * 2 ** Math.floor(rng.nextFloat() * 40 - 20) || 1;
    }
    const wgsl = `
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> q: array<f32>;
@group(0) @binding(3) var<storage, read_write> r: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x + g.y * 4096u * 64u;
  q[i] = a[i] / b[i];
  r[i] = sqrt(abs(a[i]));
}`;
    const plan: KernelPlan = {
      scratch: [],
      dispatches: [
        {
          key: 'test-div-sqrt',
          wgsl,
          bindings: [
            { target: { kind: 'input', port: 0 }, access: 'read' },
            { target: { kind: 'input', port: 1 }, access: 'read' },
            { target: { kind: 'output', port: 0 }, access: 'read_write' },
            { target: { kind: 'output', port: 1 }, access: 'read_write' },
          ],
          uniforms: new Uint32Array(0),
          workgroups: [4096, N / 64 / 4096, 1],
        },
      ],
    };
    const run = await gpu().runPlan(plan, [new Uint32Array(a.buffer), new Uint32Array(b.buffer)], [N, N]);
    const q = new Float32Array(run.outputs[0].buffer);
    const r = new Float32Array(run.outputs[1].buffer);
    let badDiv = 0;
    let badSqrt = 0;
    for (let i = 0; i < N; i++) {
      if (!Object.is(q[i], Math.fround(a[i] / b[i]))) badDiv++;
      if (!Object.is(r[i], Math.fround(Math.sqrt(Math.abs(a[i]))))) badSqrt++;
    }
    expect({ badDiv, badSqrt }).toEqual({ badDiv: 0, badSqrt: 0 });
  });
});

describe('PLE planners reject bad input', () => {
  it('names the bad value', () => {
    const info = (shape: number[], dtype: string) => ({ shape, dtype });
    expect(() => pleRmsNormPlanner([info([4, 10], 'bf16'), info([10], 'bf16')], [info([4, 10], 'bf16')], { groups: 3, eps })).toThrow('width 10');
    expect(() => pleGatePlanner([info([4, n * H], 'bf16'), info([4, H + 2], 'bf16')], [info([4, n], 'f32')], { streams: n })).toThrow(`k is [4,${H + 2}]`);
    expect(() => pleNgramEmbedPlanner([info([4, 2], 'i32'), info([10, 8], 'bf16')], [info([4, 16], 'bf16')], { vocabSizes: [3, 4] })).toThrow(
      'tables have 10 rows',
    );
    expect(() => pleConvSiluPlanner([info([4, 6], 'bf16'), info([4, 6], 'bf16'), info([6, 1, 4], 'bf16')], [info([4, 6], 'bf16')], { dilation: 0 })).toThrow(
      'dilation = 0',
    );
  });
});
