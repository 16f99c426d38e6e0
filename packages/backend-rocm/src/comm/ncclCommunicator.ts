import { checkReduceAlgorithm, getOpDef, shapeStr, type CommBytes, type Communicator, type GraphNode, type Tensor, type ValueDecl } from '@hcsp/core';
import { type GpuDevice, loadNativeAddon, type NativeAddon, type NativeTensor, type NcclStep } from '../nativeAddon.ts';
import { typedNativeError } from '../nativeErrors.ts';
import { GATHER_DTYPES, runCollective } from './collectiveCall.ts';
import type { CollectiveWatchdog } from './collectiveWatchdog.ts';
import { SerialCalls, typedCalls } from './serialCalls.ts';

// A rank's communicator over RCCL (the hip device) or NCCL (the cuda device), issue 13: one
// process per GPU, meeting its peers at each collective node of its part of the graph
// (rankGraph). The library is loaded at run time by the main addon (native/src/gpu/
// nccl_library.cc: librccl.so.1 / librccl.so, libnccl.so.2 / libnccl.so, or HCSP_NCCL_LIBRARY).
//
// A run's collective nodes (issue 20) take the device path: the rank's device ops
// (nativeDevice.ts) hand enqueueCollective() the node's input as the device tensor the run
// planned, and the NCCL call is enqueued on the device's stream between the run's kernels,
// writing an output from the device's pool: no host tensor, no staging buffer, no copy, no
// wait. The host waits in the run's one sync, which then goes through this communicator
// (syncEnqueued): timed by its collective watchdog, NCCL's asynchronous error raised naming the
// first collective node since the last sync. collective() on host tensors stays for callers
// with host data (the GPU check's one-rank step): it stages the tensor onto the GPU, runs the
// call, synchronizes and copies the result back (native/src/gpu/nccl_communicator.cc).
//
// Numerics. NCCL adds bf16 partials in an order of its own (ring or tree, chunked by channel,
// the order depending on the rank and the message size) and rounds to bf16 after each step, so
// its results equal the simulated collectives (core's reduceOrder.ts, any --reduce) bit for bit
// only at world size 1, where nothing is added (all-reduce and reduce-scatter are copies).
// At tp ranks each result is a sum of tp bf16 values rounded to bf16 once per step (tp - 1
// roundings), as the simulated ring's is, but in another order: each differs from the exact sum
// by at most about (tp - 1) * 2^-8 * sum|x_i| (the recursive-summation bound with bf16's unit
// roundoff 2^-8), so NCCL's and the simulation's results for one element can differ by up to
// about twice that. This module declares no tolerance: judging a multi-rank NCCL run against the
// simulated one is left to the caller (the cross-backend tolerance of the GPU device's vendor
// mode, or a run's declared tolerance). All-gather moves bytes and is exact at any size.
//
// Bytes sent are counted by the addon with core's ring accounting (collectives/commBytes.ts):
// all-reduce 2(tp-1)/tp * S, reduce-scatter and all-gather (tp-1)/tp * S. They equal
// commBytesOf for the same node when its algorithm is 'ring' or 'ordered' (and for every
// reduce-scatter and all-gather); a 'oneshot' all-reduce node is counted by core as (tp-1) * S,
// which NCCL does not send: NCCL runs its own algorithm whatever the node's `algorithm` says.

/** The addon's NCCL communicator object (native/src/addon/js_nccl.cc). */
export interface NcclComm {
  readonly rank: number;
  readonly size: number;
  /** "RCCL 2.18.3" */
  library(): string;
  state(): 'open' | 'destroyed' | 'aborted';
  allReduce(data: Uint16Array): Promise<ArrayBuffer>;
  reduceScatter(data: Uint16Array): Promise<ArrayBuffer>;
  /** Uint16Array: bf16, Float32Array: f32, Int32Array: i32, Uint8Array: bytes */
  allGather(data: ArrayBufferView): Promise<ArrayBuffer>;
  /** the same collective as a step of a recorded run (nativeAddon recordProgram), x declared */
  step(kind: 'allReduce' | 'reduceScatter' | 'allGather', label: string, x: { dtype: string; shape: readonly number[] }, yShape: readonly number[]): NcclStep;
  /** the collective as a job of the device queue on x's device buffer; its output (yShape, x's dtype) from the device's pool */
  enqueue(kind: 'allReduce' | 'reduceScatter' | 'allGather', label: string, x: NativeTensor, yShape: readonly number[]): NativeTensor;
  /** after the run's sync: throws NCCL's asynchronous error for the collectives enqueued since the last check */
  checkAsync(): void;
  bytesSent(): CommBytes;
  destroy(): Promise<void>;
  abort(): void;
}

