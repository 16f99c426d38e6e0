import { describe, expect, it } from 'vitest';
import { f32ToBf16, FP8_FORMATS, f32ToFp8, perTokenScale, Rng, type Tensor, cpuKernel, type OpName } from '@hcsp/core';
import { runPlannerOnGpu, tensorInfo, tensorWords, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import { checkedPlanner } from '../checkedPlanner.ts';
import type { KernelPlan, TensorInfo } from '../kernelProgram.ts';
import { FP8_WGSL_FORMATS, type Fp8Format, fp8EncodeWgsl } from '../wgsl/fp8.wgsl.ts';
import { f32Bits } from './planParts.ts';
import { type QuantStyle, quantScaleFactor, rowQuantWgsl } from './quantFp8.ts';
import { QUANT_WGSL_KERNELS } from './quantKernels.ts';

// Bit-equality of the WGSL fp8 quantization with core's CPU reference, on Chromium's WebGPU
// (SwiftShader): the encoder alone, the row-state + element math on random (amax, x) pairs
// (subnormal and non-finite amax included), and both ops' plans on whole tensors.
const FORMATS: Fp8Format[] = ['e4m3fn', 'e4m3fnuz'];
const STYLES: QuantStyle[] = ['divide', 'reciprocal'];
const CASES = FORMATS.flatMap((format) => STYLES.map((style) => ({ format, style })));
const fr = Math.fround;
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const bitsOf = (x: number): number => {
  f32[0] = x;
  return u32[0];
};
const valueOfBits = (bits: number): number => {
  u32[0] = bits;
  return f32[0];
};
const bf16Value = (b: number): number => valueOfBits(b << 16);

const gpu = useChromiumGpu();

/** A one-dispatch plan: out[i] = expr over input words a[i], b[i] and uniform u.w0 (one invocation per i). */
function pairPlan(key: string, helpers: string, expr: string, n: number, w0 = 0): KernelPlan {
  const wgsl = `${helpers}
struct U { w0: u32 }
@group(0) @binding(3) var<uniform> u: U;
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x + g.y * 16384u * 64u;
  if (i < ${n}u) { ${expr} }
}`;
  const groups = Math.ceil(n / 64);
  return {
    scratch: [],
    dispatches: [
      {
        key,
        wgsl,
        bindings: [
          { target: { kind: 'input', port: 0 }, access: 'read' },
          { target: { kind: 'input', port: 1 }, access: 'read' },
          { target: { kind: 'output', port: 0 }, access: 'read_write' },
        ],
        uniforms: new Uint32Array([w0, 0, 0, 0]),
        workgroups: [Math.min(groups, 16384), Math.ceil(groups / 16384), 1],
      },
    ],
  };
}

/** Mismatch count and the first few, as a message. */
function diffWords(got: ArrayLike<number>, want: ArrayLike<number>, what: (i: number) => string): { count: number; first: string } {
  let count = 0;
  const first: string[] = [];
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) {
      count++;
      if (first.length < 5) first.push(`${what(i)}: gpu 0x${got[i].toString(16)} cpu 0x${want[i].toString(16)}`);
    }
  }
  return { count, first: first.join('; ') };
}

/** fp32 scale bits with every NaN as 0x7fc00000 (the CPU's NaN payload is the engine's choice). */
function scaleBits(scale: Float32Array): Uint32Array {
  const out = new Uint32Array(scale.length);
  for (let i = 0; i < scale.length; i++) out[i] = scale[i] !== scale[i] ? 0x7fc00000 : bitsOf(scale[i]);
  return out;
}

