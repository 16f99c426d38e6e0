// One rank of prefillMpi.test.ts's after-the-agreement failure, started by mpirun (node
// --import tsx): every rank passes the start-up agreement, then rank 1 fails while rank 0
// waits for it at a collective. runPrefillRanked must report rank 1's failure and end the
// whole job (MPI_Abort) instead of leaving rank 0 waiting forever.
import { runPrefillRanked } from '../../packages/cli/src/commands/prefillMpi.ts';

const out = await runPrefillRanked(async (rank) => {
  await rank.startTogether(null, 1);
  if (rank.rank === 1) {
    await new Promise((r) => setTimeout(r, 200));
    throw new Error('injected failure after the start-up agreement');
  }
  await rank.comm.barrier();
  return 'rank 0 passed the barrier without rank 1\n';
});
process.stdout.write(out);
