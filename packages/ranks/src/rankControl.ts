// How a job's ranks exchange their own few bytes (the start-up agreement, run statistics,
// NCCL's unique id), apart from the graph's collectives: over MPI when MPI runs the job, over
// the rendezvous store under hcsp launch, or not at all in a world of one. Each gather waits
// for every rank, so the rank's collective watchdog times it (by its name).
import type { CollectiveWatchdog, MpiCommunicator } from '@hcsp/backend-rocm';
import type { RendezvousClient } from './rendezvousStore.ts';

export interface RankControl {
  readonly rank: number;
  readonly tp: number;
  /** every rank's bytes, in rank order (equal lengths on every rank); `what` names the gather to the watchdog ("the start-up agreement") */
  gather(bytes: Uint8Array, what?: string): Promise<Uint8Array[]>;
  /** bytes this rank has sent for control so far */
  bytesSent(): number;
}

/** over the MPI world (its control traffic counted apart from the collectives'; the communicator's watchdog times it) */
export function mpiControl(comm: MpiCommunicator): RankControl {
  return { rank: comm.rank, tp: comm.tp, gather: (bytes, what) => comm.gatherControlBytes(bytes, what), bytesSent: () => comm.bytesSent().control };
}

/** over the rendezvous store: each gather under its own key, timed by `watchdog` */
export function storeControl(client: RendezvousClient, tp: number, watchdog?: CollectiveWatchdog): RankControl {
  let seq = 0;
  const gather = (bytes: Uint8Array, what = 'a control gather'): Promise<Uint8Array[]> => {
    const key = `control/${seq++}`;
    return watchdog ? watchdog.watch(what, () => client.gather(key, bytes)) : client.gather(key, bytes);
  };
  return { rank: client.rank, tp, gather, bytesSent: () => client.bytesSent };
}

/** a world of one */
export const aloneControl: RankControl = { rank: 0, tp: 1, gather: async (bytes) => [bytes.slice()], bytesSent: () => 0 };

/** float64 values through a control plane: the bytes travel as they are (NaN payloads kept) */
export async function gatherNumbers(control: RankControl, values: Float64Array, what?: string): Promise<Float64Array[]> {
  const all = await control.gather(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), what);
  return all.map((b) => new Float64Array(b.slice().buffer));
}
