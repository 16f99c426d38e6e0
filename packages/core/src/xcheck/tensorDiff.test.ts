import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { Rng } from '../numerics/rng.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { diffTensors } from './tensorDiff.ts';
import { diffNamed } from './namedValues.ts';
import { overGate, tensorPlace, type XcheckPair } from './xcheckReport.ts';

function bf16(rows: number, cols: number, seed: number): { t: Tensor; exact: Float64Array } {
  const rng = new Rng(seed);
  const exact = Float64Array.from({ length: rows * cols }, () => rng.normal());
  const data = Uint16Array.from(exact, (v) => f32ToBf16(Math.fround(v)));
  return { t: { dtype: 'bf16', shape: [rows, cols], data }, exact };
}

describe('diffTensors', () => {
  it('a one-ulp change in one element: found, placed, and attributed to the side that moved away from the exact value', () => {
    const { t, exact } = bf16(6, 8, 1);
    const moved = new Uint16Array(t.data as Uint16Array);
    const i = 3 * 8 + 5;
    const v = bf16ToF32(moved[i]);
    // away from the exact value: the bf16 value is the nearest, so one step past it in the direction it already errs
    const away = v >= exact[i];
    moved[i] += v >= 0 === away ? 1 : -1;
    const a = { tensor: { ...t, data: moved }, rowStart: 0 };
    const d = diffTensors('x', a, { tensor: t, rowStart: 0 }, { exact: { tensor: { dtype: 'bf16', shape: [6, 8], data: exact }, rowStart: 0 } });
    expect(d).toMatchObject({ count: 48, differing: 1, maxUlp: 1, first: { row: 3, col: 5 } });
    expect(d.exactFraction).toBeCloseTo(47 / 48, 12);
    expect(d.exact).toMatchObject({ fartherA: 1, fartherB: 0, attributed: 'a' });
    // the same change on the other side is attributed to it
    expect(
      diffTensors('x', { tensor: t, rowStart: 0 }, a, { exact: { tensor: { dtype: 'bf16', shape: [6, 8], data: exact }, rowStart: 0 } }).exact!.attributed,
    ).toBe('b');
    expect(d.rows.differing.reduce((x, y) => x + y, 0)).toBe(1);
  });

  it('identical tensors: nothing differs, whatever the values (NaN payloads and -0 compared by bits)', () => {
    const t: Tensor = { dtype: 'bf16', shape: [2, 3], data: Uint16Array.of(0x7fc1, 0x8000, 0, 0x3f80, 0xff80, 1) };
    const d = diffTensors('x', { tensor: t, rowStart: 0 }, { tensor: t, rowStart: 0 });
    expect(d).toMatchObject({ differing: 0, exactFraction: 1, maxUlp: 0, first: null, exact: null });
    const neg: Tensor = { ...t, data: Uint16Array.of(0x7fc1, 0, 0, 0x3f80, 0xff80, 1) };
    expect(diffTensors('x', { tensor: neg, rowStart: 0 }, { tensor: t, rowStart: 0 }).differing).toBe(1);
  });

  it("a rank's shard is compared with the same rows of a replicated value", () => {
    const { t } = bf16(8, 4, 2);
    const shard: Tensor = { dtype: 'bf16', shape: [2, 4], data: (t.data as Uint16Array).slice(4 * 4, 6 * 4) };
    const d = diffTensors('x', { tensor: shard, rowStart: 4 }, { tensor: t, rowStart: 0 });
    expect(d).toMatchObject({ count: 8, differing: 0, rows: { rowStart: 4 } });
    const wrong = diffTensors('x', { tensor: shard, rowStart: 2 }, { tensor: t, rowStart: 0 });
    expect(wrong.differing).toBeGreaterThan(0);
  });

  it("row-scaled ulps: a reordered sum's one-ulp move of the row maximum is 1, a sign change near zero is small", () => {
    const b: Tensor = { dtype: 'bf16', shape: [1, 2], data: Uint16Array.of(f32ToBf16(4), f32ToBf16(1e-6)) };
    const a: Tensor = { dtype: 'bf16', shape: [1, 2], data: Uint16Array.of(f32ToBf16(4), f32ToBf16(-1e-6)) };
    const d = diffTensors('x', { tensor: a, rowStart: 0 }, { tensor: b, rowStart: 0 });
    // thousands of bf16 patterns lie between -1e-6 and 1e-6; against the row's largest value (4, ulp 2^-5) it is 6.4e-5 ulp
    expect(d.maxUlp).toBeGreaterThan(1000);
    expect(d.rowUlp).toBeLessThan(1e-3);
  });

  it('NaN and Inf: counted on each side, left out of every distance, never "within" a gate', () => {
    const NAN = 0x7fc0;
    const INF = 0x7f80;
    const { t, exact } = bf16(2, 4, 5);
    const pairOf = (tensors: ReturnType<typeof diffNamed>['tensors']): XcheckPair => ({ a: 'golden', b: 'cpu', tensors, differing: 0, maxUlp: 0 });
    const named = (x: Tensor) => new Map([['final.mixed', { tensor: x, rowStart: 0 }]]);
    // a golden of all NaN: every element differs, no distance is measured, and no gate passes it
    const nan: Tensor = { ...t, data: new Uint16Array(8).fill(NAN) };
    const allNan = diffNamed(named(nan), named(t), 4).tensors;
    expect(allNan[0]).toMatchObject({ differing: 8, nonFinite: { a: 8, b: 0 }, rowUlp: 0 });
    expect(overGate([pairOf(allNan)], 0).map((o) => o.tensor.name)).toEqual(['final.mixed']);
    expect(overGate([pairOf(allNan)], 1e9)).toHaveLength(1);
    // the same NaN bits on both sides: equal bits, still a run that produced NaN
    const both = diffNamed(named(nan), named(nan), 4).tensors;
    expect(both[0]).toMatchObject({ differing: 0, nonFinite: { a: 8, b: 8 } });
    expect(overGate([pairOf(both)], 1e9)).toHaveLength(1);
    // Inf against a finite value (one bf16 pattern away from the largest finite one) differs too
    const inf: Tensor = { ...t, data: Uint16Array.from(t.data as Uint16Array, (v, i) => (i === 2 ? INF : v)) };
    expect(diffTensors('x', { tensor: inf, rowStart: 0 }, { tensor: t, rowStart: 0 })).toMatchObject({
      differing: 1,
      nonFinite: { a: 1, b: 0 },
      maxAbs: Infinity,
      rowUlp: 0,
    });
    expect(overGate([pairOf(diffNamed(named(inf), named(t), 4).tensors)], 1e9)).toHaveLength(1);
    // a NaN on b's side leaves the row's scale (and so the other elements' distances) finite
    const bNan: Tensor = { ...t, data: Uint16Array.from(t.data as Uint16Array, (v, i) => (i === 0 ? NAN : v)) };
    const moved: Tensor = { ...t, data: Uint16Array.from(t.data as Uint16Array, (v, i) => (i === 1 ? v + 1 : v)) };
    const d = diffTensors('x', { tensor: moved, rowStart: 0 }, { tensor: bNan, rowStart: 0 });
    expect(d.nonFinite).toEqual({ a: 0, b: 1 });
    expect(d.rowUlp).toBeGreaterThan(0);
    expect(d.rowUlp).toBeLessThanOrEqual(1);
    // against the float64 value the NaN side is the farther one
    const e = { exact: { tensor: { dtype: 'bf16' as const, shape: [2, 4], data: exact }, rowStart: 0 } };
    const attributed = diffTensors('x', { tensor: nan, rowStart: 0 }, { tensor: t, rowStart: 0 }, e).exact!;
    expect(attributed).toMatchObject({ fartherA: 8, fartherB: 0, attributed: 'a' });
    expect(attributed.a.maxAbs).toBe(Infinity);
    expect(Number.isFinite(attributed.b.maxUlp)).toBe(true);
  });

  it('-0 against +0 in a row of zeros differs in its bits but not in distance (no NaN from 0/0)', () => {
    const z: Tensor = { dtype: 'bf16', shape: [1, 2], data: Uint16Array.of(0, 0) };
    const n: Tensor = { dtype: 'bf16', shape: [1, 2], data: Uint16Array.of(0x8000, 0) };
    expect(diffTensors('x', { tensor: n, rowStart: 0 }, { tensor: z, rowStart: 0 })).toMatchObject({ differing: 1, rowUlp: 0, nonFinite: { a: 0, b: 0 } });
  });

  it('refuses different dtypes or shapes beyond the rows, naming the tensor', () => {
    const { t } = bf16(2, 4, 3);
    expect(() => diffTensors('layers.1.in', { tensor: { ...t, shape: [4, 2] }, rowStart: 0 }, { tensor: t, rowStart: 0 })).toThrow(
      'layers.1.in: shapes differ beyond the rows: [4,2] against [2,4]',
    );
    expect(() => diffTensors('y', { tensor: { dtype: 'i32', shape: [2, 4], data: new Int32Array(8) }, rowStart: 0 }, { tensor: t, rowStart: 0 })).toThrow(
      'y: dtypes differ: i32 against bf16',
    );
  });
});

