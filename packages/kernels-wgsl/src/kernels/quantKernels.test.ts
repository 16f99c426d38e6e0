import { describe, expect, it } from 'vitest';
import { f32ToBf16, FP8_FORMATS, f32ToFp8, perTokenScale, Rng, type Tensor, cpuKernel, type OpName } from '@hcsp/core';
import { runPlannerOnGpu, tensorInfo, tensorWords, useChromiumGpu } from '../../../../test/support/wgslKernelSuite.ts';
import type { KernelPlan, TensorInfo } from '../kernelProgram.ts';
import { FP8_WGSL_FORMATS, type Fp8Format, fp8EncodeWgsl } from '../wgsl/fp8.wgsl.ts';
import { f32Bits } from './planParts.ts';
import { type QuantStyle, rowQuantWgsl } from './quantFp8.ts';
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
const bitsOf = (x: number): number => ((f32[0] = x), u32[0]);
const valueOf = (bits: number): number => ((u32[0] = bits), f32[0]);
const bf16Value = (b: number): number => valueOf(b << 16);

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
        if (kind === 0) x[i] = rng.nextU32(); // any pattern: NaN, inf, subnormal
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
      for (let i = 0; i < n; i++) want[i] = f32ToFp8(valueOf(x[i]), format);
      const d = diffWords(outputs[0], want, (i) => `x bits 0x${x[i].toString(16)}`);
      expect(d.count, d.first).toBe(0);
    });
  }
});

/** Random (amax, x) pairs: amax fp32 bits over all exponents (subnormal, 0, inf, NaN too), |x| up to amax (1 + 2^-8). */
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
    else if (r < 8) a = rng.int(1, 512); // amax around 448 * 2^-150: scale rounds to 0 or the smallest subnormals
    else if (r < 20) a = rng.nextU32() & 0x7fffff; // subnormal amax: subnormal scale
    else if (r < 50) a = ((rng.int(1, 12) << 23) | (rng.nextU32() & 0x7fffff)) >>> 0; // tiny normal: subnormal scale, 1/s may overflow
    else a = ((rng.int(1, 255) << 23) | (rng.nextU32() & 0x7fffff)) >>> 0;
    amax[i] = a;
    const k = rng.int(0, 20);
    const av = valueOf(a);
    let xb: number;
    if (k === 0) xb = rng.int(0, 2) ? 0x8000 : 0;
    else if (k === 1) xb = (rng.int(0, 2) << 15) | 0x7f80; // inf x (the fused kernel's bf(v) can overflow)
    else if (k === 2) xb = rng.nextU32() & 0x807f; // bf16 subnormal
    else xb = f32ToBf16((rng.nextFloat() * 2 - 1) * 1.00390625 * (av === av && av !== Infinity ? av : 1));
    x[i] = xb;
  }
  return { amax, x };
}

describe('row state and element quantization (WGSL rowQuantWgsl) vs core', () => {
  it('the pairs reach every path: subnormal and zero scales, 1/s overflow, inf and NaN amax', () => {
    const { amax } = amaxPairs(1 << 17, 21);
    let subnormal = 0, zero = 0, invInf = 0, special = 0;
    for (const a of amax) {
      const s = perTokenScale(valueOf(a), 'e4m3fn');
      if (s === 0) zero++;
      else if (s < 2 ** -126) subnormal++;
      if (s !== 0 && fr(1 / s) === Infinity) invInf++;
      if (a >= 0x7f800000) special++;
    }
    expect(Math.min(subnormal, zero, invInf, special)).toBeGreaterThan(100);
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
      const plan = pairPlan(`test-rowquant-${format}-${style}`, helpers, expr, n, f32Bits(FP8_WGSL_FORMATS[format].max));
      const { outputs } = await gpu().runPlan(plan, [amax, x], [2 * n]);
      const gotQ = new Uint32Array(n);
      const gotS = new Uint32Array(n);
      const wantQ = new Uint32Array(n);
      const wantS = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        gotQ[i] = outputs[0][2 * i];
        gotS[i] = outputs[0][2 * i + 1];
        const s = perTokenScale(valueOf(amax[i]), format);
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
    else if (kind === 1) for (let j = 0; j < cols; j++) row[j] = rng.int(0, 2) ? 0x8000 : 0; // zero row, signed zeros
    else if (kind === 2) {
      normalRow(1e37); // huge: bf16 max and beyond-range ratios after rounding
      row[rng.int(0, cols)] = 0xff7f;
    } else if (kind === 3) for (let j = 0; j < cols; j++) row[j] = (rng.nextU32() & 0x8000) | rng.int(0, 0x380); // subnormal and tiny: subnormal scale
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
    } else if (kind === 8) for (let j = 0; j < cols; j++) row[j] = rng.nextU32() & 0xff7f; // any finite bf16 bits
    else normalRow(1);
  }
  return x;
}

/** Runs an op's WGSL plan and returns its outputs' storage words. */
async function runOp(op: OpName, inputs: Tensor[], cpuOut: Tensor[], attrs: Record<string, unknown>): Promise<Uint32Array[]> {
  return (await runPlannerOnGpu(gpu(), QUANT_WGSL_KERNELS[op]!, inputs, cpuOut.map(tensorInfo), attrs)).words;
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
      for (const [rows, cols, seed] of [[70, 128, 1], [23, 77, 2], [1, 77, 3], [5, 1, 4]]) {
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
    else if (kind === 2) for (let i = 0; i < w; i++) r[i] = f32ToBf16(bf16Value(r[i]) * 3e38); // v overflows to inf in some columns
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
      for (const [rows, n, h, seed] of [[70, 4, 128, 5], [13, 4, 77, 6], [1, 1, 77, 7]]) {
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

describe('planner errors name the bad value', () => {
  const x: TensorInfo = { shape: [2, 8], dtype: 'bf16' };
  const q: TensorInfo = { shape: [2, 8], dtype: 'fp8e4m3fn' };
  const s: TensorInfo = { shape: [2], dtype: 'f32' };
  const plan = QUANT_WGSL_KERNELS.quantFp8PerToken!;
  it('rejects a bad format, style, q dtype and shapes', () => {
    expect(() => plan([x], [q, s], { format: 'e5m2', style: 'divide' })).toThrow(/e5m2/);
    expect(() => plan([x], [q, s], { format: 'e4m3fn', style: 'multiply' })).toThrow(/multiply/);
    expect(() => plan([x], [q, s], { format: 'e4m3fnuz', style: 'divide' })).toThrow(/fp8e4m3fn/);
    expect(() => plan([x], [q, { shape: [3], dtype: 'f32' }], { format: 'e4m3fn', style: 'divide' })).toThrow(/\[3\]/);
    expect(() =>
      QUANT_WGSL_KERNELS.hcGatedMeanQuant!([x, x], [{ shape: [2, 8], dtype: 'bf16' }, q, s], { format: 'e4m3fn', style: 'divide', streams: 3 }),
    ).toThrow(/\[2,8\]/);
  });
});