/** The addon's NCCL surface (registered by js_nccl.cc beside the rest of NativeAddon). */
export interface NcclAddon {
  /** loads the device's library */
  ncclVersion(gpu: GpuDevice): { library: string; vendor: 'RCCL' | 'NCCL'; code: number; path: string };
  ncclUniqueId(gpu: GpuDevice): Uint8Array;
  ncclOpen(gpu: GpuDevice, rank: number, size: number, id: Uint8Array): Promise<NcclComm>;
}

export const NCCL_UNIQUE_ID_BYTES = 128;

/** No RCCL/NCCL library could be used: none of `tried` loads, or the one that loads lacks a symbol the communicator calls. */
export class NcclUnavailableError extends Error {
  constructor(
    message: string,
    readonly tried: string[],
  ) {
    super(message);
    this.name = 'NcclUnavailableError';
  }
}

/** An RCCL/NCCL call failed: `call` names it (e.g. ncclAllReduce), `ncclResult` is the enumerator (e.g. ncclInvalidArgument). */
export class NcclError extends Error {
  constructor(
    message: string,
    readonly call: string,
    readonly ncclResult: string,
    readonly ncclResultCode: number,
  ) {
    super(message);
    this.name = 'NcclError';
  }
}

/** an error thrown by the addon's NCCL calls as its typed class (the addon's other codes as nativeErrors.ts types them) */
export function typedNcclError(e: unknown): unknown {
  if (e instanceof NcclError || e instanceof NcclUnavailableError) return e;
  const { code, call, ncclResult, ncclResultCode, tried } = (e ?? {}) as Record<string, unknown>;
  if (e instanceof Error && code === 'HCSP_NCCL') {
    return new NcclError(e.message, String(call), String(ncclResult), typeof ncclResultCode === 'number' ? ncclResultCode : -1);
  }
  if (e instanceof Error && code === 'HCSP_NCCL_UNAVAILABLE') return new NcclUnavailableError(e.message, Array.isArray(tried) ? tried.map(String) : []);
  return typedNativeError(e);
}

const nccl = typedCalls(typedNcclError);

function ncclSync<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw typedNcclError(e);
  }
}

function ncclAddon(): NativeAddon & NcclAddon {
  return loadNativeAddon() as NativeAddon & NcclAddon;
}

export interface NcclOpenOptions {
  /** this rank's GPU (addon.openGpu('hip' | 'cuda', { device: LOCAL_RANK })) */
  gpu: GpuDevice;
  rank: number;
  size: number;
  /** rank 0's NcclCommunicator.uniqueId(gpu), the same 128 bytes on every rank */
  uniqueId: Uint8Array;
  /**
   * times ncclCommInitRank and every collective (they wait off the JavaScript thread, so its
   * timer fires while NCCL blocks); its onStuck may call abort(), as
   * TORCH_NCCL_ASYNC_ERROR_HANDLING does, which ends the waiting call with an error
   */
  watchdog?: CollectiveWatchdog;
}

/**
 * This process's rank of an RCCL/NCCL communicator as a Communicator: each collective node of
 * the rank's graph becomes one call, by the node's layout (OpDef.collective: replicate =
 * all-reduce, scatterRows = reduce-scatter, gatherRows = all-gather), on host tensors (port x
 * in, port y out). Calls run one at a time in the order they are made; after a failed one the
 * communicator's state is unknown (peers may be waiting in a collective this rank left) and
 * every later call is refused. abort() ends it at once, even during a collective.
 */
export class NcclCommunicator implements Communicator {
  private readonly calls: SerialCalls;

  private constructor(
    private readonly comm: NcclComm,
    /** the GPU it was opened on: a device path needs the same device */
    readonly gpu: GpuDevice,
    readonly rank: number,
    readonly tp: number,
    watchdog: CollectiveWatchdog | null,
  ) {
    this.calls = new SerialCalls(`NCCL communicator of rank ${rank}`, undefined, watchdog);
  }

