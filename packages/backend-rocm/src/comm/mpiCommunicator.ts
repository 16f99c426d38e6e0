import { RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS, type CommBytes, type Communicator, type GraphNode, type Tensor } from '@hcsp/core';
import { BUILD_COMMAND, builtAddonPath, loadProbedAddon } from '../addonLoading.ts';
import { runCollective } from './collectiveCall.ts';
import type { CollectiveWatchdog } from './collectiveWatchdog.ts';
import { OmpiServer } from './ompiServer.ts';
import { SerialCalls, typedCalls } from './serialCalls.ts';

// A rank's communicator over MPI (issue 13, host-device ranks): one process per rank, started
// by mpirun, meeting its peers at each collective node of its part of the graph (rankGraph).
// The sums are computed by the MPI addon (native/src/mpi) in the exact order of core's
// simulated collectives, so a multi-process run is bit-identical to the in-process one with
// the same --reduce; MPI (Open MPI) moves the bytes, point to point.

/** How 'ordered' folds the partials: the bf16 sum as a non-commutative MPI op through MPI_Reduce_local, or the same chain as a loop. */
export type OrderedFold = 'mpiOp' | 'loop';

export interface MpiCollectiveOptions {
  /** ring all-reduce only */
  channels?: number;
  chunkElems?: number;
  fold?: OrderedFold;
  /** the graph node's id: every rank must be at the same one */
  tag?: number;
  /** exchange and compare each rank's call before moving data (default true) */
  check?: boolean;
}

/** The MPI addon's surface (native/src/mpi/mpi_addon.cc). */
export interface MpiAddon {
  /** callable before init */
  version(): { library: string; standard: string };
  init(): { rank: number; size: number; threadLevel: 'serialized' | 'multiple' };
  /** a world of separately started processes (MpiCommunicator.join): MPI as a singleton, then one join per rank */
  joinStart(): void;
  joinOpenPort(): string;
  joinAccept(port: string): Promise<void>;
  joinConnect(port: string): Promise<void>;
  joinFinish(): { rank: number; size: number; threadLevel: 'serialized' | 'multiple' };
  allReduce(data: Uint16Array, algorithm: string, options?: MpiCollectiveOptions): Promise<ArrayBuffer>;
  reduceScatter(data: Uint16Array, algorithm: string, options?: MpiCollectiveOptions): Promise<ArrayBuffer>;
  /** any typed array; `control` counts the bytes apart from the graph's all-gathers */
  allGather(data: ArrayBufferView, options?: { tag?: number; check?: boolean; control?: boolean }): Promise<ArrayBuffer>;
  barrier(): Promise<void>;
  bytesSent(): { allReduce: number; reduceScatter: number; allGather: number; control: number };
  state(): { initialized: boolean; finalized: boolean; inFlight: boolean };
  finalize(): void;
  abort(code: number): never;
  /** std::_Exit: no MPI_Finalize, no exit handlers */
  exitNow(code: number): never;
  /** bounds init, joinFinish and finalize, which wait for peers on this thread: past `ms` (0: none) the addon says so, naming `who`, and ends the process */
  setStallLimit(ms: number, who: string): void;
  /** from now on, once this process's parent is no longer `parentPid` (a thread of the addon's own looks, whatever this thread does): `line` on stderr, the other processes of the group this process leads killed, exit status 1 */
  endWithParent(parentPid: number, line: string): void;
  /** what endWithParent does when the parent ends, now */
  parentEnded(): never;
}

/** Where the MPI addon is: HCSP_MPI_ADDON, else the cmake-js build folder of native/, beside hcsp_native.node. */
export function mpiAddonPath(): string {
  return builtAddonPath('HCSP_MPI_ADDON', 'hcsp_mpi.node');
}

/** The MPI addon cannot be used here: not built (no MPI found at build time), or it fails to load. */
export class MpiUnavailableError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(
      `MPI addon unavailable at ${path}: ${reason}. Build it with \`${BUILD_COMMAND}\`, which builds it where CMake finds MPI ` +
        '(Debian: libopenmpi-dev and openmpi-bin, `npm run setup:system`), or set HCSP_MPI_ADDON to a built hcsp_mpi.node',
    );
    this.name = 'MpiUnavailableError';
  }
}

