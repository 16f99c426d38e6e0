import type { DeviceCounters, EngineStats, PreparedGraph, RunOptions, RunResult, RunStats, WeightLoadStats } from '../backend/backend.ts';
import type { Communicator } from '../collectives/communicator.ts';
import { CPU_KERNELS } from '../reference/kernels/index.ts';
import { bytesPerElement, numel, shapeStr, zeros, type Tensor } from '../tensor/tensor.ts';
import type { DeviceOps, RecordedRun } from './deviceOps.ts';
import type { Graph, GraphNode, ValueDecl, ValueId } from './graph.ts';
import { checkNode } from './checkNode.ts';
import { getOpDef } from './ops/registry.ts';
import { rowRanges } from './rowRanges.ts';
import { RunStatsCounter } from './runStatsCounter.ts';
import { validateFeeds } from './validateFeeds.ts';
import { planMemory, type MemoryPlan } from './memoryPlan.ts';
import { lastUses } from './valueLifetimes.ts';

/**
 * The host tensor of a weight value (its rank's slice), read once when the session opens;
 * with `rows`, only those row ranges of it (a row-gathered weight, WeightRef.gather).
 */
export type WeightLoader = (decl: ValueDecl, rows?: [number, number][]) => Promise<Tensor>;

export interface SessionOptions {
  /** for errors and reports, e.g. 'cpu', 'webgpu' */
  backend: string;
  /** the rank's communicator, required for a rank's part of a graph (graph.rank set) */
  communicator?: Communicator;
  /**
   * Read each weight when a run's node first needs it and free it after its last use in that
   * run, instead of holding every weight resident from open: for a device whose weights would
   * not all fit at once (the float64 device: 8 bytes a value, 4 times a bf16 checkpoint). Each
   * run reads its weights again.
   */
  weightsOnDemand?: boolean;
}

/** What GraphSession.runHeld adds to a run's options. */
export interface HeldRunOptions<H> extends RunOptions {
  /** handles for some graph inputs, used instead of uploading their feeds (which are still validated); the run takes them */
  given?: ReadonlyMap<ValueId, H>;
}

/** A run's returned values as the device's handles (GraphSession.runHeld). */
export interface HeldRunResult<H> {
  values: Map<ValueId, H>;
  stats: RunStats;
}

// Device errors surface at sync points; syncing after every node would cost a device
// round trip per node. A device may ask for fewer (DeviceOps.syncEveryNodes).
const SYNC_EVERY_NODES = 16;

/** how errors and device queues name a node: "layers.3.attn (linear, rank 1): " */
export function nodeLabel(node: GraphNode): string {
  return `${node.scope} (${node.op}${node.rank === null ? '' : `, rank ${node.rank}`})`;
}

/**
 * The error with `where` (a node's label and ': ') in front of its message; a typed error (a
 * subclass of Error) as a copy of its class, so a backend's typed errors, e.g. out of memory,
 * stay catchable by class. Never the error itself: a backend may throw one stored error again and again (a
 * lost device).
 */
export function withNodeContext(e: unknown, where: string): Error {
  if (!(e instanceof Error)) return new Error(where + String(e));
  if (Object.getPrototypeOf(e) === Error.prototype) return new Error(where + e.message);
  const copy = Object.create(Object.getPrototypeOf(e)) as Error;
  for (const key of Object.getOwnPropertyNames(e)) Object.defineProperty(copy, key, Object.getOwnPropertyDescriptor(e, key)!);
  Object.defineProperty(copy, 'message', { value: where + e.message, writable: true, configurable: true });
  Object.defineProperty(copy, 'cause', { value: e, writable: true, configurable: true });
  return copy;
}

function checkDecl(what: string, t: Tensor, d: ValueDecl): void {
  if (t.dtype !== d.dtype || shapeStr(t.shape) !== shapeStr(d.shape)) {
    throw new Error(`${what} is ${t.dtype}${shapeStr(t.shape)}, the graph declares ${d.dtype}${shapeStr(d.shape)} for '${d.id}'`);
  }
}

/** A row-gather op's table (OpDef.gathersRows) when it is a row-gathered weight (WeightRef.gather 'rows'): its port and declaration. */
function rowGatheredTable(graph: Graph, node: GraphNode): { port: number; decl: ValueDecl } | null {
  const gather = getOpDef(node.op).gathersRows;
  const decl = gather ? graph.values[node.inputs[gather.table]!] : null;
  return decl?.weight?.gather === 'rows' ? { port: gather!.table, decl } : null;
}