  /** the unique id a world is opened with: rank 0 makes it (ncclGetUniqueId) and hands it to every rank */
  static uniqueId(gpu: GpuDevice): Uint8Array {
    return ncclSync(() => ncclAddon().ncclUniqueId(gpu));
  }

  /** the device's library and its version, e.g. { library: 'RCCL 2.18.3', path: 'librccl.so.1' }, without opening a communicator */
  static libraryOf(gpu: GpuDevice): { library: string; vendor: 'RCCL' | 'NCCL'; code: number; path: string } {
    return ncclSync(() => ncclAddon().ncclVersion(gpu));
  }

  /** ncclCommInitRank on `gpu` (off the JavaScript thread: it waits until every rank has joined) */
  static async open(options: NcclOpenOptions): Promise<NcclCommunicator> {
    const { gpu, rank, size, uniqueId, watchdog } = options;
    if (!Number.isInteger(size) || size < 1) throw new Error(`NcclCommunicator.open: size must be a positive integer, got ${size}`);
    if (!Number.isInteger(rank) || rank < 0 || rank >= size) throw new Error(`NcclCommunicator.open: rank ${rank} is not in [0, ${size})`);
    if (!(uniqueId instanceof Uint8Array) || uniqueId.byteLength !== NCCL_UNIQUE_ID_BYTES) {
      throw new Error(`NcclCommunicator.open: the unique id must be ${NCCL_UNIQUE_ID_BYTES} bytes (NcclCommunicator.uniqueId), got ${uniqueId?.byteLength}`);
    }
    const init = () => nccl(() => ncclAddon().ncclOpen(gpu, rank, size, uniqueId));
    const comm = await (watchdog ? watchdog.watch(`ncclCommInitRank (rank ${rank} of ${size})`, init) : init());
    return new NcclCommunicator(comm, gpu, rank, size, watchdog ?? null);
  }

  /** "RCCL 2.x.y" or "NCCL 2.x.y" */
  library(): string {
    return this.comm.library();
  }

  state(): 'open' | 'destroyed' | 'aborted' {
    return this.comm.state();
  }

  collective(node: GraphNode, inputs: Tensor[]): Promise<Tensor[]> {
    return this.calls.run(`node ${node.id} (${node.op} ${node.scope})`, () => this.run(node, inputs));
  }

  /**
   * `node` on the device: its one input x is this rank's device tensor of the run (on this
   * communicator's GPU), checked as collective() checks a host tensor; its one output, as the
   * graph declares it, is returned queued. The call joins the device queue after the nodes already
   * enqueued; its completion and errors are the run's sync's (syncEnqueued). `label` names the
   * node in errors.
   */
  enqueueCollective(node: GraphNode, label: string, inputs: NativeTensor[], inputDecls: ValueDecl[], outputs: (ValueDecl | null)[]): NativeTensor[] {
    this.checkUsable(node);
    if (inputs.length !== 1 || !inputs[0]) throw new Error(`${node.op}: expects this rank's one input x, got ${inputs.length} inputs`);
    const { kind, want } = this.checkedCall(node, inputDecls, outputs);
    return [ncclSync(() => this.comm.enqueue(kind, label, inputs[0], want))];
  }

  /**
   * enqueueCollective() as a step of a recorded run (the native device's DeviceOps.record):
   * checked now against the declarations, run on each replay's device tensors.
   */
  collectiveStep(node: GraphNode, label: string, inputDecls: ValueDecl[], outputs: (ValueDecl | null)[]): NcclStep {
    this.checkUsable(node);
    const { kind, want } = this.checkedCall(node, inputDecls, outputs);
    return ncclSync(() => this.comm.step(kind, label, { dtype: inputDecls[0].dtype, shape: inputDecls[0].shape }, want));
  }

  /** a communicator that failed or was aborted takes no more calls: its refusal, naming `node` */
  checkUsable(node: GraphNode): void {
    const refused = this.calls.refusal(`node ${node.id} (${node.op} ${node.scope})`);
    if (refused) throw refused;
  }

