import { describe, expect, it } from 'vitest';
import { SMALL, f32ArrayToBf16, Rng, GDN_L2NORM_EPS, tensor, type Tensor, cpuKernel, type OpName } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { checkedPlanner } from '../checkedPlanner.ts';
import type { TensorInfo } from '../kernelProgram.ts';
import { GDN_ATTENTION_WGSL_KERNELS } from './subLayerKernels.ts';

// Each GDN op's WGSL plan against its CPU reference kernel, bit for bit, on Chromium's
// WebGPU (SwiftShader). Shapes: the 'small' config (T = 48 and an odd T = 37), its TP4
// rank (3 value heads: odd element counts), and a Flash-Next TP4 rank (key/value dim 128)
// for the recurrence's compiled-in state length. Inputs of each op are the CPU outputs of
// the op before it, so they have the model's value ranges.

const planners = GDN_ATTENTION_WGSL_KERNELS;

interface Heads {
  keyHeads: number;
  valueHeads: number;
  keyDim: number;
  valueDim: number;
}

const SMALL_HEADS: Heads = {
  keyHeads: SMALL.linearAttention.numKeyHeads,
  valueHeads: SMALL.linearAttention.numValueHeads,
  keyDim: SMALL.linearAttention.keyHeadDim,
  valueDim: SMALL.linearAttention.valueHeadDim,
};
const SMALL_TP4: Heads = { ...SMALL_HEADS, keyHeads: SMALL_HEADS.keyHeads / 4, valueHeads: SMALL_HEADS.valueHeads / 4 };
const FLASH_TP4: Heads = { keyHeads: 4, valueHeads: 12, keyDim: 128, valueDim: 128 };
const K = SMALL.linearAttention.convKernel;

const gpu = useChromiumGpu();

