import { describe, expect, it } from 'vitest';
import { runOnce } from '../backend/backend.ts';
import { processLocalGroup } from '../collectives/processLocalGroup.ts';
import { TINY } from '../config/presets.ts';
import { STAND_IN_SUB_LAYERS } from '../layers/standIn/standInSubLayers.ts';
import { preparePrefill } from '../model/prefill.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import type { RunResult } from '../backend/backend.ts';
import type { Graph } from './graph.ts';
import { rankGraph } from './rankGraph.ts';

// Each rank's part of the graph, run as if in its own process (its own session, meeting its
// peers only at the collectives through an in-process group), gives exactly the lockstep
// run's values and statistics.
async function runRanks(
  graph: Graph,
  feeds: Parameters<typeof runOnce>[2],
  weights: Parameters<typeof runOnce>[3],
  keep: string[][] = [],
): Promise<RunResult[]> {
  const group = processLocalGroup(graph.tp);
  const cpu = new CpuBackend();
  return Promise.all(
    group.map(async (comm, r) => {
      const part = rankGraph(graph, r);
      const prepared = await cpu.prepare(part, weights, { communicator: comm });
      try {
        const rankFeeds = new Map([...feeds].filter(([id]) => part.inputs.includes(id)));
        return await prepared.run(rankFeeds, { keep: keep[r] ?? [] });
      } catch (e) {
        comm.leave(`failed: ${(e as Error).message}`);
        throw e;
      } finally {
        comm.leave('finished');
        await prepared.dispose();
      }
    }),
  );
}

describe('rankGraph', () => {
  for (const [tp, sp] of [
    [2, 'on'],
    [4, 'on'],
    [4, 'off'],
  ] as const) {
    it(`tp ${tp}, SP ${sp}: the ranks' parts run apart give the lockstep run's bits and bytes`, async () => {
      const p = preparePrefill({ config: TINY, tokens: 21, tp, sp, reduce: 'ring', seed: 9, subLayers: STAND_IN_SUB_LAYERS });
      const lockstep = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep: p.outputs.streamsPerStep.flat() });
      const parts = p.graph.nodes.length;
      const split = Array.from({ length: tp }, (_, r) => rankGraph(p.graph, r));
      // every per-rank node in exactly one part; every collective in every part
      const collectives = p.graph.nodes.filter((n) => n.rank === null).length;
      expect(split.reduce((a, g) => a + g.nodes.length, 0)).toBe(parts + collectives * (tp - 1));
      const keep = split.map((g, r) => p.outputs.streamsPerStep.map((step) => step[r]).filter((id) => g.values[id]));
      const ranks = await runRanks(p.graph, p.feeds, p.weights, keep);
      for (let r = 0; r < tp; r++) {
        for (const id of keep[r]) expect(ranks[r].values.get(id)!.data, id).toEqual(lockstep.values.get(id)!.data);
        expect(ranks[r].stats.hcRowsPerRank[r]).toBe(lockstep.stats.hcRowsPerRank[r]);
        expect(ranks[r].stats.commBytesPerRank[r]).toEqual(lockstep.stats.commBytesPerRank[r]);
      }
      expect(ranks[0].values.get(p.outputs.h)!.data).toEqual(lockstep.values.get(p.outputs.h)!.data);
    });
  }

  it("a rank's part holds only its own values and its ports of each collective", () => {
    const p = preparePrefill({ config: TINY, tokens: 21, tp: 2, sp: 'on', reduce: 'ring', seed: 9, subLayers: STAND_IN_SUB_LAYERS });
    const g = rankGraph(p.graph, 1);
    expect(g.rank).toBe(1);
    expect(Object.values(g.values).every((v) => v.rank === null || v.rank === 1)).toBe(true);
    for (const n of g.nodes) {
      if (n.rank === null) expect(n.inputs.length + n.outputs.length).toBe(2);
      else expect(n.rank).toBe(1);
    }
    expect(() => rankGraph(p.graph, 2)).toThrow('rankGraph: rank 2 is outside [0, 2)');
    expect(() => rankGraph(g, 0)).toThrow("rankGraph: the graph is already rank 1's part");
  });

  it('ranks that reach different collectives, or a rank that leaves, are rejected instead of hanging', async () => {
    const p = preparePrefill({ config: TINY, tokens: 21, tp: 2, sp: 'on', reduce: 'ring', seed: 9, subLayers: STAND_IN_SUB_LAYERS });
    const [c0, c1] = processLocalGroup(2);
    const collectives = p.graph.nodes.filter((n) => n.rank === null);
    const x = { dtype: 'bf16' as const, shape: [1], data: new Uint16Array(1) };
    const a = c0.collective(collectives[0], [x]);
    const b = c1.collective(collectives[1], [x]);
    await expect(a).rejects.toThrow(/ranks reached different collectives: rank 0 at node \d+ .*, rank 1 at node \d+/);
    await expect(b).rejects.toThrow(/ranks reached different collectives/);
    const [d0, d1] = processLocalGroup(2);
    const waiting = d0.collective(collectives[0], [x]);
    d1.leave('failed: out of memory');
    await expect(waiting).rejects.toThrow(/rank 1 left the group \(failed: out of memory\) while others wait at node/);
  });
});