/** An MPI call failed: `call` names it (e.g. MPI_Sendrecv), `mpiErrorClass` is MPI's class (e.g. MPI_ERR_TRUNCATE). */
export class MpiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly call?: string,
    readonly mpiErrorClass?: string,
  ) {
    super(message);
    this.name = 'MpiError';
  }
}
/** The ranks disagree: different collectives, sizes or algorithms at the same step, found by all of them before any data moved (the world stays usable). */
export class MpiMismatchError extends MpiError {
  override name = 'MpiMismatchError';
}
/** A bad argument to a collective (algorithm, dtype, rows not divisible by the world size). */
export class MpiArgumentError extends MpiError {
  override name = 'MpiArgumentError';
}
/** MPI not initialized, already finalized, or a collective still in flight. */
export class MpiStateError extends MpiError {
  override name = 'MpiStateError';
}

const CLASSES: Record<string, typeof MpiError> = {
  HCSP_MPI: MpiError,
  HCSP_MPI_MISMATCH: MpiMismatchError,
  HCSP_MPI_ARGUMENT: MpiArgumentError,
  HCSP_MPI_STATE: MpiStateError,
};

/** an error thrown by the MPI addon as its typed class (other errors pass through) */
export function typedMpiError(e: unknown): unknown {
  const { code, call, mpiErrorClass } = (e ?? {}) as { code?: unknown; call?: unknown; mpiErrorClass?: unknown };
  if (!(e instanceof Error) || typeof code !== 'string' || !(code in CLASSES) || e instanceof MpiError) return e;
  return new CLASSES[code](code, e.message, typeof call === 'string' ? call : undefined, typeof mpiErrorClass === 'string' ? mpiErrorClass : undefined);
}

const mpi = typedCalls(typedMpiError);

/**
 * The MPI addon, probed first in a child process as nativeAddon.ts probes the main one
 * (addonLoading.ts). The probe only asks the library's version: MPI starts in this process,
 * at MpiCommunicator.open.
 */
export function loadMpiAddon(): MpiAddon {
  const path = mpiAddonPath();
  const script = `const a = require(${JSON.stringify(path)}); process.stdout.write(JSON.stringify(a.version()))`;
  return loadProbedAddon<MpiAddon>(path, script, (p, reason) => new MpiUnavailableError(p, reason));
}

/** The rank this process was started as by mpirun (Open MPI's own variables), or null when it was not. */
export function mpirunRank(env: Record<string, string | undefined> = process.env): { rank: number; size: number; localRank: number } | null {
  const int = (name: string): number | null => {
    const v = env[name];
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
  };
  const rank = int('OMPI_COMM_WORLD_RANK');
  const size = int('OMPI_COMM_WORLD_SIZE');
  if (rank === null || size === null) return null;
  return { rank, size, localRank: int('OMPI_COMM_WORLD_LOCAL_RANK') ?? rank };
}

function intAttr(node: GraphNode, name: string, fallback: number): number {
  const v = node.attrs[name] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`${node.op}: attr ${name} must be an integer, got ${JSON.stringify(node.attrs[name])}`);
  return v;
}

/** How separately started ranks share a few strings (the rendezvous store of `hcsp launch`). */
export interface KeyValueExchange {
  set(key: string, value: string): Promise<void>;
  /** waits until some rank has set the key */
  get(key: string): Promise<string>;
}

export interface MpiCommunicatorOptions {
  /** 'ordered': fold through the MPI op (default) or the loop; the bits are the same */
  fold?: OrderedFold;
  /** compare every rank's call before each collective (default true) */
  check?: boolean;
  /**
   * times every call that meets the peers: the join's steps, each collective, each control
   * gather; its limit also bounds the calls that wait for peers on the JavaScript thread
   * (MPI's start, MPI_Comm_dup, MPI_Finalize), where the addon ends the process itself
   */
  watchdog?: CollectiveWatchdog;
}

