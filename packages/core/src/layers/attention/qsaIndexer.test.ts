import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { f32ArrayToBf16 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { qsaBlockKeys, qsaBlockScores, qsaIndexerDims, qsaIndexerSelect, qsaQueries, qsaSelectBlocks, type QsaIndexerDims } from './qsaIndexer.ts';
import { concatQsaSelections, qsaKeptCount, qsaKeptPositions } from './qsaSelection.ts';
import { ropeTablesBf16 } from './ropeTables.ts';

const tiny = getConfig('tiny');
const withRope = (ropeDims: number, ropeTheta: number) => ({ ...tiny, attention: { ...tiny.attention, ropeDims, ropeTheta } });
const tablesOf = (ropeDims: number, ropeTheta: number, tokens: number) => {
  const t = ropeTablesBf16(withRope(ropeDims, ropeTheta), tokens);
  return [t.cos.data as Uint16Array, t.sin.data as Uint16Array] as const;
};
const bf16Of = (n: number, f: (i: number) => number) => f32ArrayToBf16(Float32Array.from({ length: n }, (_, i) => f(i)));

describe('QSA indexer against an independent computation', () => {
  // attentionExpectations.py, "QSA selection case": 2 heads of 8 dims, RoPE on 4 dims with
  // theta 1e4, blocks of 4, 2 blocks kept, T = 30; qk[t][c] = ((7t + 13c + (tc mod 5))
  // mod 17 - 8) / 4, q_layernorm w[d] = ((3d) mod 5 - 2) / 8, k_layernorm ((7d) mod 9 - 4) / 16.
  // Row 14's second and third best blocks tie exactly: the lower index (1) is kept.
  const EXPECTED = [
    [-1, -1],
    [-1, -1],
    [-1, -1],
    [0, -1],
    [0, -1],
    [0, -1],
    [0, -1],
    [0, 1],
    [0, 1],
    [0, 1],
    [0, 1],
    [0, 1],
    [0, 1],
    [0, 2],
    [0, 1],
    [1, 2],
    [2, 3],
    [0, 1],
    [0, 2],
    [1, 2],
    [0, 2],
    [3, 4],
    [0, 1],
    [4, 5],
    [1, 2],
    [0, 3],
    [2, 3],
    [0, 4],
    [3, 5],
    [1, 2],
  ];
  const d: QsaIndexerDims = { nHeads: 2, headDim: 8, ropeDims: 4, compressRatio: 4, width: 2, eps: 1e-6 };
  const T = 30;
  const C = (d.nHeads + 1) * d.headDim;
  const qk = bf16Of(T * C, (i) => (((((i / C) | 0) * 7 + (i % C) * 13 + ((((i / C) | 0) * (i % C)) % 5)) % 17) - 8) / 4);
  const qNorm = bf16Of(8, (i) => (((i * 3) % 5) - 2) / 8);
  const kNorm = bf16Of(8, (i) => (((i * 7) % 9) - 4) / 16);
  const [cos, sin] = tablesOf(4, 1e4, T);

  it('selects the same blocks for every row', () => {
    const sel = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 0, T, d);
    expect(sel.r0).toBe(0);
    expect(sel.rows).toBe(T);
    expect(Array.from(sel.blocks)).toEqual(EXPECTED.flat());
  });

  it('keeps every token up to 2 * 4 + 3 = 11 visible, then 8 plus the tail', () => {
    const sel = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 0, T, d);
    const counts = Array.from({ length: T }, (_, p) => qsaKeptCount(sel, p));
    expect(counts.slice(0, 11)).toEqual(Array.from({ length: 11 }, (_, p) => p + 1));
    expect(counts.slice(11)).toEqual(Array.from({ length: T - 11 }, (_, i) => 8 + ((11 + i + 1) % 4)));
    const kept = new Int32Array(T);
    // row 29: blocks 1 and 2, then the tail 28, 29
    expect(Array.from(kept.subarray(0, qsaKeptPositions(sel, 29, kept)))).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 28, 29]);
  });
});

