// `hcsp prefill --comm mpi|nccl`: this process is one rank of a job of separately started
// processes, one per TP rank: started by `hcsp launch` (torchrun's variables; the ranks meet
// at rank 0's rendezvous store) or by mpirun (Open MPI's variables). It runs only its part of
// the graph (core's rankGraph) on the chosen backend, meeting its peers at the collectives
// through its communicator: MPI for host ranks (backend-rocm's comm/mpiCommunicator.ts, the
// reference's sum orders), RCCL/NCCL for GPU ranks (comm/ncclCommunicator.ts, the library's
// own order). It reads only the weights its part uses, and hands rank 0 what the summary
// needs: every output of the graph is rank 0's, the other ranks send their run statistics
// (HC rows, bytes really sent, seconds) over the control plane (rankControl.ts).
//
// How a job fails: the ranks meet first (the store checks the world; MPI starts); every rank
// then checks its options, plans, builds the graph and starts its backend, and all meet at a
// start-up agreement (startTogether) before any collective. A rank that failed before it, or
// ranks whose plans differ (a digest of the graph and the feeds), make every rank end there:
// the failure is reported once by rank 0 when every rank met it alike, else by each failed
// rank. A failure after the agreement (a peer may wait at a collective forever) is reported
// by its rank, then the whole job ends: through the store under hcsp launch, MPI_Abort under
// mpirun. A peer that stops or hangs without failing (SIGSTOP keeps its sockets open) is found
// by each rank's collective watchdog (rankWatchdog.ts): a call that meets the peers and
// waits past --collective-timeout ends the job, naming the call and the ranks that did not come.
import { createHash } from 'node:crypto';
import type { Backend, CommBytes, EngineStats, Graph, PreparedGraph, RunOptions, RunResult, SessionOptions, Tensor, ValueId, WeightSource } from '@hcsp/core';
import { ENGINE_STATS_NUMBERS, engineStatsFromNumbers, engineStatsToNumbers, rankGraph } from '@hcsp/core';
import { mpirunRank, type MpiCommunicator, type NcclCommunicator, type RocmBackend } from '@hcsp/backend-rocm';
import type { RankCommMode } from './communicators.ts';
import { rankBackendFlags } from './rankBackends.ts';
import { aloneControl, gatherNumbers, mpiControl, storeControl, type RankControl } from './rankControl.ts';
import { endWithLauncher, type NativeParentWatch } from './launcher.ts';
import { launchedRank, type LaunchedRank } from './rankEnv.ts';
import { collectiveTimeoutMs, RankWatchdog } from './rankWatchdog.ts';
import { RendezvousClient, RendezvousError, RendezvousServer } from './rendezvousStore.ts';

/** This rank has nothing to add to a failure another rank reports: the command exits 1 without a message. */
export class QuietRankExit extends Error {
  override name = 'QuietRankExit';
  constructor() {
    super('another rank reports the failure');
  }
}

/** A failure found at the start-up agreement, reported by this rank; MPI is already finalized. */
export class RankStartupFailure extends Error {
  override name = 'RankStartupFailure';
}