describe('fp8.wgsl', () => {
  it('mirrors core FP8_FORMATS', () => {
    for (const format of FORMATS) {
      const w = FP8_WGSL_FORMATS[format];
      const c = FP8_FORMATS[format];
      expect([w.dtype, w.bias, w.max, w.nanBits, w.hasNegativeZero]).toEqual([c.dtype, c.bias, c.max, c.nanBits, c.hasNegativeZero]);
      expect(w.maxOdd * 2 ** w.maxPow2).toBe(w.max);
      expect(w.maxOdd % 2).toBe(1);
    }
  });

  for (const format of FORMATS) {
    it(`f32_bits_to_fp8 (${format}) equals core f32ToFp8 on 2^18 fp32 patterns`, async () => {
      const n = 1 << 18;
      const x = new Uint32Array(n);
      const rng = new Rng(11);
      for (let i = 0; i < n; i++) {
        const kind = i & 3;
        if (kind === 0)
          x[i] = rng.nextU32(); // any pattern: NaN, inf, subnormal
        else if (kind === 1) x[i] = (rng.nextU32() & 0x80000000) | ((rng.int(100, 140) << 23) >>> 0) | (rng.nextU32() & 0x7fffff);
        else {
          // exact fp8 grid points and midpoints (ties) and their fp32 neighbours
          const e = rng.int(-12, 10);
          const v = (rng.int(0, 33) / 2) * 2 ** (e - 3);
          x[i] = (bitsOf(rng.int(0, 2) ? -v : v) + rng.int(-1, 2)) >>> 0;
        }
      }
      const plan = pairPlan(`test-fp8-${format}`, fp8EncodeWgsl(format), 'y[i] = f32_bits_to_fp8(a[i]) | (b[i] & u.w0);', n);
      const { outputs } = await gpu().runPlan(plan, [x, x], [n]);
      const want = new Uint32Array(n);
      for (let i = 0; i < n; i++) want[i] = f32ToFp8(valueOfBits(x[i]), format);
      const d = diffWords(outputs[0], want, (i) => `x bits 0x${x[i].toString(16)}`);
      expect(d.count, d.first).toBe(0);
    });
  }
});

/**
 * Random (amax, x) pairs: amax fp32 bits over all exponents (subnormal, 0, inf, NaN too), |x|
 * up to amax (1 + 2^-8). Powers of two around 2^-118 make the 'reciprocal' subnormal scale an
 * exact tie (m = 2^23 times an odd significand of fl(1/max); the tie's lower neighbour is even
 * for both formats, so these are the only ties the product path can meet).
 */
function amaxPairs(n: number, seed: number): { amax: Uint32Array; x: Uint32Array } {
  const rng = new Rng(seed);
  const amax = new Uint32Array(n);
  const x = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rng.int(0, 100);
    let a: number;
    if (r === 0) a = 0;
    else if (r === 1) a = 0x7f800000;
    else if (r === 2) a = 0x7fc00000 | (rng.nextU32() & 0x3fffff);
    else if (r < 8)
      a = rng.int(1, 512); // amax around 448 * 2^-150: scale rounds to 0 or the smallest subnormals
    else if (r < 11) {
      const e = rng.int(-149, -99);
      a = e >= -126 ? (e + 127) << 23 : 1 << (e + 149);
    } else if (r < 20)
      a = rng.nextU32() & 0x7fffff; // subnormal amax: subnormal scale
    else if (r < 50)
      a = ((rng.int(1, 12) << 23) | (rng.nextU32() & 0x7fffff)) >>> 0; // tiny normal: subnormal scale, 1/s may overflow
    else a = ((rng.int(1, 255) << 23) | (rng.nextU32() & 0x7fffff)) >>> 0;
    amax[i] = a;
    const k = rng.int(0, 20);
    const av = valueOfBits(a);
    let xb: number;
    if (k === 0) xb = rng.int(0, 2) ? 0x8000 : 0;
    else if (k === 1)
      xb = (rng.int(0, 2) << 15) | 0x7f80; // inf x (the fused kernel's bf(v) can overflow)
    else if (k === 2)
      xb = rng.nextU32() & 0x807f; // bf16 subnormal
    else xb = f32ToBf16((rng.nextFloat() * 2 - 1) * 1.00390625 * (av === av && av !== Infinity ? av : 1));
    x[i] = xb;
  }
  return { amax, x };
}

