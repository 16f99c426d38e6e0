import type { DeviceCounters } from '../backend/backend.ts';
import type { Communicator } from '../collectives/communicator.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { Graph, GraphNode, ValueDecl, ValueId } from './graph.ts';
import type { MemoryPlan } from './memoryPlan.ts';

/**
 * A whole run as the loop would run it, handed to a device once (DeviceOps.record): the
 * graph's nodes in the loop's order, the values fed to it and the values a run returns (read
 * back or kept on the device).
 */
export interface RunProgram {
  readonly graph: Graph;
  readonly inputs: readonly ValueId[];
  readonly outputs: readonly ValueId[];
}

/** A run a device recorded: each run is one replay call (a CUDA graph's launch, for a queue). */
export interface RecordedRun<H> {
  /**
   * enqueues a whole run on its input handles (RunProgram.inputs' order), which it takes (the
   * caller no longer frees them), and returns the outputs' handles (RunProgram.outputs' order), queued
   */
  replay(inputs: H[]): H[];
  /** lets go of the recording and of the weights it holds */
  release(): void;
  /**
   * A dry run of the recording on inputs of the declared shapes (their bytes unread): no
   * kernel runs, but every block a run takes, the kernels' own scratch included, is taken and
   * given back to the device's pool, and what is planned per shape (a vendor GEMM's algorithm)
   * is planned. A session warms up when it opens, so its first run allocates nothing.
   */
  warm?(inputs: H[]): Promise<void>;
}

/**
 * What a backend supplies to core's one graph-execution loop (graphSession.ts): device
 * operations on its own handles H (a host Tensor, a GPUBuffer, a native pointer). The loop
 * owns everything else: feed validation, value lifetimes, kept values, host ops, stats and
 * error context.
 */
export interface DeviceOps<H> {
  /** a host tensor (graph input, weight slice, host-op output) onto the device */
  upload(decl: ValueDecl, t: Tensor): Promise<H>;
  /**
   * At open, before any weight is read: places those of these weights the device can load by
   * itself (a native loader reading the checkpoint's files) and returns their handles; every
   * other weight is read and uploaded one by one. On an error it leaves nothing allocated.
   */
  loadWeights?(decls: readonly ValueDecl[]): Promise<Map<ValueId, H>>;
  /** one rank's node: its input handles and declarations, and its outputs' declarations (null = absent port) */
  runNode(node: GraphNode, inputs: (H | null)[], inputDecls: (ValueDecl | null)[], outputs: (ValueDecl | null)[]): Promise<(H | null)[]>;
  /**
   * whether the device runs this host op (OpDef.host) itself, with a kernel of its own, as a
   * node like any other (a native device's 64-bit n-gram hash); absent or false: the loop
   * runs it on host tensors with core's CPU kernel
   */
  runsHostOp?(op: string): boolean;
  /** a collective over every rank at once, in lockstep: inputs[rank][port] -> outputs[rank][port] */
  runCollective(node: GraphNode, inputs: H[][], inputDecls: ValueDecl[][], outputs: ValueDecl[][]): Promise<H[][]>;
  /**
   * A rank's side of a collective (a rank's part of a graph) on the device's own buffers, when
   * the device can run it with this communicator (e.g. NCCL on the same GPU, enqueued on its
   * stream): its outputs as handles. null: it cannot, and the loop runs the collective on host
   * tensors through the communicator (inputs downloaded, outputs uploaded).
   */
  collective?(node: GraphNode, inputs: H[], inputDecls: ValueDecl[], outputs: (ValueDecl | null)[], communicator: Communicator): (H | null)[] | null;
  /**
   * Records the run `program` describes, node by node in its order, on the session's weights
   * (and this rank's communicator), so that a run is one replay call: no per-node call from the
   * loop. null: the device cannot (a host op, a collective on host tensors), and the loop runs
   * node by node. Each node's output is a fresh value every replay; lifetimes are the device's
   * (a value lives until the last node reading it has run), as on the node-by-node path.
   */
  record?(program: RunProgram, weights: ReadonlyMap<ValueId, H>, communicator?: Communicator): RecordedRun<H> | null;
  download(decl: ValueDecl, h: H): Promise<Tensor>;
  free(h: H): void;
  /** waits for queued device work and raises its errors (the loop calls it every few nodes and at the end) */
  sync?(): Promise<void>;
  /**
   * nodes between the loop's syncs (default 16); Infinity: one sync per run, at its end (a device
   * whose queued errors name their node, so nothing is learnt by waiting sooner)
   */
  readonly syncEveryNodes?: number;
  /**
   * Called once when a session opens, after every weight is uploaded and before any run,
   * with the session's weight handles: a device may rearrange them in place (e.g. pack a
   * GEMM's weights and drop their original bytes). The handles stay the session's (each is
   * passed to runNode, and freed at dispose); an error here fails the open.
   */
  prepared?(graph: Graph, weights: ReadonlyMap<ValueId, H>): Promise<void>;
  /** at open, after prepared(): the run's memory plan, for a device that pools its memory to reserve */
  reserve?(plan: MemoryPlan): Promise<void>;
  /** at dispose, after every handle is freed: memory a device pooled goes back */
  trim?(): void;
  /** the device's counters since it opened (a run reports their difference) */
  counters?(): DeviceCounters;
}
