import { describe, it, expect } from 'vitest';
import { commBytesOf } from './commBytes.ts';

describe('commBytesOf', () => {
  // Known case: T = 4096 rows of H = 2048 bf16 at tp 4. Full buffer S = 4096*2048*2 =
  // 16 MiB = 16777216 bytes; each rank's shard is S/4 = 4194304 bytes.
  const S = 4096 * 2048 * 2;
  const shard = S / 4;

  it('ring accounting at tp 4 on a 16 MiB buffer', () => {
    // all-reduce: 2 * 3/4 * S = 25165824; reduce-scatter and all-gather: 3/4 * S = 12582912.
    expect(commBytesOf('allReduce', 'ring', S, S, 4)).toBe(25165824);
    expect(commBytesOf('reduceScatter', 'ring', S, shard, 4)).toBe(12582912);
    expect(commBytesOf('allGather', null, shard, S, 4)).toBe(12582912);
    // SP's claim: reduce-scatter + all-gather moves exactly what the all-reduce moved.
    expect(commBytesOf('reduceScatter', 'ring', S, shard, 4) + commBytesOf('allGather', null, shard, S, 4)).toBe(commBytesOf('allReduce', 'ring', S, S, 4));
  });

  it('oneshot all-reduce sends the whole buffer to each of tp-1 peers; ordered counts as ring', () => {
    expect(commBytesOf('allReduce', 'oneshot', S, S, 4)).toBe(3 * S);
    expect(commBytesOf('allReduce', 'ordered', S, S, 4)).toBe(25165824);
    expect(commBytesOf('reduceScatter', 'oneshot', S, shard, 4)).toBe(12582912);
  });

  it('tp 1 sends nothing; tp 8 and an uneven buffer give the exact mean', () => {
    for (const alg of ['ring', 'oneshot', 'ordered'] as const) expect(commBytesOf('allReduce', alg, S, S, 1)).toBe(0);
    expect(commBytesOf('allGather', null, S, S, 1)).toBe(0);
    expect(commBytesOf('allReduce', 'ring', 8000, 8000, 8)).toBe(14000);
    expect(commBytesOf('allReduce', 'ring', 10, 10, 4)).toBe(15);
    expect(commBytesOf('allReduce', 'ring', 10, 10, 3)).toBeCloseTo(40 / 3, 12);
  });

  it('bad input is named', () => {
    expect(() => commBytesOf('allReduce', 'tree' as never, S, S, 4)).toThrow(/unknown reduction algorithm "tree"/);
    expect(() => commBytesOf('broadcast' as never, null, S, S, 4)).toThrow(/unknown collective "broadcast"/);
    expect(() => commBytesOf('allGather', 'ring', shard, S, 4)).toThrow(/algorithm must be null, got "ring"/);
    expect(() => commBytesOf('reduceScatter', 'ring', S, S, 4)).toThrow(/input 16777216 bytes is not tp 4 times output 16777216/);
    expect(() => commBytesOf('allReduce', 'ring', S, shard, 4)).toThrow(/input 16777216 bytes differs from output 4194304/);
    expect(() => commBytesOf('allReduce', 'ring', S, S, 0)).toThrow(/tp must be a positive integer, got 0/);
    expect(() => commBytesOf('allReduce', 'ring', -2, -2, 2)).toThrow(/perRankInputBytes .* got -2/);
  });
});
