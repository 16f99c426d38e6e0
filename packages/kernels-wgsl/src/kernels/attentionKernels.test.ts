import { describe, expect, it } from 'vitest';
import { attnCausal, FLASH_NEXT, qsaIndexerDims, Rng, ropeTablesBf16, SMALL, TINY, tensor, type ModelConfig, type OpName, type Tensor } from '@hcsp/core';
import { bf16Normal, expectOpMatchesCpu, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { canonicalAttnMoeCases } from '@hcsp/bench/cases';
import { checkedPlanner } from '../checkedPlanner.ts';
import type { TensorInfo } from '../kernelProgram.ts';
import { GDN_ATTENTION_WGSL_KERNELS } from './subLayerKernels.ts';

// Each full-attention op's WGSL plan against its CPU reference kernel, bit for bit, on
// Chromium's WebGPU (SwiftShader). Shapes: the 'small' config (T = 48, an odd T = 37, and
// T = 150 where the QSA indexer drops blocks from row 67 on), its TP2 rank, 'tiny' at an
// odd T = 45 (drops from row 19 on), and a Flash-Next TP8 rank (3 query heads on 1 KV head,
// head dim 256, RoPE on 64 dims, indexer heads of 128). The ops are chained as the graph
// chains them (q_proj output -> norm+RoPE; indexer k_raw -> block keys, indexer q ->
// norm+RoPE -> selection; attention over the kept keys -> output gate), so each op sees
// the model's value ranges.

const planners = GDN_ATTENTION_WGSL_KERNELS;

const gpu = useChromiumGpu();

/** Runs op on the CPU and on the GPU, expects identical bits in every output; returns the CPU outputs. */
function expectSameBits(op: OpName, inputs: (Tensor | null)[], attrs: Record<string, unknown>): Promise<Tensor[]> {
  return expectOpMatchesCpu(gpu(), op, inputs, attrs);
}

const i32 = (shape: number[], data: Int32Array): Tensor => tensor('i32', shape, data);

/** The attention and indexer ops chained on one rank's shapes (qh query heads, kvh KV heads). */
async function checkChain(config: ModelConfig, qh: number, kvh: number, T: number, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const { headDim: hd, ropeDims } = config.attention;
  const ix = qsaIndexerDims(config);
  const { cos, sin } = ropeTablesBf16(config, T);
  const eps = config.rmsNormEps;
  const norm = { headDim: hd, offset: 0, ropeDims, eps };
  // RMS1p norm weights are stored as w with the scale 1 + w
  const qg = bf16Normal(rng, [T, qh * 2 * hd], 1.5);
  const [q] = await expectSameBits('attnHeadNormRopeBf16', [qg, bf16Normal(rng, [hd], 0.2), cos, sin], { ...norm, heads: qh, stride: 2 * hd });
  const [k] = await expectSameBits('attnHeadNormRopeBf16', [bf16Normal(rng, [T, kvh * hd], 1.5), bf16Normal(rng, [hd], 0.2), cos, sin], {
    ...norm,
    heads: kvh,
    stride: hd,
  });
  const v = bf16Normal(rng, [T, kvh * hd], 1);

  const [kb] = await expectSameBits('qsaBlockKeys', [bf16Normal(rng, [T, ix.headDim], 1), bf16Normal(rng, [ix.headDim], 0.1), cos, sin], {
    headDim: ix.headDim,
    compressRatio: ix.compressRatio,
    ropeDims,
    eps,
  });
  const idx = { heads: ix.nHeads, headDim: ix.headDim, stride: ix.headDim, offset: 0, ropeDims, eps };
  const [qi] = await expectSameBits(
    'attnHeadNormRopeBf16',
    [bf16Normal(rng, [T, ix.nHeads * ix.headDim], 1), bf16Normal(rng, [ix.headDim], 0.1), cos, sin],
    idx,
  );
  const sel = { nHeads: ix.nHeads, headDim: ix.headDim, compressRatio: ix.compressRatio, width: ix.width };
  const [blocks] = await expectSameBits('qsaSelect', [qi, kb], { ...sel, r0: 0, tokens: T });

  const attn = { heads: qh, kvHeads: kvh, headDim: hd, scale: Math.fround(hd ** -0.5), compressRatio: ix.compressRatio, width: ix.width };
  const [o] = await expectSameBits('attnCausalQsa', [q, k, v, blocks], attn);
  const dropping = T > ix.width * ix.compressRatio + ix.compressRatio - 1;
  const dense = attnCausal(q.data as Uint16Array, k.data as Uint16Array, v.data as Uint16Array, T, qh, kvh, hd, attn.scale);
  // equal to dense attention exactly when no row drops a block
  expect((o.data as Uint16Array).every((b, i) => b === dense[i])).toBe(!dropping);
  await expectSameBits('attnOutputGate', [o, qg], { heads: qh, headDim: hd });
}

describe('attention WGSL kernels are bit-identical to the CPU reference', () => {
  const { numHeads, numKvHeads } = SMALL.attention;
  it("'small' shapes, T = 48", () => checkChain(SMALL, numHeads, numKvHeads, 48, 11));
  it("'small' shapes, odd T = 37", () => checkChain(SMALL, numHeads, numKvHeads, 37, 12));
  it("'small' TP2 rank, T = 64", () => checkChain(SMALL, numHeads / 2, numKvHeads / 2, 64, 13));
  it("'small' shapes, T = 150: the indexer drops blocks", () => checkChain(SMALL, numHeads, numKvHeads, 150, 18));
  it("'tiny' shapes, odd T = 45: the indexer drops blocks", () => checkChain(TINY, TINY.attention.numHeads, TINY.attention.numKvHeads, 45, 19));
  it('Flash-Next TP8 rank (head dim 256, RoPE 64, indexer heads 128), T = 24', () => checkChain(FLASH_NEXT, 3, 1, 24, 14));
  it('attnHeadNormRopeBf16 on the gate half (offset = headDim) and with no RoPE dims, odd T = 37', async () => {
    const rng = new Rng(15);
    const hd = SMALL.attention.headDim;
    const T = 37;
    const qg = bf16Normal(rng, [T, 4 * 2 * hd], 1);
    const w = bf16Normal(rng, [hd], 0.2);
    const { cos, sin } = ropeTablesBf16(SMALL, T);
    const attrs = { heads: 4, headDim: hd, stride: 2 * hd, offset: hd, ropeDims: SMALL.attention.ropeDims, eps: 1e-6 };
    await expectSameBits('attnHeadNormRopeBf16', [qg, w, cos, sin], attrs);
    const empty = tensor('bf16', [T, 0], new Uint16Array(0));
    await expectSameBits('attnHeadNormRopeBf16', [qg, w, empty, empty], { ...attrs, ropeDims: 0 });
  });
  it('attnOutputGate with an odd head dim (words straddle heads), odd T = 37', async () => {
    const rng = new Rng(16);
    await expectSameBits('attnOutputGate', [bf16Normal(rng, [37, 3 * 7], 1), bf16Normal(rng, [37, 3 * 7 * 2], 2)], { heads: 3, headDim: 7 });
  });
});

describe('qsaSelect on the GPU: exact ties, row shards, padding rows', () => {
  const ix = qsaIndexerDims(SMALL); // 4 heads of 16, blocks of 4, 16 kept
  const sel = { nHeads: ix.nHeads, headDim: ix.headDim, compressRatio: ix.compressRatio, width: ix.width };
  const T = 100;
  const nb = T / 4;

  it('ties go to the lower block: hand-built scores 8, 4, 0 by block index mod 3', async () => {
    // every query element 1; block b's key elements 0.5, 0.25, -0.25 for b mod 3 = 0, 1, 2:
    // score = 4 heads * relu(16 * key) / sqrt(16) = 8, 4, 0, each value shared exactly
    const q = tensor('bf16', [T, ix.nHeads * ix.headDim], new Uint16Array(T * ix.nHeads * ix.headDim).fill(0x3f80));
    const keyBits = [0x3f00, 0x3e80, 0xbe80];
    const kb = tensor(
      'bf16',
      [nb, ix.headDim],
      Uint16Array.from({ length: nb * ix.headDim }, (_, i) => keyBits[Math.floor(i / ix.headDim) % 3]),
    );
    const [blocks] = await expectSameBits('qsaSelect', [q, kb], { ...sel, r0: 0, tokens: T });
    const got = blocks.data as Int32Array;
    for (let p = 0; p < T; p++) {
      const visible = Math.floor((p + 1) / 4);
      // best class first, the lower index first within a class, then listed ascending
      const order = Array.from({ length: visible }, (_, b) => b).sort((a, b) => (a % 3) - (b % 3) || a - b);
      const want = order.slice(0, ix.width).sort((a, b) => a - b);
      while (want.length < ix.width) want.push(-1);
      expect(Array.from(got.subarray(p * ix.width, (p + 1) * ix.width)), `row ${p}`).toEqual(want);
    }
    // row 99: all 9 blocks scoring 8, then 7 of the 8 scoring 4 (block 22 is left out)
    expect(Array.from(got.subarray(99 * 16, 100 * 16))).toEqual([0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 24]);
    // the dump's kept counts: 4 per listed block plus the tail; counted by hand here, since
    // a row keeps min(16, visible) blocks: row 3 sees 1 block (4 keys), row 66 sees 16 (64 +
    // 3 tail), row 99 keeps 16 of 25 blocks (64) plus its empty tail
    const [kept] = await expectSameBits('qsaKeptCount', [blocks], { compressRatio: ix.compressRatio });
    const k = kept.data as Int32Array;
    expect([k[0], k[2], k[3], k[66], k[67], k[99]]).toEqual([1, 3, 4, 67, 64, 64]);
  });

  it("a rank's row shard (r0 = 76, 38 rows, 14 of them past T) is the replicated selection's rows, then -1", async () => {
    const rng = new Rng(20);
    const q = bf16Normal(rng, [T + 14, ix.nHeads * ix.headDim], 1);
    const kb = bf16Normal(rng, [nb, ix.headDim], 1);
    const [all] = await expectSameBits('qsaSelect', [tensor('bf16', [T, q.shape[1]], (q.data as Uint16Array).subarray(0, T * q.shape[1])), kb], {
      ...sel,
      r0: 0,
      tokens: T,
    });
    const shardQ = tensor('bf16', [38, q.shape[1]], (q.data as Uint16Array).slice(76 * q.shape[1]));
    const [shard] = await expectSameBits('qsaSelect', [shardQ, kb], { ...sel, r0: 76, tokens: T });
    const w = ix.width;
    expect(Array.from((shard.data as Int32Array).subarray(0, 24 * w))).toEqual(Array.from((all.data as Int32Array).subarray(76 * w)));
    expect(Array.from((shard.data as Int32Array).subarray(24 * w))).toEqual(new Array(14 * w).fill(-1));
  });

  it('fewer tokens than one block: no block keys, every row -1', async () => {
    const rng = new Rng(21);
    const [blocks] = await expectSameBits('qsaSelect', [bf16Normal(rng, [3, ix.nHeads * ix.headDim], 1), tensor('bf16', [0, ix.headDim], new Uint16Array(0))], {
      ...sel,
      r0: 0,
      tokens: 3,
    });
    expect(Array.from(blocks.data)).toEqual(new Array(3 * ix.width).fill(-1));
  });

  it('attnCausalQsa reads a hand-made selection: row 11 keeps blocks 0 and 2 of its 3, no tail', async () => {
    const rng = new Rng(22);
    const [TT, hd, width] = [12, 8, 2];
    const q = bf16Normal(rng, [TT, hd], 1);
    const k = bf16Normal(rng, [TT, hd], 1);
    const v = bf16Normal(rng, [TT, hd], 1);
    const blocks = new Int32Array(TT * width).fill(-1);
    for (let t = 3; t < TT; t++) {
      blocks[t * width] = 0;
      if (t >= 7) blocks[t * width + 1] = t >= 11 ? 2 : 1;
    }
    const attrs = { heads: 1, kvHeads: 1, headDim: hd, scale: Math.fround(hd ** -0.5), compressRatio: 4, width };
    const [o] = await expectSameBits('attnCausalQsa', [q, k, v, i32([TT, width], blocks)], attrs);
    // row 11 is dense attention over keys 0..3 and 8..11, the last row of a 8-token pass
    const pick = (t: Tensor, rows: number[]) => Uint16Array.from(rows.flatMap((r) => Array.from((t.data as Uint16Array).subarray(r * hd, (r + 1) * hd))));
    const keys = [0, 1, 2, 3, 8, 9, 10, 11];
    const compact = attnCausal(
      pick(
        q,
        keys.map(() => 11),
      ),
      pick(k, keys),
      pick(v, keys),
      8,
      1,
      1,
      hd,
      attrs.scale,
    );
    expect((o.data as Uint16Array).subarray(11 * hd)).toEqual(compact.subarray(7 * hd));
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

describe('attention planners reject bad input with a message naming it (the declaration, or what the WGSL cannot do)', () => {
  const info = (shape: number[], dtype = 'bf16'): TensorInfo => ({ shape, dtype });
  const plan = (op: OpName) => checkedPlanner(op, planners[op]!);
  it('attnCausalQsa: heads not a multiple of kvHeads, k of the wrong width, blocks not i32', () => {
    const io = (blocks = 'i32') => [[info([5, 24]), info([5, 8]), info([5, 8]), info([5, 2], blocks)], [info([5, 24])]] as [TensorInfo[], TensorInfo[]];
    const attrs = { heads: 3, kvHeads: 1, headDim: 8, scale: 0.3, compressRatio: 4, width: 2 };
    expect(() => plan('attnCausalQsa')(...io(), { ...attrs, kvHeads: 2 })).toThrow(/heads 3 .* kvHeads 2/);
    expect(() => plan('attnCausalQsa')(...io(), { ...attrs, kvHeads: 3 })).toThrow(/attnCausalQsa: input 'k' is \[5,8\], expected \[rows,24\]/);
    expect(() => plan('attnCausalQsa')(...io('f32'), attrs)).toThrow(/attnCausalQsa: input 'blocks' is f32, expected i32/);
  });
  it('attnHeadNormRopeBf16: odd ropeDims, head overrunning the stride, cos not bf16', () => {
    const io = (cosType = 'bf16') => [[info([5, 16]), info([8]), info([5, 2], cosType), info([5, 2])], [info([5, 16])]] as [TensorInfo[], TensorInfo[]];
    const attrs = { heads: 2, headDim: 8, stride: 8, offset: 0, ropeDims: 4, eps: 1e-6 };
    expect(() => plan('attnHeadNormRopeBf16')(...io(), { ...attrs, ropeDims: 3 })).toThrow(/ropeDims 3/);
    expect(() => plan('attnHeadNormRopeBf16')(...io(), { ...attrs, offset: 2 })).toThrow(/offset 2 .* stride 8/);
    expect(() => plan('attnHeadNormRopeBf16')(...io('f32'), attrs)).toThrow(/attnHeadNormRopeBf16: input 'cos' is f32, expected bf16/);
  });
  it('qsaSelect and qsaBlockKeys: block keys that do not match the tokens', () => {
    const attrs = { r0: 0, tokens: 20, nHeads: 2, headDim: 8, compressRatio: 4, width: 2 };
    expect(() => plan('qsaSelect')([info([20, 16]), info([4, 8])], [info([20, 2], 'i32')], attrs)).toThrow(/qsaSelect: input 'kb' has 4 rows, expected 5/);
    const bk = { headDim: 8, compressRatio: 4, ropeDims: 4, eps: 1e-6 };
    expect(() => plan('qsaBlockKeys')([info([20, 8]), info([8]), info([20, 2]), info([20, 2])], [info([4, 8])], bk)).toThrow(
      /qsaBlockKeys: output 'kb' is bf16\[4,8\], the op gives bf16\[5,8\]/,
    );
  });
});

describe('attention reductions in canonical order v1: the head norm, the softmax sum l', () => {
  // the pinned inputs (core's attentionMath.test.ts has their bits by hand; the sequential order
  // gives other bits) and random ones past one 512-term step
  for (const c of canonicalAttnMoeCases().filter((x) => x.op !== 'moeRoute')) {
    it(c.name, async () => {
      await expectSameBits(c.op, c.inputs, c.attrs);
    });
  }
});
