import { describe, it, expect } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { ringAllReduce, ringBlocks, RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS } from './ringAllReduce.ts';

const defaults = { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS };
const span = (blocks: ReturnType<typeof ringBlocks>) => blocks.map((b) => [b.start, b.end, b.owner, b.channel]);

describe('ringBlocks', () => {
  it('N=100, tp 2, channels 2, chunk 16: two loops, the last one partial', () => {
    // loop 0: realChunk = min(16, alignUp(ceil(100/4)=25, 16)=32) = 16, blocks b=0..3 of 16.
    // loop 1 at 64: min(16, alignUp(ceil(36/4)=9, 16)=16) = 16: [64,80) [80,96) [96,100), block 3 empty.
    expect(span(ringBlocks(100, 2, { channels: 2, chunkElems: 16 }))).toEqual([
      [0, 16, 0, 0],
      [16, 32, 1, 0],
      [32, 48, 0, 1],
      [48, 64, 1, 1],
      [64, 80, 0, 0],
      [80, 96, 1, 0],
      [96, 100, 0, 1],
    ]);
  });

  it('N=1000, tp 4, default options: one loop of 8 blocks of alignUp(125, 16) = 128', () => {
    expect(span(ringBlocks(1000, 4, defaults))).toEqual([
      [0, 128, 0, 0],
      [128, 256, 1, 0],
      [256, 384, 2, 0],
      [384, 512, 3, 0],
      [512, 640, 0, 1],
      [640, 768, 1, 1],
      [768, 896, 2, 1],
      [896, 1000, 3, 1],
    ]);
  });

  it('blocks tile [0, N) exactly once, in order, for many shapes', () => {
    for (const n of [0, 1, 15, 16, 17, 100, 1000, 4099]) {
      for (const tp of [1, 2, 3, 4, 8]) {
        for (const channels of [1, 2, 3]) {
          for (const chunkElems of [1, 16, 40, 1 << 20]) {
            let at = 0;
            let ok = true;
            for (const b of ringBlocks(n, tp, { channels, chunkElems })) {
              ok &&= b.start === at && b.end > b.start && b.end - b.start <= chunkElems && b.owner < tp;
              at = b.end;
            }
            expect(ok && at === n, `n ${n} tp ${tp} channels ${channels} chunkElems ${chunkElems}`).toBe(true);
          }
        }
      }
    }
  });

  it('bad options are named', () => {
    expect(() => ringBlocks(10, 2, { channels: 0, chunkElems: 16 })).toThrow(/channels must be a positive integer, got 0/);
    expect(() => ringBlocks(10, 2, { channels: 1, chunkElems: 2.5 })).toThrow(/chunkElems .* got 2.5/);
    expect(() => ringBlocks(-1, 2, defaults)).toThrow(/got -1/);
    expect(() => ringAllReduce([new Uint16Array(3), new Uint16Array(4)], defaults)).toThrow(/rank 1 has 4 elements, rank 0 has 3/);
  });
});

describe('ringAllReduce', () => {
  it('rank-stamped integers: exact sums for tp 1..8, several loops and channels', () => {
    const n = 1003;
    for (const tp of [1, 2, 3, 4, 8]) {
      // rank k, element i: a small integer, partial sums within |256|, so exact in bf16.
      const value = (k: number, i: number): number => (k + 1) * ((i % 9) - 4) + k;
      const partials = Array.from({ length: tp }, (_, k) => Uint16Array.from({ length: n }, (_, i) => f32ToBf16(value(k, i))));
      for (const opts of [defaults, { channels: 1, chunkElems: 16 }, { channels: 3, chunkElems: 40 }]) {
        const out = ringAllReduce(partials, opts);
        const wrong: number[] = [];
        for (let i = 0; i < n; i++) {
          let sum = 0;
          for (let k = 0; k < tp; k++) sum += value(k, i);
          if (bf16ToF32(out[i]) !== sum) wrong.push(i);
        }
        expect(wrong, `tp ${tp} ${JSON.stringify(opts)}`).toEqual([]);
      }
    }
  });

  it("4 ranks, hand-computed values: each block gets its owner's ring order", () => {
    // Every element holds x = [1, 2^-8, -1, 2^-9] across ranks 0..3; reduceOrder.test.ts
    // derives the ring sums by hand: owner 0 -> 2^-7 (0x3C00), owner 1 -> 2^-8 (0x3B80),
    // owner 2 -> 0 (0x0000), owner 3 -> 2^-9 (0x3B00). Blocks of 16 with channels 1: [0,16)
    // owner 0, [16,32) owner 1, [32,48) owner 2, [48,64) owner 3; then [64,80) owner 0 in loop 2.
    const x = [1, 2 ** -8, -1, 2 ** -9].map((v) => new Uint16Array(80).fill(f32ToBf16(v)));
    const out = ringAllReduce(x, { channels: 1, chunkElems: 16 });
    const expected = [0x3c00, 0x3b80, 0x0000, 0x3b00, 0x3c00];
    expect(Array.from(out)).toEqual(expected.flatMap((v) => new Array(16).fill(v)));
  });
});