function countersDelta(before: DeviceCounters, after: DeviceCounters): DeviceCounters {
  const d = { ...after };
  for (const k of Object.keys(d) as (keyof DeviceCounters)[]) d[k] = after[k] - before[k];
  return d;
}

/**
 * Core's one graph-execution loop. A session holds a graph's weights resident on the device
 * (uploaded once, when it opens, or read per run on demand: SessionOptions.weightsOnDemand) and runs it many times; each run validates the feeds, runs
 * the nodes in order, frees each value after its last use, runs host ops with core's CPU
 * kernels, counts the stats and names the node in any error. A whole graph runs its
 * collectives in lockstep on the device; a rank's part (graph.rank set) meets its peers
 * through the communicator.
 */
export class GraphSession<H> implements PreparedGraph {
  private readonly weights = new Map<ValueId, H>();
  private resident = new Map<ValueId, H>();
  private readonly last: Map<ValueId, number>;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;
  /** the device, its waits timed (EngineStats.waitSeconds) */
  private readonly device: DeviceOps<H>;
  private waitSeconds = 0;
  private hostOpSeconds = 0;
  private prepareSeconds = 0;
  private weightLoad: WeightLoadStats | undefined;
  private readonly plan: MemoryPlan;
  /** the device's recordings of this graph's run (DeviceOps.record), by the values a run returns; null: it cannot */
  private readonly recordings = new Map<string, RecordedRun<H> | null>();
  private transfers: EngineStats['transfers'] = { inputBytes: 0, outputBytes: 0, stagingToDeviceBytes: 0, stagingFromDeviceBytes: 0 };

  private constructor(
    readonly graph: Graph,
    device: DeviceOps<H>,
    private readonly loadWeight: WeightLoader,
    private readonly options: SessionOptions,
  ) {
    this.last = lastUses(graph);
    this.plan = planMemory(graph);
    const waited =
      <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
      async (...a: A): Promise<R> => {
        const t = performance.now();
        try {
          return await fn(...a);
        } finally {
          this.waitSeconds += (performance.now() - t) / 1000;
        }
      };
    // every member bound to the device: a backend's DeviceOps may be a class instance (its methods on the prototype)
    this.device = {
      upload: device.upload.bind(device),
      runNode: device.runNode.bind(device),
      runsHostOp: device.runsHostOp?.bind(device),
      runCollective: device.runCollective.bind(device),
      collective: device.collective?.bind(device),
      download: waited(device.download.bind(device)),
      free: device.free.bind(device),
      sync: device.sync && waited(device.sync.bind(device)),
      syncEveryNodes: device.syncEveryNodes,
      prepared: device.prepared?.bind(device),
      reserve: device.reserve?.bind(device),
      trim: device.trim?.bind(device),
      counters: device.counters?.bind(device),
      record: device.record?.bind(device),
    };
  }

  /**
   * Checks the graph, uploads every weight its nodes read (unless SessionOptions.weightsOnDemand),
   * reserves the run's memory plan, and returns the ready session.
   */
  static async open<H>(graph: Graph, device: DeviceOps<H>, loadWeight: WeightLoader, options: SessionOptions): Promise<GraphSession<H>> {
    const start = performance.now();
    const s = new GraphSession(graph, device, loadWeight, options);
    s.checkGraph();
    try {
      const loadStart = performance.now();
      const ids = options.weightsOnDemand ? [] : s.weightIds();
      // the device's own loader first (DeviceOps.loadWeights), then one by one what it left
      const placed = (await device.loadWeights?.(ids.map((id) => graph.values[id]))) ?? new Map<ValueId, H>();
      for (const [id, h] of placed) s.weights.set(id, h);
      for (const id of ids) {
        if (s.weights.has(id)) continue;
        const decl = graph.values[id];
        const t = await loadWeight(decl);
        checkDecl(`${options.backend}: weight '${decl.weight?.name ?? id}'`, t, decl);
        s.weights.set(id, await device.upload(decl, t));
      }
      const seconds = (performance.now() - loadStart) / 1000;
      const bytes = ids.reduce((n, id) => n + numel(graph.values[id].shape) * bytesPerElement(graph.values[id].dtype), 0);
      s.weightLoad = {
        seconds,
        bytes,
        gbPerSecond: seconds > 0 ? bytes / seconds / 1e9 : 0,
        tensors: ids.length,
        native: placed.size,
        js: ids.length - placed.size,
      };
      await device.prepared?.(graph, s.weights);
      await device.reserve?.(s.plan);
      // a plain run's recording, made and warmed up now (a run keeping more values gets its own at its first run)
      await s.recording([...new Set(graph.outputs)]);
    } catch (e) {
      await s.dispose();
      throw e;
    }
    s.prepareSeconds = (performance.now() - start) / 1000;
    return s;
  }