/**
 * This process's rank of the MPI world as a Communicator: each collective node of the
 * rank's graph becomes one call on the addon, by the node's layout (OpDef.collective:
 * replicate = all-reduce, scatterRows = reduce-scatter, gatherRows = all-gather), with the
 * node's algorithm and ring parameters, on host tensors (port x in, port y out, as the
 * in-process group's kernels take them). Calls run one at a time in the order they are made;
 * after a failed one (other than a mismatch all ranks found together), the world's state is
 * unknown and every later call is refused.
 */
export class MpiCommunicator implements Communicator {
  // ranks that disagreed found it together before moving data: the world is intact
  private readonly calls: SerialCalls;

  private constructor(
    private readonly addon: MpiAddon,
    readonly rank: number,
    readonly tp: number,
    readonly threadLevel: string,
    private readonly options: MpiCommunicatorOptions,
    /** rank 0 of a joined world: the ompi-server it started (stopped at exit, however this process ends) */
    private readonly ompiServer: OmpiServer | null = null,
  ) {
    this.calls = new SerialCalls(`MPI communicator of rank ${rank}`, (e) => !(e instanceof MpiMismatchError), options.watchdog ?? null);
  }

  /** loads the addon and starts MPI (MPI_Init_thread) in this process */
  static open(options: MpiCommunicatorOptions = {}): MpiCommunicator {
    const addon = loadMpiAddon();
    try {
      const started = mpirunRank(process.env);
      if (options.watchdog) addon.setStallLimit(options.watchdog.timeoutMs, started ? `rank ${started.rank} of ${started.size}` : `pid ${process.pid}`);
      const { rank, size, threadLevel } = addon.init();
      return new MpiCommunicator(addon, rank, size, threadLevel, options);
    } catch (e) {
      throw typedMpiError(e);
    }
  }

  /**
   * Joins the MPI world of `size` processes started separately (hcsp launch, not mpirun), as
   * `rank`, through `exchange`: rank 0 starts Open MPI's ompi-server and opens a port; the
   * others join in rank order (rank k connects once rank k-1 is in; the ranks already in
   * accept it together), so the MPI ranks are the launcher's ranks. A join that cannot
   * complete (a peer lost) waits: the rendezvous store ends the process then; a peer that
   * stopped, the watchdog (each step that waits for peers is one of its calls).
   */
  static async join(rank: number, size: number, exchange: KeyValueExchange, options: MpiCommunicatorOptions = {}): Promise<MpiCommunicator> {
    const addon = loadMpiAddon();
    const { watchdog } = options;
    const step = <T>(what: string, fn: () => Promise<T>): Promise<T> => (watchdog ? watchdog.watch(`the MPI join (${what})`, fn) : fn());
    if (watchdog) addon.setStallLimit(watchdog.timeoutMs, `rank ${rank} of ${size}`);
    let server: OmpiServer | null = null;
    if (size > 1) {
      // Open MPI reads pmix_server_uri when MPI starts; this process's environment is what it reads
      if (rank === 0) {
        server = await OmpiServer.start();
        await exchange.set('mpi/server', server.uri);
      }
      process.env.OMPI_MCA_pmix_server_uri = await step("rank 0's ompi-server", () => exchange.get('mpi/server'));
    }
    try {
      addon.joinStart();
      if (size > 1) {
        let port = '';
        if (rank === 0) {
          port = addon.joinOpenPort();
          await exchange.set('mpi/port', port);
        } else {
          port = await step("rank 0's port", () => exchange.get('mpi/port'));
          await step(`rank ${rank - 1} joining first`, () => exchange.get(`mpi/joined/${rank - 1}`));
          await step(`rank ${rank} connecting`, () => addon.joinConnect(port));
        }
        await exchange.set(`mpi/joined/${rank}`, '1');
        for (let k = rank + 1; k < size; k++) await step(`accepting rank ${k}`, () => addon.joinAccept(port));
      }
      const joined = addon.joinFinish();
      if (joined.rank !== rank || joined.size !== size) {
        throw new MpiStateError(
          'HCSP_MPI_STATE',
          `the joined MPI world has this process as rank ${joined.rank} of ${joined.size}, expected rank ${rank} of ${size}`,
        );
      }
      return new MpiCommunicator(addon, rank, size, joined.threadLevel, options, server);
    } catch (e) {
      throw typedMpiError(e);
    }
  }

