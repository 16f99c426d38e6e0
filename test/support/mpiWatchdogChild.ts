// One rank of mpiCommunicator.test.ts's watchdog cases, started by mpirun -np 2 (node --import
// tsx). Both ranks open the MPI communicator with a collective watchdog of argv[3] ms and meet
// once; then rank 1 stops itself (SIGSTOP), as a rank paused by a debugger or a job control
// would. argv[2]: 'collective': rank 0 enters an all-reduce that rank 1 never reaches; its
// watchdog fires on the JavaScript thread while MPI blocks a worker thread: rank 0 prints one
// JSON line (the call, how long it waited, its event loop's ticks meanwhile) and ends at once
// (exitNow, as the CLI does), so mpirun ends the job. 'finalize': rank 0 calls MPI_Finalize,
// which waits for rank 1 on the JavaScript thread, where only the addon's stall guard can end it.
import type { GraphNode, OpName } from '@hcsp/core';
import { CollectiveWatchdog } from '../../packages/backend-rocm/src/comm/collectiveWatchdog.ts';
import { MpiCommunicator } from '../../packages/backend-rocm/src/comm/mpiCommunicator.ts';

const mode = process.argv[2];
const limitMs = Number(process.argv[3]);
let ticks = 0;
const holder: { comm: MpiCommunicator | null } = { comm: null };
const watchdog = new CollectiveWatchdog(limitMs, (call) => {
  process.stdout.write(`${JSON.stringify({ rank: holder.comm!.rank, what: call.what, waitedMs: call.waitedMs, ticks })}\n`);
  holder.comm!.exitNow(3);
});
const comm = MpiCommunicator.open({ watchdog });
holder.comm = comm;
const node = (id: number, op: OpName): GraphNode => ({
  id,
  op,
  rank: null,
  inputs: [],
  outputs: [],
  attrs: { tp: comm.tp, algorithm: 'ring' },
  scope: `test.${mode}`,
  layer: -1,
});

await comm.collective(node(1, 'allGather'), [{ dtype: 'f32', shape: [1], data: Float32Array.of(comm.rank) }]);
if (comm.rank === 1) process.kill(process.pid, 'SIGSTOP');
// rank 1 stops at once; give it the moment the signal takes
await new Promise((r) => setTimeout(r, 200));
setInterval(() => ticks++, 10).unref();
if (mode === 'collective') await comm.collective(node(2, 'allReduce'), [{ dtype: 'bf16', shape: [4], data: new Uint16Array(4) }]);
await comm.finalize();
process.stdout.write(`${JSON.stringify({ rank: comm.rank, finished: true })}\n`);
