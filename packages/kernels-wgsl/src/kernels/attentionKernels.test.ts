import { describe, expect, it } from 'vitest';
import { FLASH_NEXT, SMALL, type ModelConfig, Rng, ropeTables, tensor, type Tensor, type OpName } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import type { TensorInfo } from '../kernelProgram.ts';
import { GDN_ATTENTION_WGSL_KERNELS } from './subLayerKernels.ts';

// Each full-attention op's WGSL plan against its CPU reference kernel, bit for bit, on
// Chromium's WebGPU (SwiftShader). Shapes: the 'small' config (T = 48 and an odd T = 37),
// its TP2 rank, and a Flash-Next TP8 rank (3 query heads on 1 KV head, head dim 256, RoPE
// on 64 dims). The ops are chained as the graph chains them (q_proj output -> norm+RoPE ->
// causal attention -> output gate), so each op sees the model's value ranges.

const planners = GDN_ATTENTION_WGSL_KERNELS;

const gpu = useChromiumGpu();

/** Runs op on the CPU and on the GPU, expects identical bits in every output; returns the CPU outputs. */
function expectSameBits(op: OpName, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

/** The attention ops chained on one rank's shapes (qh query heads, kvh KV heads). */
async function checkChain(config: ModelConfig, qh: number, kvh: number, T: number, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const { headDim: hd, ropeDims } = config.attention;
  const { cos, sin } = ropeTables(config, T);
  const norm = { headDim: hd, offset: 0, ropeDims, eps: config.rmsNormEps };
  // Gemma-style norm weights are stored as w with the scale 1 + w
  const qNormW = bf16Normal(rng, [hd], 0.2);
  const kNormW = bf16Normal(rng, [hd], 0.2);
  const qg = bf16Normal(rng, [T, qh * 2 * hd], 1.5);
  const [q] = await expectSameBits('attnHeadNormRope', [qg, qNormW, cos, sin], { ...norm, heads: qh, stride: 2 * hd });
  const [k] = await expectSameBits('attnHeadNormRope', [bf16Normal(rng, [T, kvh * hd], 1.5), kNormW, cos, sin], {
    ...norm,
    heads: kvh,
    stride: hd,
  });
  const v = bf16Normal(rng, [T, kvh * hd], 1);
  const [o] = await expectSameBits('attnCausal', [q, k, v], { heads: qh, kvHeads: kvh, headDim: hd, scale: Math.fround(hd ** -0.5) });
  await expectSameBits('attnOutputGate', [o, qg], { heads: qh, headDim: hd });
}

describe('attention WGSL kernels are bit-identical to the CPU reference', () => {
  const { numHeads, numKvHeads } = SMALL.attention;
  it("'small' shapes, T = 48", () => checkChain(SMALL, numHeads, numKvHeads, 48, 11));
  it("'small' shapes, odd T = 37", () => checkChain(SMALL, numHeads, numKvHeads, 37, 12));
  it("'small' TP2 rank, T = 64", () => checkChain(SMALL, numHeads / 2, numKvHeads / 2, 64, 13));
  it('Flash-Next TP8 rank (head dim 256, RoPE 64), T = 24', () => checkChain(FLASH_NEXT, 3, 1, 24, 14));
  it('attnHeadNormRope on the gate half (offset = headDim) and with no RoPE dims, odd T = 37', async () => {
    const rng = new Rng(15);
    const hd = SMALL.attention.headDim;
    const T = 37;
    const qg = bf16Normal(rng, [T, 4 * 2 * hd], 1);
    const w = bf16Normal(rng, [hd], 0.2);
    const { cos, sin } = ropeTables(SMALL, T);
    const attrs = { heads: 4, headDim: hd, stride: 2 * hd, offset: hd, ropeDims: SMALL.attention.ropeDims, eps: 1e-6 };
    await expectSameBits('attnHeadNormRope', [qg, w, cos, sin], attrs);
    const empty = tensor('f32', [T, 0], new Float32Array(0));
    await expectSameBits('attnHeadNormRope', [qg, w, empty, empty], { ...attrs, ropeDims: 0 });
  });
  it('attnOutputGate with an odd head dim (words straddle heads), odd T = 37', async () => {
    const rng = new Rng(16);
    await expectSameBits('attnOutputGate', [bf16Normal(rng, [37, 3 * 7], 1), bf16Normal(rng, [37, 3 * 14], 2)], { heads: 3, headDim: 7 });
  });
});

// The outputs are bf16, so a 1-ulp fp32 difference inside a kernel (a / l computed as
// a * (1 / l), a fused a * b + c) reaches an output bit only about once in 2^16 elements
// and the chained checks above could miss it. This checks the fp32 primitives the kernels
// are written with directly, on fp32 results: / correctly rounded, * and + each rounded.
describe('WGSL fp32 primitives the kernels rely on (SwiftShader)', () => {
  const N = 1 << 16;
  const exprs: [string, (a: number, b: number, c: number, d: number) => number][] = [
    ['a / b', (a, b) => Math.fround(a / b)],
    ['a * b + c', (a, b, c) => Math.fround(Math.fround(a * b) + c)],
    ['a * b - c * d', (a, b, c, d) => Math.fround(Math.fround(a * b) - Math.fround(c * d))],
  ];
  for (const [expr, ref] of exprs) {
    it(`${expr} gives the separately rounded fp32 result on ${N} inputs`, async () => {
      const rng = new Rng(17);
      // magnitudes 2^-20..2^20 with random signs: no overflow, no subnormal results
      const x = Float32Array.from({ length: 4 * N }, () => (rng.nextFloat() < 0.5 ? -1 : 1) * 2 ** (40 * rng.nextFloat() - 20));
      const wgsl = `@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let v = x[g.x]; let a = v.x; let b = v.y; let c = v.z; let d = v.w;
  y[g.x] = ${expr};
}`;
      const plan = {
        scratch: [],
        dispatches: [
          {
            key: `primitive ${expr}`,
            wgsl,
            bindings: [
              { target: { kind: 'input' as const, port: 0 }, access: 'read' as const },
              { target: { kind: 'output' as const, port: 0 }, access: 'read_write' as const },
            ],
            uniforms: new Uint32Array(0),
            workgroups: [N / 64, 1, 1] as [number, number, number],
          },
        ],
      };
      const { outputs } = await gpu().runPlan(plan, [new Uint32Array(x.buffer)], [N]);
      const got = new Float32Array(outputs[0].buffer);
      let differing = 0;
      for (let i = 0; i < N; i++) if (got[i] !== ref(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3])) differing++;
      expect(differing).toBe(0);
    });
  }
});

