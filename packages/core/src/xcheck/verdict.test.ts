import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { Rng } from '../numerics/rng.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { ExactTensor } from '../reference/exact/exactTensor.ts';
import { diffNamed } from './namedValues.ts';
import { routingFlips, selectionFlips } from './flipDiff.ts';
import type { AlignedTensor } from './tensorDiff.ts';
import { THREE_ROWS, topkLayers } from '../../../../test/support/routedIds.ts';
import { attributionText, pairVerdict, tensorGroup } from './verdict.ts';
import type { PairVerdict } from './verdictTypes.ts';
import type { XcheckPair } from './xcheckReport.ts';

const ROWS = 6;
const COLS = 8;

/** A run's bf16 value of a float64 tensor, each element `off` bf16 steps from the rounding (0: correctly rounded, the run is exact there). */
function run(exact: Float64Array, off: (i: number) => number): Tensor {
  return { dtype: 'bf16', shape: [ROWS, COLS], data: Uint16Array.from(exact, (v, i) => f32ToBf16(Math.fround(v)) + off(i)) };
}

/** A golden and a run over three tensors: embed (exact: the run equals float64), layers.0.attn.out and layers.1.mlp.out (the run 4 steps off everywhere: its own rounding). */
function fixture(seed: number): { exact: Map<string, { tensor: ExactTensor; rowStart: number }>; run: Map<string, AlignedTensor> } {
  const rng = new Rng(seed);
  const exact = new Map<string, { tensor: ExactTensor; rowStart: number }>();
  const runs = new Map<string, AlignedTensor>();
  for (const name of ['embed', 'layers.0.attn.out', 'layers.1.mlp.out']) {
    const raw = Float64Array.from({ length: ROWS * COLS }, () => 1 + Math.abs(rng.normal()) / 4);
    // the embedding is a lookup of bf16 weights: its float64 value is the bf16 one
    const e = name === 'embed' ? raw.map((v) => bf16ToF32(f32ToBf16(Math.fround(v)))) : raw;
    exact.set(name, { tensor: { dtype: 'bf16', shape: [ROWS, COLS], data: e }, rowStart: 0 });
    runs.set(name, { tensor: run(e, () => (name === 'embed' ? 0 : 4)), rowStart: 0 });
  }
  return { exact, run: runs };
}

/** The golden: the run's values with one element of one tensor one bf16 step away. */
function planted(runs: Map<string, AlignedTensor>, name: string, row: number, col: number): Map<string, AlignedTensor> {
  const out = new Map(runs);
  const t = runs.get(name)!.tensor;
  const data = Uint16Array.from(t.data as Uint16Array);
  data[row * COLS + col] += 1;
  out.set(name, { tensor: { ...t, data }, rowStart: 0 });
  return out;
}

function verdictOf(
  a: Map<string, AlignedTensor>,
  b: Map<string, AlignedTensor>,
  exact: Map<string, { tensor: ExactTensor; rowStart: number }> | undefined,
  extra: Partial<XcheckPair> = {},
): PairVerdict {
  const pair: XcheckPair = { a: 'golden', b: 'cpu', tensors: diffNamed(a, b, 2, exact).tensors, differing: 0, maxUlp: 0, ...extra };
  return pairVerdict(pair);
}