  /** the MPI library, e.g. "Open MPI v4.1.4, ..." */
  library(): string {
    return this.addon.version().library;
  }

  collective(node: GraphNode, inputs: Tensor[]): Promise<Tensor[]> {
    return this.calls.run(`node ${node.id} (${node.op} ${node.scope})`, () => this.run(node, inputs));
  }

  /** bytes this rank has sent per collective kind (the graph's collectives; control traffic apart) */
  bytesSent(): CommBytes & { control: number } {
    const b = this.addon.bytesSent();
    return { allReduce: b.allReduce, allGather: b.allGather, reduceScatter: b.reduceScatter, control: b.control };
  }

  /** every rank's values, in rank order (equal lengths on every rank); counted as control traffic; `what` names it to the watchdog */
  gatherControl(values: Float64Array, what = 'a control gather'): Promise<Float64Array[]> {
    return this.calls.run(what, async () => {
      const buf = await mpi(() => this.addon.allGather(values, { control: true }));
      return Array.from({ length: this.tp }, (_, r) => new Float64Array(buf, r * values.byteLength, values.length));
    });
  }

  /** every rank's bytes, in rank order (equal lengths on every rank); counted as control traffic; `what` names it to the watchdog */
  gatherControlBytes(bytes: Uint8Array, what = 'a control gather'): Promise<Uint8Array[]> {
    return this.calls.run(what, async () => {
      const buf = await mpi(() => this.addon.allGather(bytes, { control: true }));
      return Array.from({ length: this.tp }, (_, r) => new Uint8Array(buf, r * bytes.byteLength, bytes.byteLength));
    });
  }

  barrier(): Promise<void> {
    return this.calls.run('barrier', () => mpi(() => this.addon.barrier()));
  }

  /** MPI_Finalize, after the calls already made */
  async finalize(): Promise<void> {
    await this.calls.idle();
    if (!this.addon.state().finalized) await mpi(() => this.addon.finalize());
  }

  /** MPI_Abort: this process and every other rank of the job end */
  abort(code = 1): never {
    this.ompiServer?.stop();
    return this.addon.abort(code);
  }

  /**
   * Ends this process at once, without MPI_Finalize: for a job already lost (a peer gone), where
   * a collective blocked on that peer would keep a normal exit waiting forever.
   */
  exitNow(code = 1): never {
    // std::_Exit runs no exit handler: the server this rank started goes first
    this.ompiServer?.stop();
    return this.addon.exitNow(code);
  }

  private run(node: GraphNode, inputs: Tensor[]): Promise<Tensor[]> {
    const tag = node.id;
    const check = this.options.check ?? true;
    const fold = this.options.fold;
    return runCollective(
      {
        name: 'MPI communicator',
        source: 'the MPI addon',
        rank: this.rank,
        tp: this.tp,
        allGather: (x) => mpi(() => this.addon.allGather(x.data, { tag, check })),
        allReduce: (data, algorithm) => {
          const channels = intAttr(node, 'channels', RING_DEFAULT_CHANNELS);
          const chunkElems = intAttr(node, 'chunkElems', RING_DEFAULT_CHUNK_ELEMS);
          return mpi(() => this.addon.allReduce(data, algorithm, { channels, chunkElems, fold, tag, check }));
        },
        reduceScatter: (data, algorithm) => mpi(() => this.addon.reduceScatter(data, algorithm, { fold, tag, check })),
      },
      node,
      inputs,
    );
  }
}