  /** the NCCL call a collective node makes and its output shape, after checking the node's declarations */
  private checkedCall(
    node: GraphNode,
    inputDecls: ValueDecl[],
    outputs: (ValueDecl | null)[],
  ): { kind: 'allReduce' | 'reduceScatter' | 'allGather'; want: number[] } {
    const layout = getOpDef(node.op).collective;
    if (!layout) throw new Error(`NCCL communicator: node ${node.id} (${node.op}) is not a collective`);
    if (inputDecls.length !== 1 || !inputDecls[0]) throw new Error(`${node.op}: expects this rank's one input x, got ${inputDecls.length} inputs`);
    const [xDecl, yDecl] = [inputDecls[0], outputs[0] ?? null];
    if (xDecl.shape.length === 0) throw new Error(`${node.op}: tensors need a leading (row) dimension, got shape []`);
    const rows = xDecl.shape[0];
    const allowed = layout === 'gatherRows' ? GATHER_DTYPES : ['bf16'];
    if (!allowed.includes(xDecl.dtype)) throw new Error(`${node.op}: rank ${this.rank} has dtype ${xDecl.dtype}; expected one of ${allowed.join(', ')}`);
    // the node's order is the simulation's; NCCL sums in its own (see the top of this file)
    if (layout !== 'gatherRows') checkReduceAlgorithm(node.attrs.algorithm, node.op);
    if (layout === 'scatterRows' && rows % this.tp !== 0)
      throw new Error(`${node.op}: ${rows} rows of shape ${shapeStr(xDecl.shape)} are not divisible by tp ${this.tp}`);
    const want =
      layout === 'gatherRows'
        ? [rows * this.tp, ...xDecl.shape.slice(1)]
        : layout === 'scatterRows'
          ? [rows / this.tp, ...xDecl.shape.slice(1)]
          : [...xDecl.shape];
    if (!yDecl || yDecl.dtype !== xDecl.dtype || shapeStr(yDecl.shape) !== shapeStr(want)) {
      throw new Error(
        `${node.op}: the graph declares ${yDecl ? `${yDecl.dtype}${shapeStr(yDecl.shape)}` : 'no output'} for '${node.outputs[0]}', the collective gives ${xDecl.dtype}${shapeStr(want)}`,
      );
    }
    const kind = layout === 'gatherRows' ? 'allGather' : layout === 'scatterRows' ? 'reduceScatter' : 'allReduce';
    return { kind, want };
  }

  /**
   * The run's sync when collectives were enqueued since the last one (`wait`: the device's
   * sync): a watched call, in order with this communicator's calls, so that a stopped peer
   * still ends the job within the watchdog's limit; then NCCL's asynchronous error, raised
   * naming `firstLabel`, the first collective node enqueued since the last sync.
   */
  syncEnqueued(firstLabel: string, wait: () => Promise<void>): Promise<void> {
    return this.calls.run(`the run's sync after ${firstLabel}`, async () => {
      try {
        await wait();
      } catch (e) {
        // a collective that failed on the device: NCCL's own reason first, when it has one
        this.raiseAsync(firstLabel);
        throw e;
      }
      this.raiseAsync(firstLabel);
    });
  }

  private raiseAsync(label: string): void {
    if (this.comm.state() !== 'open') return;
    try {
      ncclSync(() => this.comm.checkAsync());
    } catch (e) {
      if (e instanceof Error) e.message = `${label}: ${e.message}`;
      throw e;
    }
  }

  /** bytes this rank has sent per collective kind, by core's ring accounting (see the top of this file) */
  bytesSent(): CommBytes {
    const b = this.comm.bytesSent();
    return { allReduce: b.allReduce, allGather: b.allGather, reduceScatter: b.reduceScatter };
  }

  /** ncclCommDestroy, after the calls already made */
  async destroy(): Promise<void> {
    await this.calls.idle();
    if (this.comm.state() === 'open') await nccl(() => this.comm.destroy());
  }

  /** ncclCommAbort now (a collective waiting for a lost peer returns with an error); every later call is refused */
  abort(): void {
    this.calls.fail(new Error('the communicator was aborted'));
    if (this.comm.state() === 'open') ncclSync(() => this.comm.abort());
  }

  private run(node: GraphNode, inputs: Tensor[]): Promise<Tensor[]> {
    return runCollective(
      {
        name: 'NCCL communicator',
        source: 'the addon',
        rank: this.rank,
        tp: this.tp,
        allGather: (x) => nccl(() => this.comm.allGather(x.data)),
        // the node's order is the simulation's; NCCL sums in its own (see the top of this file)
        allReduce: (data) => nccl(() => this.comm.allReduce(data)),
        reduceScatter: (data) => nccl(() => this.comm.reduceScatter(data)),
      },
      node,
      inputs,
    );
  }
}