  run(feeds: Map<ValueId, Tensor>, options: RunOptions = {}): Promise<RunResult> {
    const result = this.queue.then(() =>
      this.runNow(feeds, options, new Map(), async (decl, h) => {
        const t = await this.device.download(decl, h);
        this.transfers.outputBytes += t.data.byteLength;
        return t;
      }),
    );
    this.queue = result.catch(() => {});
    return result;
  }

  /**
   * A run whose returned values stay the device's handles, handed to the caller (who frees
   * them, DeviceOps.free) rather than downloaded: for a device whose handles are host values a
   * Tensor cannot carry (the float64 device's ExactTensor, reference/exact/exactDevice.ts).
   */
  runHeld(feeds: Map<ValueId, Tensor>, options: HeldRunOptions<H> = {}): Promise<HeldRunResult<H>> {
    const result = this.queue.then(() => this.runNow(feeds, options, options.given ?? new Map(), async (_decl, h) => h, true));
    this.queue = result.catch(() => {});
    return result;
  }

  /** Queued behind the runs already asked for: the next run frees what the last one kept. */
  read(id: ValueId): Promise<Tensor> {
    const result = this.queue.then(() => {
      const h = this.resident.get(id);
      if (h === undefined) throw new Error(`${this.options.backend}: value '${id}' was not kept on the device by the last run (RunOptions.keepOnDevice)`);
      return this.device.download(this.graph.values[id], h);
    });
    this.queue = result.catch(() => {});
    return result;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.queue;
    for (const r of this.recordings.values()) r?.release();
    this.recordings.clear();
    for (const h of [...this.weights.values(), ...this.resident.values()]) this.device.free(h);
    this.weights.clear();
    this.resident.clear();
    this.device.trim?.();
  }

  private checkGraph(): void {
    const { graph } = this;
    if (!(Number.isInteger(graph.tp) && graph.tp >= 1)) throw new Error(`${this.options.backend}: graph tp ${graph.tp} is not a positive integer`);
    if (graph.rank !== undefined && !this.options.communicator) {
      throw new Error(`${this.options.backend}: the graph is rank ${graph.rank}'s part; running it needs that rank's communicator`);
    }
    // every node against its declaration, however the graph was made (built, read from JSON,
    // rewritten): kernels then assert only what a declaration cannot say
    for (const node of graph.nodes) {
      try {
        checkNode(graph.values, node, graph.tp, graph.rank === undefined ? graph.tp : 1);
      } catch (e) {
        throw new Error(`${this.options.backend}: node ${node.id} (${node.op} at ${node.scope}): ${(e as Error).message}`);
      }
    }
  }

  private weightIds(): ValueId[] {
    const ids = new Set<ValueId>();
    for (const node of this.graph.nodes) {
      for (const id of node.inputs) {
        const d = id === null ? null : this.graph.values[id];
        // a row-gathered weight is read when its op runs, only at the rows it needs
        if (d?.kind === 'weight' && d.weight?.gather !== 'rows') ids.add(d.id);
      }
    }
    return [...ids];
  }