describe('row state and element quantization (WGSL rowQuantWgsl) vs core', () => {
  it('the pairs reach every path: subnormal and zero scales, 1/s overflow, inf and NaN amax, subnormal ties', () => {
    const { amax } = amaxPairs(1 << 17, 21);
    for (const style of STYLES) {
      let subnormal = 0,
        zero = 0,
        invInf = 0,
        special = 0,
        ties = 0;
      for (const a of amax) {
        const s = perTokenScale(valueOfBits(a), 'e4m3fn', style);
        if (s === 0) zero++;
        else if (s < 2 ** -126) subnormal++;
        if (s !== 0 && fr(1 / s) === Infinity) invInf++;
        if (a >= 0x7f800000) special++;
        // exact scale in units of 2^-149 (doubles hold the 48-bit product): a half-way case
        const units = (style === 'divide' ? valueOfBits(a) / 448 : valueOfBits(a) * fr(1 / 448)) * 2 ** 149;
        if (s < 2 ** -126 && units - Math.floor(units) === 0.5) ties++;
      }
      expect(Math.min(subnormal, zero, invInf, special), style).toBeGreaterThan(100);
      if (style === 'reciprocal') expect(ties).toBeGreaterThan(10);
    }
  });
  for (const { format, style } of CASES) {
    it(`${format} ${style}: q and scale bits equal on 2^17 (amax, x) pairs`, async () => {
      const n = 1 << 17;
      const { amax, x } = amaxPairs(n, format === 'e4m3fn' ? 21 : 22);
      const helpers = rowQuantWgsl(FP8_WGSL_FORMATS[format], style);
      const expr = `let aBits = a[i] & 0x7fffffffu;
  let rq = row_quant(aBits, aBits > 0x7f800000u, bitcast<f32>(u.w0));
  y[2u * i] = quant_bf16(b[i], rq);
  y[2u * i + 1u] = rq.scaleBits;`;
      const plan = pairPlan(`test-rowquant-${format}-${style}`, helpers, expr, n, f32Bits(quantScaleFactor(FP8_WGSL_FORMATS[format], style)));
      const { outputs } = await gpu().runPlan(plan, [amax, x], [2 * n]);
      const gotQ = new Uint32Array(n);
      const gotS = new Uint32Array(n);
      const wantQ = new Uint32Array(n);
      const wantS = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        gotQ[i] = outputs[0][2 * i];
        gotS[i] = outputs[0][2 * i + 1];
        const s = perTokenScale(valueOfBits(amax[i]), format, style);
        wantS[i] = s;
        const xv = bf16Value(x[i]);
        wantQ[i] = f32ToFp8(style === 'divide' ? fr(xv / s) : fr(xv * fr(1 / s)), format);
      }
      const pair = (i: number) => `amax 0x${amax[i].toString(16)} x bf16 0x${x[i].toString(16)}`;
      const dq = diffWords(gotQ, wantQ, pair);
      const ds = diffWords(gotS, scaleBits(wantS), pair);
      expect(ds.count, ds.first).toBe(0);
      expect(dq.count, dq.first).toBe(0);
    });
  }
});

/** Rows of bf16 bits, one kind per row (cycling), covering the cases the kernels must get right. */
function quantRows(rows: number, cols: number, format: Fp8Format, seed: number): Uint16Array {
  const rng = new Rng(seed);
  const x = new Uint16Array(rows * cols);
  const kinds = 10;
  for (let t = 0; t < rows; t++) {
    const row = x.subarray(t * cols, (t + 1) * cols);
    const kind = t % kinds;
    const normalRow = (std: number) => row.set(rng.fillBf16Normal(cols, std));
    if (kind === 0) normalRow(2 ** rng.int(-20, 21));
    else if (kind === 1)
      for (let j = 0; j < cols; j++) row[j] = rng.int(0, 2) ? 0x8000 : 0; // zero row, signed zeros
    else if (kind === 2) {
      normalRow(1e37); // huge: bf16 max and beyond-range ratios after rounding
      row[rng.int(0, cols)] = 0xff7f;
    } else if (kind === 3)
      for (let j = 0; j < cols; j++) row[j] = (rng.nextU32() & 0x8000) | rng.int(0, 0x380); // subnormal and tiny: subnormal scale
    else if (kind === 4) {
      normalRow(2 ** -112); // amax near 2^-110: subnormal elements that matter
      for (let j = 0; j < cols; j += 3) row[j] = rng.nextU32() & 0x807f;
    } else if (kind === 5) {
      normalRow(1);
      row[rng.int(0, cols)] = 0x7fc1; // one NaN
    } else if (kind === 6) {
      normalRow(1);
      row[rng.int(0, cols)] = 0xff80; // -inf
    } else if (kind === 7) {
      // quant.test.ts's pinned pairs where divide and reciprocal give different fp8 values
      const [a, b] = format === 'e4m3fn' ? [3.875, 0.181640625] : [2.90625, -0.0189208984375];
      normalRow(0.5);
      for (let j = 0; j < cols; j++) if (Math.abs(bf16Value(row[j])) >= a) row[j] = 0;
      row[0] = f32ToBf16(a);
      for (let j = 1; j < cols; j += 2) row[j] = f32ToBf16(b);
    } else if (kind === 8)
      for (let j = 0; j < cols; j++) row[j] = rng.nextU32() & 0xff7f; // any finite bf16 bits
    else normalRow(1);
  }
  return x;
}