describe('named tensors and the gate', () => {
  it('places names in layers and ranks, compares the names both runs have, and gates on row-scaled ulps', () => {
    expect(tensorPlace('layers.12.attn.partial.r3', 48)).toEqual({ layer: 12, rank: 3 });
    expect(tensorPlace('embed', 48)).toEqual({ layer: -1, rank: null });
    expect(tensorPlace('final.mixed', 48)).toEqual({ layer: 48, rank: null });
    const { t } = bf16(2, 4, 4);
    const moved = new Uint16Array(t.data as Uint16Array);
    moved[0] += 1;
    const a = new Map([
      ['layers.0.in', { tensor: { ...t, data: moved }, rowStart: 0 }],
      ['only.a', { tensor: t, rowStart: 0 }],
    ]);
    const b = new Map([
      ['layers.0.in', { tensor: t, rowStart: 0 }],
      ['only.b', { tensor: t, rowStart: 0 }],
    ]);
    const { tensors, onlyIn } = diffNamed(a, b, 4);
    expect(tensors.map((x) => [x.name, x.layer, x.differing])).toEqual([['layers.0.in', 0, 1]]);
    expect(onlyIn).toEqual({ a: ['only.a'], b: ['only.b'] });
    const pair: XcheckPair = { a: 'x', b: 'y', tensors, differing: 1, maxUlp: 1 };
    expect(overGate([pair], 2)).toEqual([]);
    expect(overGate([pair], 0).map((o) => o.tensor.name)).toEqual(['layers.0.in']);
  });
});