  /** One run; `read` takes each returned value off the device; `handOver`: the handles returned are no longer the run's to free. */
  private async runNow<T>(
    feeds: Map<ValueId, Tensor>,
    options: RunOptions,
    given: ReadonlyMap<ValueId, H>,
    read: (decl: ValueDecl, h: H) => Promise<T>,
    handOver = false,
  ): Promise<{ values: Map<ValueId, T>; stats: RunStats }> {
    if (this.disposed) throw new Error(`${this.options.backend}: run() after dispose()`);
    const start = performance.now();
    const { graph, device } = this;
    validateFeeds(graph, feeds);
    for (const h of this.resident.values()) device.free(h);
    this.resident = new Map();
    const keepAll = options.keep === 'all';
    const keep = new Set<ValueId>([...graph.outputs, ...(Array.isArray(options.keep) ? options.keep : []), ...(options.keepOnDevice ?? [])]);
    for (const id of keep) if (!graph.values[id]) throw new Error(`${this.options.backend}: requested value '${id}' is not in the graph`);
    const env = new Map<ValueId, H>();
    const counter = new RunStatsCounter(graph);
    const readBack = keepAll ? null : [...new Set([...graph.outputs, ...(Array.isArray(options.keep) ? options.keep : [])])];
    // a run returning values no run returned before is recorded (and warmed up) first, outside its counters
    const recorded = readBack && !options.syncEachNode ? await this.recording([...new Set([...readBack, ...(options.keepOnDevice ?? [])])]) : null;
    const countersBefore = device.counters?.() ?? null;
    this.waitSeconds = 0;
    this.hostOpSeconds = 0;
    this.transfers = { inputBytes: 0, outputBytes: 0, stagingToDeviceBytes: 0, stagingFromDeviceBytes: 0 };
    try {
      for (const id of graph.inputs) {
        const h = given.get(id);
        if (h !== undefined) {
          env.set(id, h);
          continue;
        }
        const t = feeds.get(id)!;
        this.transfers.inputBytes += t.data.byteLength;
        env.set(id, await device.upload(graph.values[id], t));
      }
      const handle = (id: ValueId): H => {
        const h = env.get(id) ?? this.weights.get(id);
        if (h === undefined) throw new Error(`value '${id}' is read before any node produced it`);
        return h;
      };
      if (recorded) {
        // the whole run in one call; the loop's order and lifetimes are in the recording
        const outs = recorded.run.replay(graph.inputs.map((id) => env.get(id)!));
        // the replay took the inputs
        env.clear();
        recorded.outputs.forEach((id, i) => {
          env.set(id, outs[i]);
        });
        for (const node of graph.nodes) counter.count(node);
        options.onNode?.(graph.nodes.length, graph.nodes.length);
      } else {
        for (const [i, node] of graph.nodes.entries()) {
          try {
            if (this.options.weightsOnDemand) await this.loadNodeWeights(node, env);
            await this.runNode(node, env, handle);
          } catch (e) {
            throw withNodeContext(e, `${nodeLabel(node)}: `);
          }
          counter.count(node);
          this.release(node, i, env, keepAll ? 'all' : keep);
          if (options.syncEachNode || (i + 1) % (device.syncEveryNodes ?? SYNC_EVERY_NODES) === 0) await device.sync?.();
          options.onNode?.(i + 1, graph.nodes.length);
          await options.turn?.();
        }
      }
      await device.sync?.();
      const values = new Map<ValueId, T>();
      for (const id of readBack ?? [...env.keys()]) {
        const h = env.get(id);
        if (h === undefined) throw new Error(`${this.options.backend}: requested value '${id}' was never computed`);
        values.set(id, await read(graph.values[id], h));
      }
      if (handOver) for (const id of values.keys()) env.delete(id);
      for (const id of options.keepOnDevice ?? []) {
        const h = env.get(id);
        if (h === undefined) throw new Error(`${this.options.backend}: value '${id}' to keep on the device was never computed`);
        this.resident.set(id, h);
        env.delete(id);
      }
      const seconds = (performance.now() - start) / 1000;
      const after = device.counters?.() ?? null;
      const engine: EngineStats = {
        prepareSeconds: this.prepareSeconds,
        enqueueSeconds: Math.max(0, seconds - this.waitSeconds - this.hostOpSeconds),
        recorded: recorded !== null,
        waitSeconds: this.waitSeconds,
        hostOpSeconds: this.hostOpSeconds,
        transfers: this.transfers,
        device: countersBefore && after ? countersDelta(countersBefore, after) : null,
        memoryPlan: { poolBytes: this.plan.poolBytes, peakBytes: this.plan.peakBytes, blocks: this.plan.blocks.length },
        ...(this.weightLoad ? { weightLoad: this.weightLoad } : {}),
      };
      return { values, stats: { ...counter.stats(seconds), engine } };
    } finally {
      for (const h of env.values()) device.free(h);
    }
  }