/** Runs an op's WGSL plan and returns its outputs' storage words. */
async function runOp(op: OpName, inputs: Tensor[], cpuOut: Tensor[], attrs: Record<string, unknown>): Promise<Uint32Array[]> {
  return (await runPlannerOnGpu(gpu(), checkedPlanner(op, QUANT_WGSL_KERNELS[op]!), inputs, cpuOut.map(tensorInfo), attrs)).words;
}

function expectSameBits(op: string, what: string, got: Uint32Array, want: Tensor): void {
  const wantWords = want.dtype === 'f32' ? scaleBits(want.data as Float32Array) : tensorWords(want);
  const d = diffWords(got, wantWords, (i) => `${op} ${what} word ${i}`);
  expect(d.count, d.first).toBe(0);
}

describe('quantFp8PerToken plan vs CPU kernel', () => {
  for (const { format, style } of CASES) {
    it(`${format} ${style}: q and scale bit-identical (rows 1..70, cols 128 and 77)`, async () => {
      const attrs = { format, style };
      for (const [rows, cols, seed] of [
        [70, 128, 1],
        [23, 77, 2],
        [1, 77, 3],
        [5, 1, 4],
      ]) {
        const x: Tensor = { dtype: 'bf16', shape: [rows, cols], data: quantRows(rows, cols, format, seed) };
        const cpu = cpuKernel('quantFp8PerToken')([x], attrs) as Tensor[];
        const [q, scale] = await runOp('quantFp8PerToken', [x], cpu, attrs);
        expectSameBits(`[${rows},${cols}]`, 'q', q, cpu[0]);
        expectSameBits(`[${rows},${cols}]`, 'scale', scale, cpu[1]);
      }
    });
  }

  it('the test rows exercise the styles: divide and reciprocal disagree on them', () => {
    for (const format of FORMATS) {
      const x: Tensor = { dtype: 'bf16', shape: [70, 128], data: quantRows(70, 128, format, 1) };
      const div = cpuKernel('quantFp8PerToken')([x], { format, style: 'divide' })[0]!.data as Uint8Array;
      const rec = cpuKernel('quantFp8PerToken')([x], { format, style: 'reciprocal' })[0]!.data as Uint8Array;
      expect(div.some((v, i) => v !== rec[i])).toBe(true);
    }
  });
});

/** up and normed [rows, n*h]; per-row kinds: random, zero, huge (overflow to inf), NaN, saturating bf(v) > amax. */
function gatedMeanInputs(rows: number, n: number, h: number, seed: number): { up: Uint16Array; normed: Uint16Array } {
  const rng = new Rng(seed);
  const w = n * h;
  const up = rng.fillBf16Normal(rows * w, 2);
  const normed = rng.fillBf16Normal(rows * w, 1);
  for (let t = 0; t < rows; t++) {
    const r = normed.subarray(t * w, (t + 1) * w);
    const u = up.subarray(t * w, (t + 1) * w);
    const kind = t % 6;
    if (kind === 1) r.fill(0);
    else if (kind === 2)
      for (let i = 0; i < w; i++) r[i] = f32ToBf16(bf16Value(r[i]) * 3e38); // v overflows to inf in some columns
    else if (kind === 3) r[rng.int(0, w)] = 0x7fc0;
    else if (kind === 4) {
      // large up: sigmoid = 1, so v is the plain mean, often just above a bf16 tie (bf(v) > amax)
      u.fill(f32ToBf16(30));
      for (let i = 0; i < w; i++) r[i] = f32ToBf16(1 + rng.int(0, 256) / 256);
    } else if (kind === 5) for (let i = 0; i < w; i++) r[i] = f32ToBf16(bf16Value(r[i]) * 2 ** -100); // tiny rows, still normal
  }
  return { up, normed };
}

describe('hcGatedMeanQuant plan vs CPU kernel', () => {
  for (const { format, style } of CASES) {
    it(`${format} ${style}: x, q and scale bit-identical (rows 1..70, H 128 and 77)`, async () => {
      for (const [rows, n, h, seed] of [
        [70, 4, 128, 5],
        [13, 4, 77, 6],
        [1, 1, 77, 7],
      ]) {
        const attrs = { format, style, streams: n };
        const { up, normed } = gatedMeanInputs(rows, n, h, seed);
        const inputs: Tensor[] = [
          { dtype: 'bf16', shape: [rows, n * h], data: up },
          { dtype: 'bf16', shape: [rows, n * h], data: normed },
        ];
        const cpu = cpuKernel('hcGatedMeanQuant')(inputs, attrs) as Tensor[];
        const [x, q, scale] = await runOp('hcGatedMeanQuant', inputs, cpu, attrs);
        const tag = `[${rows},${n}x${h}]`;
        expectSameBits(tag, 'x', x, cpu[0]);
        expectSameBits(tag, 'q', q, cpu[1]);
        expectSameBits(tag, 'scale', scale, cpu[2]);
      }
    });
  }
});

