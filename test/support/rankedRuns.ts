// What a multi-process prefill (--comm mpi: under mpirun, hcsp launch, or alone) must share with the
// in-process run of the same command: every output digest, the plan, and rank by rank the
// bytes each communicator really sent, which must be the simulated accounting's.
import { expect } from 'vitest';

// biome-ignore lint/suspicious/noExplicitAny: two commands' parsed --json outputs, walked freely by the expectations
export function expectSameRankedRun(ranked: Record<string, any>, sim: Record<string, any>, tp: number, startedBy: 'mpirun' | 'launch' | 'alone'): void {
  expect(ranked.comm).toBe('mpi');
  expect(sim.comm).toBe('sim');
  for (const k of ['outputSha256', 'logitsSha256', 'mtpStateSha256', 'mtpLogitsSha256', 'nextTokens', 'mtpDraftTokens', 'sp', 'chunk', 'qsa', 'hcRowsPerRank'])
    expect(ranked[k], k).toEqual(sim[k]);
  expect(ranked.commBytesPerRank).toHaveLength(tp);
  expect(ranked.commBytesPerRank).toEqual(sim.commBytesPerRank);
  expect(ranked.world).toMatchObject({ ranks: tp, startedBy });
  expect(ranked.world.library).toMatch(/^Open MPI v\d/);
  expect(ranked.world.secondsPerRank).toHaveLength(tp);
}
