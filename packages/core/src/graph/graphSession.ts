import type { DeviceCounters, EngineStats, PreparedGraph, RunOptions, RunResult, WeightLoadStats } from '../backend/backend.ts';
import type { Communicator } from '../collectives/communicator.ts';
import { cpuKernel } from '../reference/kernels/index.ts';
import { bytesPerElement, numel, shapeStr, zeros, type Tensor } from '../tensor/tensor.ts';
import type { DeviceOps, RecordedRun } from './deviceOps.ts';
import type { Graph, GraphNode, ValueDecl, ValueId } from './graph.ts';
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

function countersDelta(before: DeviceCounters, after: DeviceCounters): DeviceCounters {
  const d = { ...after };
  for (const k of Object.keys(d) as (keyof DeviceCounters)[]) d[k] = after[k] - before[k];
  return d;
}

/**
 * Core's one graph-execution loop. A session holds a graph's weights resident on the device
 * (uploaded once, when it opens) and runs it many times; each run validates the feeds, runs
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

  /** Checks the graph, uploads every weight its nodes read, reserves the run's memory plan, and returns the ready session. */
  static async open<H>(graph: Graph, device: DeviceOps<H>, loadWeight: WeightLoader, options: SessionOptions): Promise<GraphSession<H>> {
    const start = performance.now();
    const s = new GraphSession(graph, device, loadWeight, options);
    s.checkGraph();
    try {
      const loadStart = performance.now();
      const ids = s.weightIds();
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
    const result = this.queue.then(() => this.runNow(feeds, options));
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
    for (const node of graph.nodes) {
      for (const id of [...node.inputs, ...node.outputs]) {
        if (id !== null && !graph.values[id])
          throw new Error(`${this.options.backend}: node ${node.id} (${node.op} at ${node.scope}) uses undeclared value '${id}'`);
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

  private async runNow(feeds: Map<ValueId, Tensor>, options: RunOptions): Promise<RunResult> {
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
            await this.runNode(node, env, handle);
          } catch (e) {
            throw withNodeContext(e, `${nodeLabel(node)}: `);
          }
          counter.count(node);
          if (!keepAll) this.release(node, i, env, keep);
          if (options.syncEachNode || (i + 1) % (device.syncEveryNodes ?? SYNC_EVERY_NODES) === 0) await device.sync?.();
          options.onNode?.(i + 1, graph.nodes.length);
          await options.turn?.();
        }
      }
      await device.sync?.();
      const values = new Map<ValueId, Tensor>();
      for (const id of readBack ?? [...env.keys()]) {
        const h = env.get(id);
        if (h === undefined) throw new Error(`${this.options.backend}: requested value '${id}' was never computed`);
        const t = await device.download(graph.values[id], h);
        this.transfers.outputBytes += t.data.byteLength;
        values.set(id, t);
      }
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
    if (!this.device.record) return null;
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
      const outs = node.rank === null ? await this.options.communicator!.collective(node, ins as Tensor[]) : cpuKernel(node.op)(ins, node.attrs);
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
      const outs = await device.runNode(
        node,
        node.inputs.map((id) => (id === null ? null : handle(id))),
        node.inputs.map(decl),
        node.outputs.map(decl),
      );
      node.outputs.forEach((id, p) => {
        set(id, outs[p] ?? null);
      });
    }
  }

  /**
   * A host op's inputs as host tensors. A row-gather op (OpDef.gathersRows) whose table is a
   * row-gathered weight gets only the rows its ids name, and the ids renumbered into them.
   */
  private async hostInputs(node: GraphNode, handle: (id: ValueId) => H): Promise<(Tensor | null)[]> {
    const { graph, device } = this;
    const gather = getOpDef(node.op).gathersRows;
    const table = gather ? graph.values[node.inputs[gather.table]!] : null;
    const ins = await Promise.all(
      node.inputs.map((id, i) =>
        id === null || (table && i === gather!.table && table.weight?.gather === 'rows') ? null : device.download(graph.values[id], handle(id)),
      ),
    );
    for (const t of ins) this.transfers.stagingFromDeviceBytes += t?.data.byteLength ?? 0;
    if (table?.weight?.gather === 'rows') {
      const ids = ins[0]!;
      const { ranges, local } = rowRanges(ids.data as Int32Array, table.shape[0], `weight '${table.weight.name}'`);
      ins[0] = { ...ids, data: local };
      const rowsRead = await this.loadWeight(table, ranges);
      const want = { ...table, shape: [ranges.reduce((n, [a, b]) => n + b - a, 0), ...table.shape.slice(1)] };
      checkDecl(`${this.options.backend}: rows of weight '${table.weight.name}'`, rowsRead, want);
      ins[gather!.table] = rowsRead;
    }
    return ins;
  }

  /** Frees each input after its last use and each output nothing reads, unless kept. */
  private release(node: GraphNode, i: number, env: Map<ValueId, H>, keep: Set<ValueId>): void {
    const drop = (id: ValueId): void => {
      const h = env.get(id);
      if (h === undefined || keep.has(id)) return;
      this.device.free(h);
      env.delete(id);
    };
    for (const id of node.inputs) if (id !== null && this.last.get(id) === i) drop(id);
    for (const id of node.outputs) if (id !== null && !this.last.has(id)) drop(id);
  }
}