describe("the two kernels' scales differ by exactly one fp32 ulp on a constructed row (GPU)", () => {
  // x = normed / 2 (n = 1, sigmoid(0) = 1/2): amax 77/64 (e4m3fn) resp. 165/128 (e4m3fnuz);
  // fused 'divide' scale exactly 11/4096 resp. 11/2048, separate 'reciprocal' one ulp above
  // (fl(1/448) = (1/448)(1 + 192 2^-32), fl(1/240) = (1/240)(1 + 112 2^-31)); the element
  // 4.75 * fused scale is an fp8 tie -> 5 fused, just below it -> 4.5 separate
  const ROWS = [
    { format: 'e4m3fn', amax: 77 / 64, scale: 11 / 4096, tieX: 209 / 16384, five: 0x4a, fourHalf: 0x49 },
    { format: 'e4m3fnuz', amax: 165 / 128, scale: 11 / 2048, tieX: 209 / 8192, five: 0x52, fourHalf: 0x51 },
  ] as const;
  for (const c of ROWS) {
    it(c.format, async () => {
      const row = [c.amax, c.tieX, -0.5 * c.amax, 0];
      const up: Tensor = { dtype: 'bf16', shape: [1, 4], data: new Uint16Array(4) };
      const normed: Tensor = { dtype: 'bf16', shape: [1, 4], data: Uint16Array.from(row, (v) => f32ToBf16(2 * v)) };
      const fusedAttrs = { format: c.format, style: 'divide', streams: 1 };
      const cpuFused = cpuKernel('hcGatedMeanQuant')([up, normed], fusedAttrs) as Tensor[];
      const [x, fq, fscale] = await runOp('hcGatedMeanQuant', [up, normed], cpuFused, fusedAttrs);
      const xT: Tensor = { dtype: 'bf16', shape: [1, 4], data: Uint16Array.from(row, (v) => f32ToBf16(v)) };
      expect(Array.from(x)).toEqual(Array.from(tensorWords(xT)));
      const sepAttrs = { format: c.format, style: 'reciprocal' };
      const cpuSep = cpuKernel('quantFp8PerToken')([xT], sepAttrs) as Tensor[];
      const [sq, sscale] = await runOp('quantFp8PerToken', [xT], cpuSep, sepAttrs);
      expect(fscale[0]).toBe(f32Bits(c.scale));
      expect(sscale[0]).toBe(f32Bits(c.scale) + 1);
      expect((fq[0] >>> 8) & 0xff).toBe(c.five);
      expect((sq[0] >>> 8) & 0xff).toBe(c.fourHalf);
    });
  }
});

describe('fp8QuantWeightPerChannel plan vs CPU kernel', () => {
  for (const format of FORMATS) {
    it(`${format}: q and scale bit-identical (the separate kernel over the weight's rows)`, async () => {
      for (const [rows, cols, seed] of [
        [40, 128, 8],
        [9, 77, 9],
      ]) {
        const w: Tensor = { dtype: 'bf16', shape: [rows, cols], data: quantRows(rows, cols, format, seed) };
        const cpu = cpuKernel('fp8QuantWeightPerChannel')([w], { format }) as Tensor[];
        const [q, scale] = await runOp('fp8QuantWeightPerChannel', [w], cpu, { format });
        expectSameBits(`[${rows},${cols}]`, 'q', q, cpu[0]);
        expectSameBits(`[${rows},${cols}]`, 'scale', scale, cpu[1]);
      }
    });
  }
});