describe('pairVerdict on planted cases', () => {
  it('a one-ulp change where the run is exact (embed): found at that tensor, row and column, and larger than the float64 error', () => {
    const { exact, run: r } = fixture(1);
    const v = verdictOf(planted(r, 'embed', 4, 3), r, exact);
    expect(v.kind).toBe('beyond');
    expect(v.first).toMatchObject({ name: 'embed', at: { row: 4, col: 3 }, op: 'the embedding lookup' });
    expect(v.first!.rowUlp).toBeGreaterThan(0);
    expect(v.first!.rowUlp).toBeLessThanOrEqual(1);
    expect(v.first!.floor!.b).toBe(0);
    expect(v.beyond).toMatchObject({ name: 'embed', at: { row: 4, col: 3 } });
    expect(v.line).toMatch(/^a difference larger than the float64 error at embed \(the embedding lookup; row 4, col 3\): .* look here$/);
    // the golden moved away from the exact value: farther by count; the largest errors (4 steps, the other tensors) are both sides' own
    expect(v.attribution).toMatchObject({ byCount: { a: 1, b: 0, side: 'a' }, byMagnitude: { side: 'tie', tensor: 'layers.0.attn.out' } });
  });

  it('the same change where both sides carry their own rounding of several ulps: found there, and within rounding', () => {
    const { exact, run: r } = fixture(2);
    const v = verdictOf(planted(r, 'layers.0.attn.out', 2, 5), r, exact);
    expect(v.kind).toBe('rounding');
    expect(v.first).toMatchObject({ name: 'layers.0.attn.out', kind: 'attn.out', at: { row: 2, col: 5 } });
    expect(v.beyond).toBeNull();
    expect(v.line).toMatch(/^expected rounding reordering at layers\.0\.attn\.out \(.*; row 2, col 5\) at [0-9.]+ row-scaled ulp/);
    expect(v.line).not.toContain('larger than');
    // the same tensor with a change of 40 steps is beyond the run's own 4
    const far = new Map(r);
    const t = r.get('layers.0.attn.out')!.tensor;
    far.set('layers.0.attn.out', { tensor: { ...t, data: Uint16Array.from(t.data as Uint16Array, (x, i) => (i === 2 * COLS + 5 ? x + 40 : x)) }, rowStart: 0 });
    expect(verdictOf(far, r, exact).kind).toBe('beyond');
  });

  it('without the float64 evaluation: the first difference, not judged', () => {
    const { run: r } = fixture(3);
    const v = verdictOf(planted(r, 'layers.1.mlp.out', 0, 0), r, undefined);
    expect(v.kind).toBe('unjudged');
    expect(v.line).toContain('first difference at layers.1.mlp.out');
    expect(verdictOf(r, r, undefined)).toMatchObject({ kind: 'identical', first: null, line: 'bit-identical: none of 3 tensors differ' });
  });

  it('a planted routing flip is counted per layer, and a large difference after it is put down to the flip, not to arithmetic', () => {
    const a = topkLayers(THREE_ROWS, THREE_ROWS);
    const b = topkLayers(
      [
        [2, 1],
        [3, 4],
        [5, 6],
      ],
      [
        [1, 2],
        [3, 7],
        [5, 6],
      ],
    );
    const routing = routingFlips(a, b);
    expect(routing).toEqual([{ layer: 1, rows: [1], count: 3 }]);
    const kept = (v: number[]): AlignedTensor => ({ tensor: { dtype: 'i32', shape: [v.length], data: Int32Array.from(v) }, rowStart: 0 });
    expect(selectionFlips(new Map([['layers.3.attn.kept', kept([4, 4, 5])]]), new Map([['layers.3.attn.kept', kept([4, 6, 5])]]))).toEqual([
      { layer: 3, rows: [1], count: 3 },
    ]);
    // layers.1.mlp.out 40 steps off in one element: beyond on its own, explained by a flip at layer 1
    const { exact, run: r } = fixture(4);
    const far = new Map(r);
    const t = r.get('layers.1.mlp.out')!.tensor;
    far.set('layers.1.mlp.out', { tensor: { ...t, data: Uint16Array.from(t.data as Uint16Array, (x, i) => (i === COLS + 1 ? x + 40 : x)) }, rowStart: 0 });
    expect(verdictOf(far, r, exact).kind).toBe('beyond');
    const v = verdictOf(far, r, exact, { routing });
    expect(v.kind).toBe('rounding');
    expect(v.routing).toEqual(routing);
    expect(v.line).toContain('grows through routing flips at layer 1 (1 of 3 rows)');
    // a flip at a later layer explains nothing before it
    expect(verdictOf(far, r, exact, { routing: [{ layer: 2, rows: [0], count: 3 }] }).kind).toBe('beyond');
  });

  it('attribution by count and by magnitude can name different sides', () => {
    const { exact, run: r } = fixture(5);
    // a: three elements one step farther; b: one element ten steps farther
    const a = new Map(r);
    const b = new Map(r);
    const t = r.get('embed')!.tensor;
    a.set('embed', { tensor: { ...t, data: Uint16Array.from(t.data as Uint16Array, (x, i) => (i < 3 ? x + 1 : x)) }, rowStart: 0 });
    b.set('embed', { tensor: { ...t, data: Uint16Array.from(t.data as Uint16Array, (x, i) => (i === 10 ? x + 10 : x)) }, rowStart: 0 });
    const v = verdictOf(a, b, new Map([['embed', exact.get('embed')!]]));
    expect(v.attribution!.byCount).toEqual({ a: 3, b: 1, side: 'a' });
    expect(v.attribution!.byMagnitude.side).toBe('b');
    expect(attributionText(v, { a: 'golden', b: 'cpu' })).toMatch(/^farther from float64 by element count: golden \(a 3, b 1 elements\); by magnitude: cpu /);
  });

  it('names places once: embed, L{i}, final, mtp', () => {
    expect(['embed', 'layers.3.attn.partial.r1', 'final.mixed', 'logits', 'mtp.attn.out.r0', 'mtp.logits'].map(tensorGroup)).toEqual([
      'embed',
      'L3',
      'final',
      'final',
      'mtp',
      'mtp',
    ]);
  });
});