/** 48 bits of a sha256, exact in a float64 */
function digest48(hash: ReturnType<typeof createHash>): number {
  return Number.parseInt(hash.digest('hex').slice(0, 12), 16);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What a rank's run adds to a run's result: every rank's seconds, and its control traffic (agreement checks, statistics) apart from the graph's collectives. */
export interface RankRunExtras {
  secondsPerRank: number[];
  controlBytesPerRank: number[];
  /** checkpoint bytes each rank read (its part's weight slices; 0 for synthetic weights) */
  weightBytesReadPerRank: number[];
  /** each rank's engine counters over its last run (absent where a backend keeps none) */
  enginePerRank?: EngineStats[];
}

/** A backend whose prepare takes a rank's communicator (core's GraphSession options): those the backend list declares (rankBackends.ts). */
type RankBackend = Backend & { prepare(graph: Graph, weights: WeightSource, session: Partial<SessionOptions>): Promise<PreparedGraph> };

/**
 * What the ranks must agree on before they run: the graph (every node's op, attributes and
 * ports, every value's shape, dtype and rank) and the feeds' bytes (the token ids and RoPE
 * tables), as a 48-bit digest.
 */
export function planDigest(graph: Graph, feeds: ReadonlyMap<ValueId, Tensor>): number {
  const h = createHash('sha256');
  h.update(JSON.stringify({ tp: graph.tp, inputs: graph.inputs, outputs: graph.outputs }));
  for (const n of graph.nodes) h.update(JSON.stringify([n.id, n.op, n.rank, n.inputs, n.outputs, n.attrs]));
  for (const id of Object.keys(graph.values).sort()) {
    const v = graph.values[id];
    h.update(JSON.stringify([id, v.dtype, v.shape, v.rank, v.kind, v.weight ?? null]));
  }
  for (const id of [...feeds.keys()].sort()) {
    const t = feeds.get(id)!;
    h.update(JSON.stringify([id, t.dtype, t.shape]));
    h.update(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  }
  return digest48(h);
}

/** How this process was started: by hcsp launch (torchrun's variables), by mpirun, or alone (a world of one). */
type StartedBy = 'launch' | 'mpirun' | 'alone';

/** One rank of the job: its control plane, its communicator and what it reports. */
export class PrefillRank {
  /** set once this rank reached the start-up agreement (startTogether) */
  private started = false;
  /** nccl: opened at the run, on the backend's GPU */
  private nccl: NcclCommunicator | null = null;

  private constructor(
    readonly mode: RankCommMode,
    readonly control: RankControl,
    /** the MPI world: the communicator of --comm mpi; under mpirun also --comm nccl's control plane */
    private readonly mpi: MpiCommunicator | null,
    readonly startedBy: StartedBy,
    /** hcsp launch: this rank's connection to the rendezvous store, and rank 0's store */
    private readonly rendezvous: Rendezvous | null = null,
    /** in a world of more than one rank: times every call that waits for the peers */
    private readonly watchdog: RankWatchdog | null = null,
  ) {
    // from now on a stuck call ends this process as a failure does (NCCL aborted first)
    if (watchdog) watchdog.exit = (code) => this.exitNow(code);
  }

  get rank(): number {
    return this.control.rank;
  }

  get tp(): number {
    return this.control.tp;
  }

  /** the communicator's library, e.g. "Open MPI v4.1.4, ..." or "RCCL 2.18.3" (nccl: once the run opened it) */
  get library(): string {
    return this.mode === 'mpi' ? this.mpi!.library() : (this.nccl?.library() ?? '');
  }

  /**
   * Joins the job: under hcsp launch by meeting the other ranks at rank 0's rendezvous
   * store (and, for --comm mpi, joining their MPI world: MpiCommunicator.join); under mpirun
   * as its rank of MPI_COMM_WORLD; else as a world of one. In a larger world, every call that
   * waits for the peers from the join on is timed by a watchdog of `collectiveTimeoutMs`.
   */
  static async open(mode: RankCommMode, collectiveTimeoutMs: number): Promise<PrefillRank> {
    const { MpiCommunicator, loadMpiAddon, loadNativeAddon } = await import('@hcsp/backend-rocm');
    const mpirun = mpirunRank(process.env);
    const launched = mpirun ? null : launchedRank(process.env);
    const world = mpirun ?? (launched && { rank: launched.rank, size: launched.worldSize });
    // until a communicator runs: at once, through the addon this mode loads (a join step may block a worker in MPI)
    const exitAtOnce = (code: number): never => {
      try {
        (mode === 'mpi' ? loadMpiAddon() : loadNativeAddon()).exitNow(code);
      } catch {
        // the addon does not load: nothing of it can block the exit
      }
      return process.exit(code);
    };
    const dog = world && world.size > 1 ? new RankWatchdog(world.rank, world.size, collectiveTimeoutMs, exitAtOnce) : null;
    const watchdog = dog?.watchdog;
    if (launched !== null) {
      const rendezvous = await meet(launched, mode === 'mpi' ? parentWatch(loadMpiAddon) : undefined);
      dog?.useStore(rendezvous.client);
      if (mode === 'mpi') {
        const comm = await MpiCommunicator.join(launched.rank, launched.worldSize, rendezvous.client, { watchdog });
        rendezvous.exit = (code) => comm.exitNow(code);
        return new PrefillRank(mode, mpiControl(comm), comm, 'launch', rendezvous, dog);
      }
      const addon = loadNativeAddon();
      rendezvous.exit = (code) => addon.exitNow(code);
      return new PrefillRank(mode, storeControl(rendezvous.client, launched.worldSize, watchdog), null, 'launch', rendezvous, dog);
    }
    if (mode === 'mpi' || mpirun) {
      const comm = MpiCommunicator.open({ watchdog });
      return new PrefillRank(mode, mpiControl(comm), comm, mpirun ? 'mpirun' : 'alone', null, dog);
    }
    return new PrefillRank(mode, aloneControl, null, 'alone');
  }

  /** --tp must be the world size: one process per rank */
  checkWorld(tp: number): void {
    const size = this.tp;
    if (size === tp) return;
    const flag = `--comm ${this.mode}`;
    if (this.startedBy === 'launch') {
      throw new Error(`${flag}: --tp ${tp} does not match WORLD_SIZE ${size}: hcsp launch starts --nnodes x --nproc-per-node ranks, one per TP rank`);
    }
    throw new Error(
      this.startedBy === 'mpirun'
        ? `${flag}: --tp ${tp} does not match the MPI world size ${size}: start one process per rank (mpirun -np ${tp} ...)`
        : `${flag}: this process was started neither by hcsp launch (RANK is unset) nor by mpirun (OMPI_COMM_WORLD_SIZE is unset), so its world is ${size} rank, but --tp is ${tp}: ` +
            `start it as hcsp launch --nproc-per-node ${tp} -- prefill ... ${flag} (or mpirun -np ${tp} hcsp prefill ... ${flag})`,
    );
  }

  /** --comm nccl runs on a GPU: the backend must have opened one (hip or cuda; the emulated device has no RCCL/NCCL) */
  checkBackend(backend: Backend): void {
    if (this.mode !== 'nccl') return;
    const gpu = (backend as RocmBackend).gpu;
    if (!gpu || gpu.kind === 'emulated') throw new Error(`--comm nccl runs on a GPU (${rankBackendFlags('nccl')}), not on ${backend.describe()}`);
  }

  /**
   * The ranks' start-up agreement, right before the run: every rank has checked its options,
   * planned, built its graph and started its backend (`digest`: planDigest), or failed doing
   * so (`failure`). All go on only if none failed and all plans are equal; otherwise MPI is
   * finalized on every rank and each throws what it should report: the failure once, by
   * rank 0, when every rank met it alike; else each failed rank its own and rank 0 who
   * failed; QuietRankExit on the ranks with nothing to add.
   */
  async startTogether(failure: unknown, digest = 0): Promise<void> {
    if (this.started) throw new Error('prefill rank: the start-up agreement ran twice');
    this.started = true;
    const comm = this.control;
    const message = failure === null ? '' : messageOf(failure);
    const all = await gatherNumbers(
      comm,
      Float64Array.of(failure === null ? 0 : 1, digest48(createHash('sha256').update(message)), digest),
      'the start-up agreement',
    );
    const failed = all.flatMap((v, r) => (v[0] === 1 ? [r] : []));
    const plans = new Set(all.map((v) => v[2]));
    if (failed.length === 0 && plans.size === 1) return;
    await this.finalize();
    if (failed.length === 0) {
      if (comm.rank !== 0) throw new QuietRankExit();
      const each = all.map((v, r) => `rank ${r}: ${v[2].toString(16).padStart(12, '0')}`).join(', ');
      throw new RankStartupFailure(
        `--comm ${this.mode}: the ranks planned different graphs (digests of the graph and its feeds: ${each}); every rank needs the same command line and inputs`,
      );
    }
    if (failed.length === comm.tp && all.every((v) => v[1] === all[0][1])) {
      if (comm.rank === 0) throw new RankStartupFailure(message);
      throw new QuietRankExit();
    }
    if (failure !== null) throw new RankStartupFailure(`rank ${comm.rank} of ${comm.tp}: ${message}`);
    if (comm.rank === 0)
      throw new RankStartupFailure(
        `--comm ${this.mode}: rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} of ${comm.tp} failed before the run (see ${failed.length > 1 ? 'their messages' : 'its message'})`,
      );
    throw new QuietRankExit();
  }

  /** Whether this rank is past the start-up agreement (a failure now may leave peers waiting at a collective). */
  get running(): boolean {
    return this.started;
  }

  /**
   * Runs this rank's part of the graph and gathers the ranks' statistics: values are this
   * rank's (`keep` filtered to its part; on rank 0 every kept value must be there), stats
   * are every rank's: HC rows, the bytes each rank's communicator really sent, and the
   * slowest rank's seconds.
   */
  async run(
    backend: Backend,
    graph: Graph,
    feeds: Map<ValueId, Tensor>,
    weights: WeightSource,
    options: RunOptions & {
      keep: ValueId[];
      weightBytesRead: () => number;
      runs: number;
      /** right before and after each run (prefill --trace times the last) */
      beforeRun?: () => void;
      afterRun?: (result: RunResult) => void;
    },
  ): Promise<RunResult & RankRunExtras> {
    if (!this.started) throw new Error('prefill rank: run() before the start-up agreement (startTogether)');
    const r = this.rank;
    const part = rankGraph(graph, r);
    const keep = options.keep.filter((id) => part.values[id] !== undefined);
    if (r === 0) {
      const missing = options.keep.filter((id) => part.values[id] === undefined);
      if (missing.length > 0) throw new Error(`--comm ${this.mode}: rank 0 does not compute ${missing.join(', ')}, which the summary needs`);
    }
    const comm = this.mode === 'mpi' ? this.mpi! : await this.openNccl(backend as RocmBackend);
    const prepared = await (backend as RankBackend).prepare(part, weights, { communicator: comm });
    let result: RunResult;
    let runs = options.runs;
    const before = comm.bytesSent();
    const controlBefore = this.control.bytesSent();
    try {
      const rankFeeds = new Map([...feeds].filter(([id]) => part.inputs.includes(id)));
      // the statistics are the last run's
      do {
        options.beforeRun?.();
        result = await prepared.run(rankFeeds, { ...options, keep });
        options.afterRun?.(result);
      } while (--runs > 0);
    } finally {
      await prepared.dispose();
    }
    const after = comm.bytesSent();
    const mine = Float64Array.from([
      result.stats.hcRowsPerRank[r],
      after.allReduce - before.allReduce,
      after.allGather - before.allGather,
      after.reduceScatter - before.reduceScatter,
      result.stats.seconds,
      this.control.bytesSent() - controlBefore,
      options.weightBytesRead(),
      // every rank's backend runs GraphSession, which counts (a backend that did not would send NaN)
      ...(result.stats.engine ? engineStatsToNumbers(result.stats.engine) : new Array<number>(ENGINE_STATS_NUMBERS).fill(NaN)),
    ]);
    const all = await gatherNumbers(this.control, mine, "the gather of the ranks' run statistics");
    const commBytesPerRank: CommBytes[] = all.map((v) => ({ allReduce: v[1], allGather: v[2], reduceScatter: v[3] }));
    const secondsPerRank = all.map((v) => v[4]);
    return {
      values: result.values,
      stats: { seconds: Math.max(...secondsPerRank), hcRowsPerRank: all.map((v) => v[0]), commBytesPerRank },
      secondsPerRank,
      controlBytesPerRank: all.map((v) => v[5]),
      weightBytesReadPerRank: all.map((v) => v[6]),
      enginePerRank: all.every((v) => !Number.isNaN(v[7])) ? all.map((v) => engineStatsFromNumbers(v.subarray(7))) : undefined,
    };
  }

  /** --comm nccl: rank 0 makes the unique id, every rank gets it over the control plane, then all open the communicator on their GPU together */
  private async openNccl(backend: RocmBackend): Promise<NcclCommunicator> {
    const { NcclCommunicator, NCCL_UNIQUE_ID_BYTES } = await import('@hcsp/backend-rocm');
    const gpu = backend.gpu!;
    const mine = this.rank === 0 ? NcclCommunicator.uniqueId(gpu) : new Uint8Array(NCCL_UNIQUE_ID_BYTES);
    const uniqueId = (await this.control.gather(mine, "the NCCL unique id's exchange"))[0];
    this.nccl = await NcclCommunicator.open({ gpu, rank: this.rank, size: this.tp, uniqueId, watchdog: this.watchdog?.watchdog });
    return this.nccl;
  }

  /** ends this process at once (a job already lost: a collective may be blocked on a lost peer) */
  private exitNow(code: number): never {
    this.nccl?.abort();
    if (this.rendezvous) return this.rendezvous.exit(code);
    if (this.mpi) return this.mpi.exitNow(code);
    return process.exit(code);
  }

  /**
   * After a failure on this rank past the agreement: say so, then end the whole job (its
   * peers may wait at a collective forever otherwise): under hcsp launch through the
   * rendezvous store (every rank ends, naming this one), under mpirun by MPI_Abort.
   */
  async fail(e: unknown): Promise<never> {
    process.stderr.write(`hcsp: rank ${this.rank} of ${this.tp}: ${messageOf(e)}\n`);
    if (this.rendezvous !== null) {
      await this.rendezvous.client.fail(`rank ${this.rank} failed (see its message)`);
      return this.exitNow(1);
    }
    this.nccl?.abort();
    if (this.mpi) return this.mpi.abort(1);
    return process.exit(1);
  }

  /** ends the communicators (NCCL's, MPI_Finalize); under hcsp launch, then leaves the rendezvous (rank 0 once every rank has) */
  async finalize(): Promise<void> {
    await this.nccl?.destroy();
    await this.mpi?.finalize();
    if (this.rendezvous === null) return;
    const { client, server } = this.rendezvous;
    // rank 0 waits for every rank's bye, each rank for rank 0's acknowledgement: a peer stopped now would hold it
    const watched = (what: string, fn: () => Promise<void>) => (this.watchdog ? this.watchdog.watchdog.watch(what, fn) : fn());
    await watched('leaving the rendezvous store', () => client.bye());
    if (server) await watched('the wait for every rank to leave the rendezvous store', () => server.closeWhenDone());
  }
}

/**
 * `prefill --comm mpi|nccl`: joins the job, runs `body` as this rank and leaves it. A failure
 * to join that every rank meets alike (the same addon, the same machine's MPI, the store's
 * verdict) is reported by rank 0. `body` calls startTogether right before its run; a failure
 * before that joins the agreement as this rank's; a failure after it ends the whole job
 * (PrefillRank.fail). options.collectiveTimeout: --collective-timeout's value (else
 * HCSP_COLLECTIVE_TIMEOUT, else DEFAULT_COLLECTIVE_TIMEOUT_S[mode]), the watchdog's limit.
 */
export async function runPrefillRanked(
  mode: RankCommMode,
  body: (rank: PrefillRank) => Promise<string>,
  options: { collectiveTimeout?: string } = {},
): Promise<string> {
  let rank: PrefillRank;
  try {
    rank = await PrefillRank.open(mode, collectiveTimeoutMs(mode, options.collectiveTimeout, process.env));
  } catch (e) {
    // what rank 0 reports too (a bad --collective-timeout, a failure to start MPI, the store's verdict on the rendezvous)
    const everyones = !(e instanceof RendezvousError) || e.fromStore;
    if (everyones && (mpirunRank(process.env)?.rank ?? launchedRankOrNull()?.rank ?? 0) !== 0) throw new QuietRankExit();
    throw e;
  }
  let out: string;
  try {
    out = await body(rank);
  } catch (e) {
    // the start-up agreement's own verdict: MPI is finalized, the message (if any) is this rank's to print
    if (e instanceof QuietRankExit || e instanceof RankStartupFailure) throw e;
    if (!rank.running) {
      // join the peers at the start-up agreement, as a failed rank (it throws the verdict)
      await rank.startTogether(e);
      throw e;
    }
    return rank.fail(e);
  }
  await rank.finalize();
  return out;
}

function launchedRankOrNull(): LaunchedRank | null {
  try {
    return launchedRank(process.env);
  } catch {
    return null;
  }
}

/** --comm mpi: the MPI addon watches the launcher (it can block this thread); one that does not load says why at the join */
function parentWatch(load: () => NativeParentWatch): NativeParentWatch | undefined {
  try {
    return load();
  } catch {
    return undefined;
  }
}

/** This rank's side of the rendezvous (hcsp launch). */
interface Rendezvous {
  client: RendezvousClient;
  server: RendezvousServer | null;
  /** how this process ends when the job is aborted (once a communicator runs: at once, std::_Exit) */
  exit: (code: number) => never;
}

/**
 * hcsp launch: this rank meets the others at rank 0's rendezvous store (rank 0 serves it);
 * from then on, the job aborted through the store (a peer lost or failed) ends this process,
 * as does its launcher ending. The handlers call `exit` when they fire: by then the
 * communicator may have replaced it.
 */
async function meet(launched: LaunchedRank, native?: NativeParentWatch): Promise<Rendezvous> {
  const { rank, worldSize, masterAddr, masterPort, rendezvousTimeoutMs, localWorldSize, secret } = launched;
  const ends = { exit: (code: number): never => process.exit(code) };
  const reportUnlessLauncherEnded = endWithLauncher(rank, (code) => ends.exit(code), native);
  const server =
    rank === 0
      ? await RendezvousServer.listen({ host: masterAddr, port: masterPort, worldSize, secret, timeoutMs: rendezvousTimeoutMs, ranksPerNode: localWorldSize })
      : null;
  try {
    const client = await RendezvousClient.join({ host: masterAddr, port: masterPort, rank, worldSize, secret, timeoutMs: rendezvousTimeoutMs }, (message) => {
      reportUnlessLauncherEnded(() => {
        process.stderr.write(`hcsp: rank ${rank} of ${worldSize}: the job ended: ${message}\n`);
        ends.exit(1);
      });
    });
    return Object.assign(ends, { client, server });
  } catch (e) {
    // a store left listening would keep this process from ending
    server?.destroy();
    throw e;
  }
}