/** Runs op on the CPU and on the GPU, expects identical bits in every output; returns the CPU outputs. */
function expectSameBits(op: OpName, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

/** The four GDN ops chained on one rank's shapes, each compared with the CPU. */
async function checkChain(h: Heads, T: number, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const C = 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
  const vh = h.valueHeads;
  const [conv] = await expectSameBits('gdnConvSilu', [bf16Normal(rng, [T, C], 1), bf16Normal(rng, [C, 1, K], 0.5)], { kernel: K });
  // A_log as the checkpoint's log(A), A in [1, 16]
  const aLog = tensor('bf16', [vh], f32ArrayToBf16(Array.from({ length: vh }, () => Math.log(1 + 15 * rng.nextFloat()))));
  const [g, beta] = await expectSameBits('gdnGates', [bf16Normal(rng, [T, vh], 1), bf16Normal(rng, [T, vh], 1), aLog, bf16Normal(rng, [vh], 0.5)], {});
  const [o] = await expectSameBits('gdnRecurrence', [conv, g, beta], {
    ...h,
    scale: Math.fround(h.keyDim ** -0.5),
    l2Eps: GDN_L2NORM_EPS,
  });
  await expectSameBits('gdnGatedNorm', [o, bf16Normal(rng, [T, vh * h.valueDim], 1), bf16Normal(rng, [h.valueDim], 0.1, 1)], {
    heads: vh,
    headDim: h.valueDim,
    eps: SMALL.rmsNormEps,
  });
}

describe('GDN WGSL kernels are bit-identical to the CPU reference', () => {
  it("'small' shapes, T = 48", () => checkChain(SMALL_HEADS, 48, 1));
  it("'small' shapes, odd T = 37", () => checkChain(SMALL_HEADS, 37, 2));
  it("'small' TP4 rank (3 value heads), odd T = 41", () => checkChain(SMALL_TP4, 41, 3));
  it('Flash-Next TP4 rank (key/value dim 128), T = 20', () => checkChain(FLASH_TP4, 20, 4));
  it('gdnConvSilu with an odd channel count (words straddle rows), T = 37', async () => {
    const rng = new Rng(5);
    await expectSameBits('gdnConvSilu', [bf16Normal(rng, [37, 33], 1), bf16Normal(rng, [33, 1, K], 0.5)], { kernel: K });
  });
  it('gdnRecurrence continues across many tokens without drift (T = 64)', async () => {
    const rng = new Rng(6);
    const h = SMALL_HEADS;
    const C = 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
    const T = 64;
    const [conv] = cpuKernel('gdnConvSilu')([bf16Normal(rng, [T, C], 1), bf16Normal(rng, [C, 1, K], 0.5)], { kernel: K }) as Tensor[];
    // slow decay (g near 0) so the state keeps its history and grows large
    const g = tensor(
      'f32',
      [T, h.valueHeads],
      Float32Array.from({ length: T * h.valueHeads }, () => -0.01 * rng.nextFloat()),
    );
    const beta = bf16Normal(rng, [T, h.valueHeads], 0.1, 0.9);
    await expectSameBits('gdnRecurrence', [conv, g, beta], { ...h, scale: Math.fround(h.keyDim ** -0.5), l2Eps: GDN_L2NORM_EPS });
  });
});

describe('GDN planners reject bad input with a message naming it (the declaration, or what the WGSL cannot do)', () => {
  const info = (shape: number[], dtype = 'bf16'): TensorInfo => ({ shape, dtype });
  const plan = (op: OpName) => checkedPlanner(op, planners[op]!);
  it('gdnRecurrence: odd valueDim, value heads not a multiple of key heads, wrong qkv width', () => {
    const attrs = { keyHeads: 2, valueHeads: 6, keyDim: 4, valueDim: 3, scale: 0.5, l2Eps: 1e-6 };
    const io = () => [[info([5, 34]), info([5, 6], 'f32'), info([5, 6])], [info([5, 18])]] as [TensorInfo[], TensorInfo[]];
    expect(() => plan('gdnRecurrence')(...io(), attrs)).toThrow(/valueDim 3/);
    expect(() => plan('gdnRecurrence')(...io(), { ...attrs, valueDim: 4, valueHeads: 5 })).toThrow(/valueHeads 5/);
    expect(() => plan('gdnRecurrence')(...io(), { ...attrs, valueDim: 4 })).toThrow(/gdnRecurrence: input 'qkv' is \[5,34\], expected \[rows,40\]/);
  });
  it('gdnConvSilu: weight not [C,1,K]; gdnGates: g not f32', () => {
    expect(() => plan('gdnConvSilu')([info([5, 8]), info([8, 4])], [info([5, 8])], { kernel: 4 })).toThrow(
      /gdnConvSilu: input 'w' is \[8,4\], expected \[8,1,4\]/,
    );
    expect(() => plan('gdnGates')([info([5, 3]), info([5, 3]), info([3]), info([3])], [info([5, 3]), info([5, 3])], {})).toThrow(
      /gdnGates: output 'g' is bf16\[5,3\], the op gives f32\[5,3\]/,
    );
  });
  it('gdnGatedNorm: missing eps', () => {
    expect(() => plan('gdnGatedNorm')([info([5, 8]), info([5, 8]), info([4])], [info([5, 8])], { heads: 2, headDim: 4 })).toThrow(
      /gdnGatedNorm: attribute 'eps' is required/,
    );
  });
});

describe('GDN WGSL kernels: the sums of squares in canonical reduction order v1 (64 lanes, then the butterfly)', () => {
  const bits = (shape: number[], values: number[]): Tensor => tensor('bf16', shape, f32ArrayToBf16(values));

  it("gdnRecurrence: the l2 norm of k = [4096, 1 x 127] gives core's hand-computed outputs (gdnMath.test.ts), not the sequential ones", async () => {
    const dk = 128;
    const qkv = bits([1, 2 * dk + 2], [4096, ...new Array(dk - 1).fill(0), 4096, ...new Array(dk - 1).fill(1), 1 + 2 ** -7, 1 + 5 * 2 ** -7]);
    const g: Tensor = { dtype: 'f32', shape: [1, 1], data: new Float32Array([0]) };
    const [o] = await expectSameBits('gdnRecurrence', [qkv, g, bits([1, 1], [1.5])], {
      keyHeads: 1,
      valueHeads: 1,
      keyDim: dk,
      valueDim: 2,
      scale: 1,
      l2Eps: GDN_L2NORM_EPS,
    });
    // in i order: [1.515625, 1.5625]
    expect(Array.from(o!.data as Uint16Array)).toEqual(Array.from(f32ArrayToBf16([1.5078125, 1.5546875])));
  });

  it('gdnRecurrence: key dims past one 512-term step, with a partial chunk', async () => {
    const rng = new Rng(91);
    const h = { keyHeads: 2, valueHeads: 4, keyDim: 517, valueDim: 4 };
    const C = 2 * h.keyHeads * h.keyDim + h.valueHeads * h.valueDim;
    const g: Tensor = { dtype: 'f32', shape: [3, 4], data: Float32Array.from({ length: 12 }, () => -rng.nextFloat()) };
    await expectSameBits('gdnRecurrence', [bf16Normal(rng, [3, C], 3), g, bf16Normal(rng, [3, 4], 1)], {
      ...h,
      scale: Math.fround(h.keyDim ** -0.5),
      l2Eps: GDN_L2NORM_EPS,
    });
  });

  it("gdnGatedNorm: 4096 then 2^18 - 1 ones gives core's hand-computed outputs, not the sequential ones", async () => {
    const hd = 2 ** 18;
    const [y] = await expectSameBits(
      'gdnGatedNorm',
      [bits([1, hd], [4096, ...new Array(hd - 1).fill(1)]), bits([1, hd], new Array(hd).fill(0)), bits([hd], new Array(hd).fill(1))],
      {
        heads: 1,
        headDim: hd,
        eps: 1e-6,
      },
    );
    // in j order: 256 and 0.0625
    const out = y!.data as Uint16Array;
    expect([out[0], out[1], out[hd - 1]]).toEqual(Array.from(f32ArrayToBf16([254, 0.06201171875, 0.06201171875])));
  });

  it('gdnGatedNorm: rows of whole steps and of a partial step with a partial chunk', async () => {
    const rng = new Rng(92);
    for (const hd of [1024, 1030]) {
      await expectSameBits('gdnGatedNorm', [bf16Normal(rng, [3, 2 * hd], 3), bf16Normal(rng, [3, 2 * hd], 1), bf16Normal(rng, [hd], 0.1, 1)], {
        heads: 2,
        headDim: hd,
        eps: 1e-6,
      });
    }
  });
});
