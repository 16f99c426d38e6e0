import { describe, expect, it } from 'vitest';
import { pleGatePinned } from '@hcsp/bench/cases';
import { SMALL, f32ArrayToBf16, f32ToBf16, Rng, pleShape, type Tensor, type OpName } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { checkedPlanner } from '../checkedPlanner.ts';
import type { KernelPlan } from '../kernelProgram.ts';
import { pleConvSiluPlanner } from './pleConvSilu.ts';
import { pleGatePlanner } from './pleGate.ts';
import { pleGatedValuePlanner } from './pleGatedValue.ts';
import { pleRms1pNormPlanner } from './pleRms1pNorm.ts';

// The PLE WGSL kernels against core's CPU reference kernels, bit for bit, on random inputs
// of the 'small' config's shapes (its PLE layer 1), through Chromium's WebGPU (SwiftShader).
const { hiddenSize: H, rmsNormEps: eps } = SMALL;
const n = SMALL.hc.count;
const shape = pleShape(SMALL, SMALL.ple.layerIds[0]);
const { convKernel, convDilation } = shape;

const rng = new Rng(777);

const gpu = useChromiumGpu();

/** Runs op on the CPU reference and on the GPU; expects every output's bits equal. */
function expectBitExact(op: OpName, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

const bf = (shape: number[], values: number[]): Tensor => ({ dtype: 'bf16', shape, data: f32ArrayToBf16(values) });

describe.each([56, 41])('PLE kernels, T = %i', (T) => {
  it('pleRms1pNorm: n groups (norm_key/query/conv), a weight of -1 (scale 0), groups of odd width', async () => {
    const w = bf16Normal(rng, [n * H], 0.1);
    (w.data as Uint16Array)[3] = f32ToBf16(-1);
    await expectBitExact('pleRms1pNorm', [bf16Normal(rng, [T, n * H], 2), w], { groups: n, eps });
    await expectBitExact('pleRms1pNorm', [bf16Normal(rng, [T, 3 * 5], 1), bf16Normal(rng, [3 * 5], 1)], { groups: 3, eps });
  });

  it('pleGate: per-stream keys, scores of both signs, zero and below the sqrt floor', async () => {
    const q = bf16Normal(rng, [T, n * H], 1);
    const qd = q.data as Uint16Array;
    // row 1: all zero (score 0, gate sigmoid(0) = 0.5); row 2: tiny values (|score| < 1e-6,
    // clamped; sigmoid(+-0.001) rounds to 0.5 in bf16)
    qd.fill(0, n * H, 2 * n * H);
    for (let i = 2 * n * H; i < 3 * n * H; i++) qd[i] = f32ToBf16(rng.normal() * 1e-8);
    const [gate] = await expectBitExact('pleGate', [bf16Normal(rng, [T, n * H], 1), q], { streams: n });
    const g = gate.data as Uint16Array;
    expect(Array.from(g.subarray(n, 3 * n))).toEqual(new Array(2 * n).fill(0x3f00));
    expect(new Set(g).size).toBeGreaterThan(16);
  });

  it('pleGatedValue: bf16 gates', async () => {
    const gate: Tensor = { dtype: 'bf16', shape: [T, n], data: Uint16Array.from({ length: T * n }, () => f32ToBf16(rng.nextFloat())) };
    await expectBitExact('pleGatedValue', [gate, bf16Normal(rng, [T, H], 1)], { streams: n });
  });

  it("pleNgramEmbedShard: ids below, at both edges of and above a rank's slice; an odd head width; a -0.0 table value kept", async () => {
    const heads = shape.vocabSizes.length;
    const d = shape.embedDim / heads;
    const start = shape.tableRows / 4;
    const rows = shape.tableRows / 4;
    const edges = [start - 1, start, start + rows - 1, start + rows, 0, shape.tableRows - 1];
    const ids = Int32Array.from({ length: T * heads }, (_, i) => (i < edges.length ? edges[i] : rng.int(0, shape.tableRows)));
    const table = bf16Normal(rng, [rows, d], 1);
    (table.data as Uint16Array)[3] = 0x8000;
    const [e] = await expectBitExact('pleNgramEmbedShard', [{ dtype: 'i32', shape: [T, heads], data: ids }, table], {
      rowStart: start,
      tableRows: shape.tableRows,
    });
    const out = e.data as Uint16Array;
    expect(Array.from(out.subarray(0, d))).toEqual(new Array(d).fill(0x8000));
    expect(out[d + 3]).toBe(0x8000);
    expect(Array.from(out.subarray(d, 2 * d))).toEqual(Array.from((table.data as Uint16Array).subarray(0, d)));
    // 3 of 7 ids per row: an element count that ends mid-word
    await expectBitExact(
      'pleNgramEmbedShard',
      [{ dtype: 'i32', shape: [T, 3], data: Int32Array.from({ length: T * 3 }, () => rng.int(0, 20)) }, bf16Normal(rng, [10, 7], 1)],
      {
        rowStart: 5,
        tableRows: 20,
      },
    );
  });

  it('pleConvSilu: causal conv with dilation ngramSize, silu, residual', async () => {
    const C = n * H;
    await expectBitExact('pleConvSilu', [bf16Normal(rng, [T, C], 1), bf16Normal(rng, [T, C], 1), bf16Normal(rng, [C, 1, convKernel], 0.5)], {
      dilation: convDilation,
    });
    // an odd channel count: words hold elements of two rows
    await expectBitExact('pleConvSilu', [bf16Normal(rng, [T, 7], 1), bf16Normal(rng, [T, 7], 1), bf16Normal(rng, [7, 1, 3], 0.5)], { dilation: 2 });
  });
});

describe('pleGate on the GPU', () => {
  it('keeps each rounding point: the gates of rows constructed so that dropping one changes them', async () => {
    // the rows of core's pleMath test (H = 3, Python fp32/bf16 emulation, run once): stream 0
    // needs the product rounding, 1 the sum's, 2 the scaled score's, 3 the root's; row 1 has
    // a zero key (gate 0.5)
    const k = [-1.4140625, 0.73046875, 5.90625, -2.03125, 1.046875, 1.828125, -0.45703125, -1.25, 0.578125, 0.55078125, -4.75, 3.375];
    const q = [-1.453125, 0.1572265625, -1.484375, -0.40625, -1.96875, 0.109375, 1.25, -0.4921875, 0.72265625, 1.1953125, -1.1796875, 1.203125];
    const [gate] = await expectBitExact('pleGate', [bf([2, 12], [...k, ...new Array(12).fill(0)]), bf([2, 12], [...q, ...q])], { streams: 4 });
    expect(Array.from(gate.data as Uint16Array)).toEqual([0x3e00, 0x3ea1, 0x3f20, 0x3f6b, 0x3f00, 0x3f00, 0x3f00, 0x3f00]);
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

describe('PLE planners reject bad input (their declarations do)', () => {
  it('names the bad value', () => {
    const info = (shape: number[], dtype: string) => ({ shape, dtype });
    const rms1p = checkedPlanner('pleRms1pNorm', pleRms1pNormPlanner);
    const gate = checkedPlanner('pleGate', pleGatePlanner);
    const gatedValue = checkedPlanner('pleGatedValue', pleGatedValuePlanner);
    const convSilu = checkedPlanner('pleConvSilu', pleConvSiluPlanner);
    expect(() => rms1p([info([4, 10], 'bf16'), info([10], 'bf16')], [info([4, 10], 'bf16')], { groups: 3, eps })).toThrow(
      "pleRms1pNorm: input 'x': 10 columns do not split into 3",
    );
    expect(() => gate([info([4, n * H], 'bf16'), info([4, H], 'bf16')], [info([4, n], 'bf16')], { streams: n })).toThrow(`pleGate: input 'q' is [4,${H}]`);
    expect(() => gate([info([4, n * H], 'bf16'), info([4, n * H], 'bf16')], [info([4, n], 'f32')], { streams: n })).toThrow(
      `pleGate: output 'gate' is f32[4,${n}]`,
    );
    expect(() => gatedValue([info([4, n], 'f32'), info([4, H], 'bf16')], [info([4, n * H], 'bf16')], { streams: n })).toThrow(
      "pleGatedValue: input 'gate' is f32, expected bf16",
    );
    expect(() => convSilu([info([4, 6], 'bf16'), info([4, 6], 'bf16'), info([6, 1, 4], 'bf16')], [info([4, 6], 'bf16')], { dilation: 0 })).toThrow(
      "pleConvSilu: attribute 'dilation' must be an integer >= 1, got 0",
    );
  });
});

describe('PLE WGSL kernels: the long sums in canonical reduction order v1 (64 lanes, then the butterfly)', () => {
  it("pleRms1pNorm: 4096 then ones (groups of 1024) gives core's hand-computed outputs (pleMath.test.ts), not the sequential ones", async () => {
    const h = 1024;
    const row = Array.from({ length: 2 * h }, (_, j) => (j % h === 0 ? 4096 : 1));
    const [y] = await expectBitExact('pleRms1pNorm', [bf([1, 2 * h], row), bf([2 * h], new Array(2 * h).fill(3 * 2 ** -8))], { groups: 2, eps: 1e-6 });
    // in j order: 32.5 and 2^-7 * 1.015625
    expect(Array.from(y!.data as Uint16Array)).toEqual(Array.from(f32ArrayToBf16(row.map((v) => (v === 4096 ? 32.25 : 2 ** -7 * 1.0078125)))));
  });

  it('pleRms1pNorm: groups of whole steps, of a partial step with a partial chunk, and of odd width', async () => {
    for (const [groups, gs] of [
      [2, 2560],
      [3, 1030],
      [2, 1031],
    ]) {
      await expectBitExact('pleRms1pNorm', [bf16Normal(rng, [3, groups * gs], 2), bf16Normal(rng, [groups * gs], 0.1)], { groups, eps });
    }
  });

  it("pleGate: a dot of 2^24, 2558 ones and -2^24 (H 2560) gives core's hand-computed gates, not the sequential ones", async () => {
    const h = 2560;
    const { k, q } = pleGatePinned(h);
    const [gate] = await expectBitExact('pleGate', [bf([1, 2 * h], k), bf([1, 2 * h], q)], { streams: 2 });
    // in j order both sums are 0: gates 0.5
    expect(Array.from(gate!.data as Uint16Array)).toEqual(Array.from(f32ArrayToBf16([1, 224 * 2 ** -18])));
  });

  it('pleGate: H of whole steps and of a partial step; an odd number of gates (a word holding one)', async () => {
    for (const [T, streams, h] of [
      [2, 2, 2560],
      [3, 3, 1030],
    ]) {
      await expectBitExact('pleGate', [bf16Normal(rng, [T, streams * h], 1), bf16Normal(rng, [T, streams * h], 1)], { streams });
    }
  });
});
