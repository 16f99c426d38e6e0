// The ranks' timings to rank 0 over a control plane that takes equal lengths from every rank:
// unequal parts (the ranks run different node counts) and more than one chunk arrive whole.
import { describe, expect, it } from 'vitest';
import type { RankControl } from '@hcsp/ranks';
import { gatherTimings } from './gatherTimings.ts';
import type { RunTiming } from './nodeTimer.ts';

/** `tp` controls of one in-memory world: a gather resolves once every rank gave its bytes, which must be of equal lengths */
function world(tp: number): RankControl[] {
  const rounds: { parts: Uint8Array[]; waiting: ((all: Uint8Array[]) => void)[] }[] = [];
  return Array.from({ length: tp }, (_, rank) => {
    let seq = 0;
    return {
      rank,
      tp,
      bytesSent: () => 0,
      gather: (bytes: Uint8Array) =>
        new Promise<Uint8Array[]>((resolve, reject) => {
          const round = (rounds[seq] ??= { parts: [], waiting: [] });
          seq++;
          round.parts[rank] = bytes.slice();
          round.waiting.push(resolve);
          if (round.waiting.length < tp) return;
          if (new Set(round.parts.map((p) => p.length)).size !== 1) return reject(new Error('unequal lengths in one gather'));
          for (const w of round.waiting) w(round.parts);
        }),
    };
  });
}

const timing = (n: number, at: number): RunTiming => ({
  startUs: at,
  endUs: at + n + 1,
  recorded: false,
  nodeEndsUs: Float64Array.from({ length: n }, (_, i) => at + i + 0.5),
  unreported: n % 3,
});

describe('gatherTimings', () => {
  it("every rank gets every rank's timing whole, across chunks and unequal node counts", async () => {
    const mine = [timing(70_000, 1e15), timing(7, 2e15), { startUs: 3e15, endUs: 3e15 + 9, recorded: true, nodeEndsUs: new Float64Array(0), unreported: 0 }];
    const all = await Promise.all(world(3).map((c, r) => gatherTimings(c, mine[r])));
    for (const got of all) expect(got).toEqual(mine);
  });
});