  /**
   * The device's recording of a run returning `outputs` (DeviceOps.record), made once and
   * warmed up then (RecordedRun.warm: a dry run on inputs of zeros, so that the first run takes
   * no block the pool lacks); null where the device cannot record.
   */
  private async recording(outputs: ValueId[]): Promise<{ run: RecordedRun<H>; outputs: ValueId[] } | null> {
    // a recording holds the session's weights, which a session reading them on demand has not
    if (!this.device.record || this.options.weightsOnDemand) return null;
    const key = outputs.join('\0');
    if (!this.recordings.has(key)) {
      const run = this.device.record({ graph: this.graph, inputs: this.graph.inputs, outputs }, this.weights, this.options.communicator);
      this.recordings.set(key, run);
      if (run?.warm) {
        const inputs: H[] = [];
        for (const id of this.graph.inputs)
          inputs.push(await this.device.upload(this.graph.values[id], zeros(this.graph.values[id].dtype, this.graph.values[id].shape)));
        await run.warm(inputs);
      }
    }
    const run = this.recordings.get(key)!;
    return run ? { run, outputs } : null;
  }

  private async runNode(node: GraphNode, env: Map<ValueId, H>, handle: (id: ValueId) => H): Promise<void> {
    const { graph, device } = this;
    const decl = (id: ValueId | null): ValueDecl | null => (id === null ? null : graph.values[id]);
    const set = (id: ValueId | null, h: H | null): void => {
      if (id === null) return;
      if (h === null) throw new Error(`did not produce '${id}'`);
      if (env.has(id)) throw new Error(`value '${id}' is produced twice`);
      env.set(id, h);
    };
    const def = getOpDef(node.op);
    if (node.rank === null && graph.rank === undefined) {
      const tp = graph.tp;
      const ports = node.inputs.length / tp;
      const outPorts = node.outputs.length / tp;
      const ins = Array.from({ length: tp }, (_, r) => node.inputs.slice(r * ports, (r + 1) * ports).map((id) => handle(id!)));
      const inDecls = Array.from({ length: tp }, (_, r) => node.inputs.slice(r * ports, (r + 1) * ports).map((id) => decl(id)!));
      const outDecls = Array.from({ length: tp }, (_, r) => node.outputs.slice(r * outPorts, (r + 1) * outPorts).map((id) => decl(id)!));
      const outs = await device.runCollective(node, ins, inDecls, outDecls);
      for (let r = 0; r < tp; r++) for (let p = 0; p < outPorts; p++) set(node.outputs[r * outPorts + p], outs[r][p]);
    } else if (node.rank === null || (def.host && !device.runsHostOp?.(node.op))) {
      // a rank's side of a collective on the device's buffers, when the device can (DeviceOps.collective)
      const onDevice =
        node.rank === null
          ? (device.collective?.(
              node,
              node.inputs.map((id) => handle(id!)),
              node.inputs.map((id) => decl(id)!),
              node.outputs.map(decl),
              this.options.communicator!,
            ) ?? null)
          : null;
      if (onDevice) {
        node.outputs.forEach((id, p) => {
          set(id, onDevice[p] ?? null);
        });
        return;
      }
      // else a rank's side of a collective (through its communicator), or a host op: on host tensors
      const ins = await this.hostInputs(node, handle);
      const t = performance.now();
      const outs = node.rank === null ? await this.options.communicator!.collective(node, ins as Tensor[]) : CPU_KERNELS.get(node.op)(ins, node.attrs);
      this.hostOpSeconds += (performance.now() - t) / 1000;
      for (const [p, id] of node.outputs.entries()) {
        if (id === null) continue;
        const t = outs[p];
        if (!t) throw new Error(`did not produce '${id}'`);
        checkDecl(`output '${id}'`, t, graph.values[id]);
        this.transfers.stagingToDeviceBytes += t.data.byteLength;
        set(id, await device.upload(graph.values[id], t));
      }
    } else {
      const table = rowGatheredTable(graph, node);
      const rows = table ? await this.deviceRows(node, handle, table) : null;
      try {
        const outs = await device.runNode(
          node,
          rows?.inputs ?? node.inputs.map((id) => (id === null ? null : handle(id))),
          rows?.decls ?? node.inputs.map(decl),
          node.outputs.map(decl),
        );
        node.outputs.forEach((id, p) => {
          set(id, outs[p] ?? null);
        });
      } finally {
        for (const h of rows?.temps ?? []) device.free(h);
      }
    }
  }

