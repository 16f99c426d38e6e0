// One rank of the after-the-agreement failure tests (node --import tsx; prefillMpi.test.ts
// under mpirun, launch.test.ts with torchrun's variables): every rank passes the start-up
// agreement, then rank 1 fails while rank 0 waits for it at a control-plane gather (an MPI
// all-gather). runPrefillRanked must report rank 1's failure and end the whole job (MPI_Abort
// under mpirun, the rendezvous store under launch) instead of leaving rank 0 waiting forever.
import { runPrefillRanked } from '../../packages/ranks/src/prefillRank.ts';

const out = await runPrefillRanked('mpi', async (rank) => {
  await rank.startTogether(null, 1);
  if (rank.rank === 1) {
    await new Promise((r) => setTimeout(r, 200));
    throw new Error('injected failure after the start-up agreement');
  }
  await rank.control.gather(new Uint8Array(8));
  return 'rank 0 passed the barrier without rank 1\n';
});
process.stdout.write(out);
