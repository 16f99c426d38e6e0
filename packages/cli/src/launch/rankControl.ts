// How a job's ranks exchange their own few bytes (the start-up agreement, run statistics,
// NCCL's unique id), apart from the graph's collectives: over MPI when MPI runs the job, over
// the rendezvous store under hcsp launch, or not at all in a world of one.
import type { MpiCommunicator } from '@hcsp/backend-rocm';
import type { RendezvousClient } from './rendezvousStore.ts';

export interface RankControl {
  readonly rank: number;
  readonly tp: number;
  /** every rank's bytes, in rank order (equal lengths on every rank) */
  gather(bytes: Uint8Array): Promise<Uint8Array[]>;
  /** bytes this rank has sent for control so far */
  bytesSent(): number;
}

/** over the MPI world (its control traffic counted apart from the collectives') */
export function mpiControl(comm: MpiCommunicator): RankControl {
  return { rank: comm.rank, tp: comm.tp, gather: (bytes) => comm.gatherControlBytes(bytes), bytesSent: () => comm.bytesSent().control };
}

/** over the rendezvous store: each gather under its own key */
export function storeControl(client: RendezvousClient, tp: number): RankControl {
  let seq = 0;
  return { rank: client.rank, tp, gather: (bytes) => client.gather(`control/${seq++}`, bytes), bytesSent: () => client.bytesSent };
}

/** a world of one */
export const aloneControl: RankControl = { rank: 0, tp: 1, gather: async (bytes) => [bytes.slice()], bytesSent: () => 0 };

/** float64 values through a control plane: the bytes travel as they are (NaN payloads kept) */
export async function gatherNumbers(control: RankControl, values: Float64Array): Promise<Float64Array[]> {
  const all = await control.gather(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  return all.map((b) => new Float64Array(b.slice().buffer));
}