  /**
   * A host op's inputs as host tensors. A row-gather op (OpDef.gathersRows) whose table is a
   * row-gathered weight gets only the rows its ids name, and the ids renumbered into them.
   */
  private async hostInputs(node: GraphNode, handle: (id: ValueId) => H): Promise<(Tensor | null)[]> {
    const { graph, device } = this;
    const table = rowGatheredTable(graph, node);
    const ins = await Promise.all(
      node.inputs.map((id, i) => (id === null || (table && i === table.port) ? null : device.download(graph.values[id], handle(id)))),
    );
    for (const t of ins) this.transfers.stagingFromDeviceBytes += t?.data.byteLength ?? 0;
    if (table) {
      const { ids, rows } = await this.readRows(table.decl, ins[0]!);
      ins[0] = ids;
      ins[table.port] = rows.t;
    }
    return ins;
  }

  /**
   * A device-run row-gather op's inputs (the device runs the host op itself, DeviceOps.runsHostOp):
   * as on the host path, the rows its ids name read and uploaded, and the ids renumbered into
   * them; `temps` are the uploads, the caller's to free.
   */
  private async deviceRows(
    node: GraphNode,
    handle: (id: ValueId) => H,
    table: { port: number; decl: ValueDecl },
  ): Promise<{ inputs: (H | null)[]; decls: (ValueDecl | null)[]; temps: H[] }> {
    const { graph, device } = this;
    const idsDecl = graph.values[node.inputs[0]!];
    const { ids, rows } = await this.readRows(table.decl, await device.download(idsDecl, handle(idsDecl.id)));
    const temps = [await device.upload(idsDecl, ids), await device.upload(rows.decl, rows.t)];
    const inputs = node.inputs.map((id, i) => (id === null || i === table.port ? null : handle(id)));
    const decls = node.inputs.map((id) => (id === null ? null : graph.values[id]));
    [inputs[0], inputs[table.port]] = temps;
    decls[table.port] = rows.decl;
    return { inputs, decls, temps };
  }

  /** The rows of a row-gathered weight that `ids` name, read, and the ids renumbered into them. */
  private async readRows(table: ValueDecl, ids: Tensor): Promise<{ ids: Tensor; rows: { t: Tensor; decl: ValueDecl } }> {
    const name = table.weight!.name;
    const { ranges, local } = rowRanges(ids.data as Int32Array, table.shape[0], `weight '${name}'`);
    const t = await this.loadWeight(table, ranges);
    const decl = { ...table, shape: [ranges.reduce((n, [a, b]) => n + b - a, 0), ...table.shape.slice(1)] };
    checkDecl(`${this.options.backend}: rows of weight '${name}'`, t, decl);
    return { ids: { ...ids, data: local }, rows: { t, decl } };
  }

  /** SessionOptions.weightsOnDemand: the weights `node` reads that this run has not read yet, read and uploaded. */
  private async loadNodeWeights(node: GraphNode, env: Map<ValueId, H>): Promise<void> {
    for (const id of node.inputs) {
      const decl = id === null ? null : this.graph.values[id];
      if (!decl || decl.kind !== 'weight' || decl.weight?.gather === 'rows' || env.has(decl.id)) continue;
      const t = await this.loadWeight(decl);
      checkDecl(`${this.options.backend}: weight '${decl.weight?.name ?? decl.id}'`, t, decl);
      env.set(decl.id, await this.device.upload(decl, t));
    }
  }

  /**
   * Frees each input after its last use and each output nothing reads, unless kept; keeping
   * 'all' keeps every computed value and input, and frees only a weight read on demand.
   */
  private release(node: GraphNode, i: number, env: Map<ValueId, H>, keep: Set<ValueId> | 'all'): void {
    const drop = (id: ValueId): void => {
      const h = env.get(id);
      if (h === undefined || (keep === 'all' ? this.graph.values[id].kind !== 'weight' : keep.has(id))) return;
      this.device.free(h);
      env.delete(id);
    };
    for (const id of node.inputs) if (id !== null && this.last.get(id) === i) drop(id);
    for (const id of node.outputs) if (id !== null && !this.last.has(id)) drop(id);
  }
}