describe('QSA indexer, hand-built scores', () => {
  // One query head of 8 dims, RoPE on dims 0..1 only, unit norm weights (w = 0). Every
  // query and key lies in dims 6..7, where RoPE does nothing, so after the RMS norm
  // q_7 = sqrt(8) and score_b = relu(q_7 kb_7) / sqrt(8) = relu(kb_7), with
  // kb_7 = sqrt(8) v / sqrt(u^2 + v^2) for a block of four equal raw keys (u, v) in dims 6, 7.
  const d: QsaIndexerDims = { nHeads: 1, headDim: 8, ropeDims: 2, compressRatio: 4, width: 3, eps: 1e-6 };
  const blocks: [number, number][] = [
    [1, 0], // 0: score 0
    [1, 1], // 1: 1/sqrt(2), ties with block 3
    [0, 1], // 2: 1, the best
    [-1, 1], // 3: 1/sqrt(2)
    [1, -1], // 4: relu(<0) = 0
    [1, 2], // 5: 2/sqrt(5), second best
  ];
  const T = 26;
  const C = 2 * 8;
  const qk = new Float32Array(T * C);
  for (let t = 0; t < T; t++) {
    qk[t * C + 7] = 1.5; // the query: dim 7
    const [u, v] = blocks[Math.min(Math.floor(t / 4), 5)];
    qk[t * C + 8 + 6] = u;
    qk[t * C + 8 + 7] = v;
  }
  const zeros = new Uint16Array(8);
  const [cos, sin] = tablesOf(2, 1e4, T);

  it('keeps the 3 best blocks, the lower index on a tie, ascending, plus the tail', () => {
    const sel = qsaIndexerSelect(f32ArrayToBf16(qk), zeros, zeros, cos, sin, T, 25, 26, d);
    expect(Array.from(sel.blocks)).toEqual([1, 2, 5]);
    const kept = new Int32Array(T);
    expect(Array.from(kept.subarray(0, qsaKeptPositions(sel, 0, kept)))).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 20, 21, 22, 23, 24, 25]);
  });

  it('scores as the formula says', () => {
    const bits = f32ArrayToBf16(qk);
    const kb = qsaBlockKeys(bits, zeros, cos, sin, T, { stride: C, offset: 8 }, d);
    const q = qsaQueries(bits.subarray(25 * C, 26 * C), zeros, cos, sin, 25, 26, { stride: C, offset: 0 }, d);
    const scores = qsaBlockScores(q, kb, 25, 26, 6, d);
    const expected = [0, Math.SQRT1_2, 1, Math.SQRT1_2, 0, 2 / Math.sqrt(5)].map((r) => Math.sqrt(8) * r);
    // bf16 normed values: a relative error of a few 2^-9
    expected.forEach((e, b) => {
      expect(Math.abs(scores[b] - e)).toBeLessThan(0.02 * e + 1e-6);
    });
    expect(scores[1]).toBe(scores[3]);
    expect(scores[0]).toBe(0);
    expect(scores[4]).toBe(0);
  });
});

describe('QSA indexer under sequence parallelism', () => {
  const small = getConfig('small');
  const d = qsaIndexerDims(small);
  const T = 150;
  const rng = new Rng(41);
  const qk = rng.fillBf16Normal(T * (d.nHeads + 1) * d.headDim, 1);
  const qNorm = rng.fillBf16Normal(d.headDim, 0.1);
  const kNorm = rng.fillBf16Normal(d.headDim, 0.1);
  const t16 = ropeTablesBf16(small, T);
  const [cos, sin] = [t16.cos.data as Uint16Array, t16.sin.data as Uint16Array];
  const replicated = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 0, T, d);

  it("drops tokens at T = 150 on 'small' (16 blocks of 4 kept)", () => {
    expect(d.width).toBe(16);
    expect(qsaKeptCount(replicated, 149)).toBe(16 * 4 + 2);
    // the selection is not simply the latest blocks
    expect(Array.from(replicated.blocks.subarray(149 * 16, 150 * 16))).not.toEqual(Array.from({ length: 16 }, (_, i) => 21 + i));
  });

  it('row shards (each rank its own rows, all k_raw) concatenate to the replicated selection, bit for bit', () => {
    const splits: number[][] = [
      [0, 75, 150],
      [0, 50, 100, 150],
      [0, 38, 76, 114, 150],
      [0, 1, 67, 68, 149, 150],
    ];
    for (const bounds of splits) {
      const parts = bounds.slice(1).map((r1, i) => qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, bounds[i], r1, d));
      const gathered = concatQsaSelections(parts);
      expect(gathered.rows).toBe(T);
      expect(gathered.blocks).toEqual(replicated.blocks);
    }
  });

  it('an empty shard (a padding-only rank) is allowed; out-of-order parts are not', () => {
    const empty = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 150, 150, d);
    expect(empty.rows).toBe(0);
    const a = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 0, 10, d);
    const b = qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 20, 30, d);
    expect(() => concatQsaSelections([a, b])).toThrow(/starts at row 20, expected 10/);
    expect(() => qsaIndexerSelect(qk, qNorm, kNorm, cos, sin, T, 140, 151, d)).toThrow(/rows \[140, 151\) run past the 150 tokens/);
  });

  it('rejects NaN scores and mis-sized inputs', () => {
    const scores = new Float32Array(2 * 20).fill(1);
    scores[20 + 3] = NaN;
    expect(() => qsaSelectBlocks(scores, 79, 81, 20, d)).toThrow(/row 80 block 3 scored NaN/);
    expect(() => qsaBlockKeys(qk.subarray(1), kNorm, cos, sin, T, { stride: 80, offset: 64 }, d)).toThrow(/k_raw has 11999 values/);
  });
});
