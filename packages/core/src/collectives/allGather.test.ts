import { describe, it, expect } from 'vitest';
import { f32ToBf16 } from '../numerics/bf16.ts';
import { tensor, type Tensor } from '../tensor/tensor.ts';
import { allGather, padRows, shardTensorRows, trimRows } from './allGather.ts';

/** [rows, cols] f32 tensor whose element (r, c) is 1000*r + c + offset: every row is recognisable. */
function stamped(rows: number, cols: number, offset = 0): Tensor {
  return tensor(
    'f32',
    [rows, cols],
    Float32Array.from({ length: rows * cols }, (_, i) => 1000 * Math.floor(i / cols) + (i % cols) + offset),
  );
}

describe('allGather', () => {
  it("rank-stamped shards: every rank gets rank k's rows at k's place, bits exact", () => {
    for (const tp of [1, 2, 3, 4, 8]) {
      const shards = Array.from({ length: tp }, (_, k) =>
        tensor(
          'bf16',
          [2, 3],
          Uint16Array.from({ length: 6 }, (_, i) => f32ToBf16(10 * k + i)),
        ),
      );
      const outs = allGather(shards);
      expect(outs.length).toBe(tp);
      const want = shards.flatMap((s) => Array.from(s.data));
      for (const y of outs) {
        expect(y.dtype).toBe('bf16');
        expect(y.shape).toEqual([2 * tp, 3]);
        expect(Array.from(y.data)).toEqual(want);
      }
      if (tp > 1) expect(outs[1].data).not.toBe(outs[0].data);
    }
  });

  it('gathers f32 and rejects mismatched ranks by name', () => {
    expect(Array.from(allGather([stamped(1, 2), stamped(1, 2, 5)])[0].data)).toEqual([0, 1, 5, 6]);
    expect(() => allGather([stamped(1, 2), stamped(2, 2)])).toThrow(/rank 1 has shape \[2,2\], rank 0 has \[1,2\]/);
    const b = tensor('bf16', [1, 2], new Uint16Array(2));
    expect(() => allGather([stamped(1, 2), b])).toThrow(/rank 1 has dtype bf16, rank 0 has f32/);
  });
});

describe('shard / pad / trim', () => {
  it('shard allocates exactly C rows, copies real rows, zero-pads rows at or past T', () => {
    const T = 10;
    const tp = 4;
    const C = Math.ceil(T / tp); // 3: rank 3 owns rows 9..11, of which 10 and 11 are padding
    const x = stamped(T, 5, 1);
    const shards = Array.from({ length: tp }, (_, r) => shardTensorRows(x, r, tp, C));
    for (const [r, s] of shards.entries()) {
      expect(s.shape).toEqual([C, 5]);
      expect(s.data.length).toBe(C * 5);
      expect(s.data.buffer.byteLength).toBe(C * 5 * 4); // its own C-row buffer, nothing larger behind it
      for (let row = 0; row < C; row++) {
        const global = r * C + row;
        const got = Array.from(s.data.subarray(row * 5, row * 5 + 5));
        expect(got).toEqual(global < T ? Array.from(x.data.subarray(global * 5, global * 5 + 5)) : [0, 0, 0, 0, 0]);
      }
    }
    // Gather + trim restores x exactly.
    const back = trimRows(allGather(shards)[0], T);
    expect(back.shape).toEqual([T, 5]);
    expect(back.data.length).toBe(T * 5);
    expect(Array.from(back.data)).toEqual(Array.from(x.data));
  });

  it('a rank wholly past T gets an all-zero shard of C rows', () => {
    const s = shardTensorRows(stamped(2, 3), 3, 4, 1); // T = 2, tp 4, C 1: rank 3 owns row 3
    expect(s.shape).toEqual([1, 3]);
    expect(Array.from(s.data)).toEqual([0, 0, 0]);
  });

  it('pad appends zero rows; trim drops them', () => {
    const x = tensor('bf16', [2, 2], Uint16Array.of(1, 2, 3, 4));
    const p = padRows(x, 4);
    expect(p.shape).toEqual([4, 2]);
    expect(Array.from(p.data)).toEqual([1, 2, 3, 4, 0, 0, 0, 0]);
    const t = trimRows(p, 2);
    expect(t.shape).toEqual([2, 2]);
    expect(t.data.length).toBe(4);
    expect(t.data.buffer).not.toBe(p.data.buffer);
    expect(Array.from(t.data)).toEqual([1, 2, 3, 4]);
  });

  it('bad arguments are named', () => {
    const x = stamped(10, 2);
    expect(() => shardTensorRows(x, 4, 4, 3)).toThrow(/rank 4 is not in \[0, 4\)/);
    expect(() => shardTensorRows(x, 0, 4, 2)).toThrow(/chunk 2 \* tp 4 = 8 rows cannot hold the 10 rows/);
    expect(() => shardTensorRows(x, 0, 0, 3)).toThrow(/tp must be a positive integer, got 0/);
    expect(() => shardTensorRows(x, 0, 4, 0)).toThrow(/chunk must be a positive integer, got 0/);
    expect(() => padRows(x, 9)).toThrow(/rows 9 is fewer than the 10 rows/);
    expect(() => trimRows(x, 11)).toThrow(/rows 11 is more than the 10 rows/);
    expect(() => trimRows(x, -1)).toThrow(/got -1/);
  });
});
