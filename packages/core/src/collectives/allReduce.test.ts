import { describe, it, expect } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { mulberry32 } from '../../../../test/support/mulberry32.ts';
import { tensor, type Tensor } from '../tensor/tensor.ts';
import { allReduce } from './allReduce.ts';
import { reduceScatter } from './reduceScatter.ts';
import { allGather } from './allGather.ts';
import { reduceInto } from './reduceOrder.ts';
import { ringBlocks, RING_DEFAULT_CHUNK_ELEMS } from './ringAllReduce.ts';

/** tp random bf16 [rows, cols] partials, roughly unit-normal-ish values of mixed sign. */
function randomPartials(tp: number, rows: number, cols: number, seed: number): Tensor[] {
  const next = mulberry32(seed);
  return Array.from({ length: tp }, () =>
    tensor(
      'bf16',
      [rows, cols],
      Uint16Array.from({ length: rows * cols }, () => f32ToBf16((next() - 0.5) * 4)),
    ),
  );
}

/** bf16 ulp distance: difference on the monotone integer line of sign-magnitude patterns. */
function ulpDistance(a: number, b: number): number {
  const line = (x: number) => (x & 0x8000 ? -(x & 0x7fff) : x);
  return Math.abs(line(a) - line(b));
}

const bitsOf = (t: Tensor) => t.data as Uint16Array;

describe('allReduce', () => {
  it('oneshot and ordered are the element-wise rank-order sums over the whole buffer', () => {
    const inputs = randomPartials(4, 10, 7, 3);
    for (const algorithm of ['oneshot', 'ordered'] as const) {
      const want = new Uint16Array(70);
      reduceInto(algorithm, 0, inputs.map(bitsOf), 0, 70, want, 0);
      const outs = allReduce(inputs, { algorithm });
      for (const y of outs) {
        expect(y.shape).toEqual([10, 7]);
        expect(Array.from(bitsOf(y))).toEqual(Array.from(want));
      }
    }
  });

  it('every rank gets equal bits in its own buffer', () => {
    const outs = allReduce(randomPartials(3, 5, 4, 4), { algorithm: 'ring', channels: 2, chunkElems: 16 });
    for (const y of outs.slice(1)) {
      expect(Array.from(bitsOf(y))).toEqual(Array.from(bitsOf(outs[0])));
      expect(y.data).not.toBe(outs[0].data);
    }
  });

  it('rejects f32 inputs and an unknown algorithm by name', () => {
    const f = tensor('f32', [2, 2], new Float32Array(4));
    expect(() => allReduce([f, f], { algorithm: 'ring' })).toThrow(/rank 0 has dtype f32/);
    const b = randomPartials(2, 2, 2, 5);
    expect(() => allReduce(b, { algorithm: 'nvls' as never })).toThrow(/unknown reduction algorithm "nvls"/);
  });
});

describe('ring all-reduce vs ring reduce-scatter + all-gather', () => {
  const chunk = 24; // rows per rank
  const cols = 64; // row length: a multiple of RING_ALIGN_ELEMS keeps block edges on rows

  function rsThenAg(inputs: Tensor[]): Uint16Array {
    return bitsOf(allGather(reduceScatter(inputs, 'ring'))[0]);
  }

  it('tp 2: identical bits (every order rounds a + b once)', () => {
    const inputs = randomPartials(2, chunk * 2, cols, 11);
    const ar = bitsOf(allReduce(inputs, { algorithm: 'ring', channels: 2, chunkElems: RING_DEFAULT_CHUNK_ELEMS })[0]);
    expect(Array.from(ar)).toEqual(Array.from(rsThenAg(inputs)));
  });

  it('tp 4, channels 2: rows whose all-reduce owner differs from the reduce-scatter owner differ, within the rounding bound', () => {
    const tp = 4;
    const inputs = randomPartials(tp, chunk * tp, cols, 12);
    const opts = { channels: 2, chunkElems: RING_DEFAULT_CHUNK_ELEMS };
    const ar = bitsOf(allReduce(inputs, { algorithm: 'ring', ...opts })[0]);
    const rs = rsThenAg(inputs);
    // One loop of 8 blocks of 768 elements = 12 rows; block b is owned by b % 4, but
    // reduce-scatter row block r (24 rows) is owned by r: only rows 0-11 (block 0, owner 0)
    // and 84-95 (block 7, owner 3) line up; the other 72 rows are summed in another order.
    const arOwner = new Int32Array(chunk * tp * cols);
    for (const b of ringBlocks(arOwner.length, tp, opts)) arOwner.fill(b.owner, b.start, b.end);
    let mismatchedOwnerRows = 0;
    const differingRows = new Set<number>();
    let differing = 0;
    let maxUlp = 0;
    let maxScaled = 0; // |ar - rs| in units of ulp(sum |x_k|): near-zero sums make plain ulps huge
    const violations: string[] = [];
    for (let row = 0; row < chunk * tp; row++) {
      const rsOwner = Math.floor(row / chunk);
      if (arOwner[row * cols] !== rsOwner) mismatchedOwnerRows++;
      for (let col = 0; col < cols; col++) {
        const i = row * cols + col;
        if (ar[i] === rs[i]) continue;
        differing++;
        differingRows.add(row);
        maxUlp = Math.max(maxUlp, ulpDistance(ar[i], rs[i]));
        if (arOwner[i] === rsOwner) violations.push(`element ${i} differs although both owners are ${rsOwner}`);
        // Each ring chain rounds tp-1 times, each error at most half a bf16 ulp of the running
        // sum, and |running sum| <= sum of |x_k|: so |ar - rs| <= (tp-1) * ulp(sum |x_k|).
        let absSum = 0;
        for (const t of inputs) absSum += Math.abs(bf16ToF32(bitsOf(t)[i]));
        const ulpOfAbsSum = 2 ** (Math.floor(Math.log2(absSum)) - 7);
        const diff = Math.abs(bf16ToF32(ar[i]) - bf16ToF32(rs[i]));
        maxScaled = Math.max(maxScaled, diff / ulpOfAbsSum);
        if (diff > (tp - 1) * ulpOfAbsSum) violations.push(`element ${i}: |${bf16ToF32(ar[i])} - ${bf16ToF32(rs[i])}| exceeds the bound`);
      }
    }
    console.log(
      `tp 4 channels 2: ${mismatchedOwnerRows} of ${chunk * tp} rows with another owner; ${differingRows.size} rows, ` +
        `${differing} of ${ar.length} elements differ; max ${maxUlp} ulp, max ${maxScaled} ulp(sum |x_k|)`,
    );
    expect(violations).toEqual([]);
    expect(mismatchedOwnerRows).toBe(72);
    expect(differingRows.size).toBeGreaterThan(0);
    expect(differingRows.size).toBeLessThanOrEqual(mismatchedOwnerRows);
  });

  it('tp 4, channels 1, N divisible by tp, one loop: identical bits', () => {
    const inputs = randomPartials(4, chunk * 4, cols, 13);
    const ar = bitsOf(allReduce(inputs, { algorithm: 'ring', channels: 1, chunkElems: RING_DEFAULT_CHUNK_ELEMS })[0]);
    expect(Array.from(ar)).toEqual(Array.from(rsThenAg(inputs)));
  });
});