describe('attention planners reject bad input with a message naming it', () => {
  const info = (shape: number[], dtype = 'bf16'): TensorInfo => ({ shape, dtype });
  it('attnCausal: heads not a multiple of kvHeads, k of the wrong width', () => {
    const io = () => [[info([5, 24]), info([5, 8]), info([5, 8])], [info([5, 24])]] as [TensorInfo[], TensorInfo[]];
    expect(() => planners.attnCausal!(...io(), { heads: 3, kvHeads: 2, headDim: 8, scale: 0.3 })).toThrow(/heads 3 .* kvHeads 2/);
    expect(() => planners.attnCausal!(...io(), { heads: 3, kvHeads: 3, headDim: 8, scale: 0.3 })).toThrow(/k is \[5,8\], expected \[5,24\]/);
  });
  it('attnHeadNormRope: odd ropeDims, head overrunning the stride, cos not f32', () => {
    const io = (cosType = 'f32') => [[info([5, 16]), info([8]), info([5, 2], cosType), info([5, 2])], [info([5, 16])]] as [TensorInfo[], TensorInfo[]];
    const attrs = { heads: 2, headDim: 8, stride: 8, offset: 0, ropeDims: 4, eps: 1e-6 };
    expect(() => planners.attnHeadNormRope!(...io(), { ...attrs, ropeDims: 3 })).toThrow(/ropeDims 3/);
    expect(() => planners.attnHeadNormRope!(...io(), { ...attrs, offset: 2 })).toThrow(/offset 2 .* stride 8/);
    expect(() => planners.attnHeadNormRope!(...io('bf16'), attrs)).toThrow(/cos has dtype 'bf16'/);
  });
});