/** fp8 bytes of every kind (NaN excluded unless asked), scales of a realistic range. */
function ptpcInputs(rows: number, k: number, outF: number, format: Fp8Format, seed: number, withNaN: boolean): Tensor[] {
  const rng = new Rng(seed);
  const nan = FP8_FORMATS[format].nanBits;
  const bytes = (n: number) =>
    Uint8Array.from({ length: n }, () => {
      let b = rng.int(0, 256);
      while (!withNaN && (format === 'e4m3fnuz' ? b === 0x80 : (b & 0x7f) === 0x7f)) b = rng.int(0, 256);
      return withNaN && rng.int(0, 500) === 0 ? nan : b;
    });
  const scales = (n: number) => Float32Array.from({ length: n }, () => fr(2 ** rng.int(-12, -2) * (1 + rng.nextFloat())));
  const dtype = FP8_FORMATS[format].dtype;
  return [
    { dtype, shape: [rows, k], data: bytes(rows * k) },
    { dtype: 'f32', shape: [rows], data: scales(rows) },
    { dtype, shape: [outF, k], data: bytes(outF * k) },
    { dtype: 'f32', shape: [outF], data: scales(outF) },
  ];
}

describe('fp8LinearPtpc plan vs CPU kernel', () => {
  for (const format of FORMATS) {
    for (const scaleOrder of ['weightFirst', 'tokenFirst'] as const) {
      it(`${format} ${scaleOrder}: y bit-identical (odd K and N, a NaN operand)`, async () => {
        const attrs = { format, scaleOrder };
        for (const [rows, k, outF, seed, withNaN] of [
          [7, 77, 9, 10, false],
          [16, 128, 40, 11, false],
          [3, 33, 5, 12, true],
        ] as const) {
          const inputs = ptpcInputs(rows, k, outF, format, seed, withNaN);
          const cpu = cpuKernel('fp8LinearPtpc')(inputs, attrs) as Tensor[];
          const [y] = await runOp('fp8LinearPtpc', inputs, cpu, attrs);
          expectSameBits(`[${rows},${k}]x[${outF},${k}]`, 'y', y, cpu[0]);
        }
      });
    }
  }
  it('the scale order decides a bf16 tie (hand-computed, K = 1, as in core layers/fp8Linear.test.ts)', async () => {
    // q = 448 both sides (acc = 200704), sx = fl(1.03125 fl(1/448)), sw = fl(1.625 fl(1/448)):
    // weight first lands on the tie 1.67578125 (-> even, 0x3FD6), token first one ulp above (0x3FD7)
    const q: Tensor = { dtype: 'fp8e4m3fn', shape: [1, 1], data: Uint8Array.from([f32ToFp8(448, 'e4m3fn')]) };
    const inputs: Tensor[] = [
      q,
      { dtype: 'f32', shape: [1], data: Float32Array.from([fr(1.03125 * fr(1 / 448))]) },
      q,
      { dtype: 'f32', shape: [1], data: Float32Array.from([fr(1.625 * fr(1 / 448))]) },
    ];
    for (const [scaleOrder, bits] of [
      ['weightFirst', 0x3fd6],
      ['tokenFirst', 0x3fd7],
    ] as const) {
      const attrs = { format: 'e4m3fn', scaleOrder };
      const [y] = await runOp('fp8LinearPtpc', inputs, cpuKernel('fp8LinearPtpc')(inputs, attrs) as Tensor[], attrs);
      expect(y[0] & 0xffff).toBe(bits);
    }
  });
});

describe('planner errors name the bad value (the declarations check)', () => {
  const x: TensorInfo = { shape: [2, 8], dtype: 'bf16' };
  const q: TensorInfo = { shape: [2, 8], dtype: 'fp8e4m3fn' };
  const s: TensorInfo = { shape: [2], dtype: 'f32' };
  const plan = checkedPlanner('quantFp8PerToken', QUANT_WGSL_KERNELS.quantFp8PerToken!);
  it('rejects a bad format, style, q dtype and shapes', () => {
    expect(() => plan([x], [q, s], { format: 'e5m2', style: 'divide' })).toThrow(/e5m2/);
    expect(() => plan([x], [q, s], { format: 'e4m3fn', style: 'multiply' })).toThrow(/multiply/);
    expect(() => plan([x], [q, s], { format: 'e4m3fnuz', style: 'divide' })).toThrow(/output 'q' is fp8e4m3fn\[2,8\], the op gives fp8e4m3fnuz/);
    expect(() => plan([x], [q, { shape: [3], dtype: 'f32' }], { format: 'e4m3fn', style: 'divide' })).toThrow(/output 'scale' is f32\[3\]/);
    expect(() =>
      checkedPlanner('hcGatedMeanQuant', QUANT_WGSL_KERNELS.hcGatedMeanQuant!)([x, x], [{ shape: [2, 8], dtype: 'bf16' }, q, s], {
        format: 'e4m3fn',
        style: 'divide',
        streams: 3,
      }),
    ).toThrow(/input 'normed': 8 columns do not split into 3/);
  });
});
