// The multi-process communicators a rank can use (prefill --comm), each declared once here.
// Which backends run a rank's part with which of them is the backend list's to say
// (@hcsp/backends: BackendEntry.comm); rankBackends.ts reads it. Adding a communicator is one
// row here, its opening in prefillRank.ts, and the backends that take it naming it in the list.

/** A communicator a rank meets its peers through at the graph's collective nodes. */
export interface CommunicatorKind {
  /** as --comm names it */
  readonly mode: string;
  /** whose ranks it joins, for messages: "host ranks" */
  readonly ranks: string;
  /**
   * Where its collectives' operands live: 'host', tensors in this process's memory (core's
   * GraphSession hands a collective node's host inputs to Communicator.collective); 'device',
   * the backend's own buffers, enqueued between its kernels (the device ops' collective or
   * recorded steps). A 'device' communicator only runs on a backend whose device it opens on:
   * it opens at the run, on the backend the rank prepared.
   */
  readonly buffers: 'host' | 'device';
  /**
   * When it opens: at the 'join' (it is the job's world, and the control plane too: MPI), or
   * at the 'run' on the backend's device, its id handed round over the control plane (NCCL).
   */
  readonly opens: 'join' | 'run';
  /** seconds a rank may wait in one collective for its peers unless told otherwise (--collective-timeout) */
  readonly defaultTimeoutS: number;
}

/**
 * The collective timeouts are PyTorch's defaults for the same kinds of ranks: 10 minutes for
 * NCCL process groups (GPU ranks), 30 minutes for Gloo's (CPU ranks, which "may need longer":
 * PyTorch PR 110947). A watched call's wait is the skew between the ranks reaching it (at the
 * first collective, each rank's weight reading too); host ranks compute on shared CPUs, where
 * one rank can fall minutes behind the others. A rank stopped or hung is reported within this
 * bound, not never.
 */
export const COMMUNICATORS = [
  { mode: 'mpi', ranks: 'host ranks', buffers: 'host', opens: 'join', defaultTimeoutS: 1800 },
  { mode: 'nccl', ranks: 'GPU ranks', buffers: 'device', opens: 'run', defaultTimeoutS: 600 },
] as const satisfies readonly CommunicatorKind[];

/** A multi-process communicator: MPI (host ranks) or RCCL/NCCL (GPU ranks). */
export type RankCommMode = (typeof COMMUNICATORS)[number]['mode'];

export const RANK_COMM_MODES: readonly RankCommMode[] = COMMUNICATORS.map((c) => c.mode);

/** --comm's values: sim (every rank simulated in this process) and the communicators. */
export const COMM_MODES = ['sim', ...RANK_COMM_MODES] as const;
export type CommMode = 'sim' | RankCommMode;

/** The communicator --comm names, or undefined. */
export function communicatorKind(mode: string): CommunicatorKind | undefined {
  return COMMUNICATORS.find((c) => c.mode === mode);
}
