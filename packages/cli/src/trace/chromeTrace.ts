// `prefill --trace FILE.json`: a run as a Chrome trace (the Trace Event Format's JSON object,
// which Perfetto's UI and chrome://tracing open): one process per rank, a thread for the run
// and one for the device stream the nodes ran on; every node a complete event ('X') with its
// op, scope, shapes and bytes; every collective a slice on each rank with the bytes that rank
// sends, the ranks' slices linked by one flow ('s', 't', 'f'; id: the collective's node id).
//
// What a slice's time is (written into the trace, otherData.time and each slice's args.time):
// node by node, a node's slice runs from the previous node's end to its own as the engine
// reported them (RunOptions.onNode) on the host's clock: on the cpu backend that is the
// node's compute; on a device backend its enqueue (the host waits for the device every few
// nodes, and at the end). A run that was one recorded replay has no per-node times: its nodes
// are zero-length slices at the replay's start, in graph order, and one slice spans the replay.
// Simulated ranks (--comm sim) run every rank's nodes in this one process in graph order, so a
// rank's track has gaps where the others' nodes ran; launched ranks (--comm mpi|nccl) each
// time their own part, on clocks that agree on one machine (epoch microseconds).
import {
  bytesPerElement,
  commBytesOf,
  isCollectiveOp,
  numel,
  rankGraph,
  type CollectiveOp,
  type Graph,
  type GraphNode,
  type ReduceAlgorithm,
} from '@hcsp/core';
import type { RunTiming } from './nodeTimer.ts';

export interface TraceEvent {
  name: string;
  ph: 'X' | 'M' | 's' | 't' | 'f';
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  id?: number;
  bp?: 'e';
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string | number>;
}

/** the thread of the run's own slice, and of the device stream's nodes */
const RUN_TID = 0;
const STREAM_TID = 1;

export interface TraceInput {
  /** the whole graph (every rank's nodes) */
  graph: Graph;
  /** 'sim': one timing of the whole graph; 'ranks': one per rank, of its part (rankGraph) */
  mode: 'sim' | 'ranks';
  timings: RunTiming[];
  /** the backend and device, for the trace's header */
  device: string;
}

function described(graph: Graph, id: string | null): string | null {
  if (id === null) return null;
  const v = graph.values[id];
  return `${v.dtype}[${v.shape.join(',')}]`;
}

function bytesOf(graph: Graph, id: string | null): number {
  return id === null ? 0 : numel(graph.values[id].shape) * bytesPerElement(graph.values[id].dtype);
}

/** a node's ports on rank r: a collective lists each rank's in turn, other nodes are one rank's */
function ports(node: GraphNode, r: number, tp: number): { inputs: (string | null)[]; outputs: (string | null)[] } {
  if (node.rank !== null) return { inputs: node.inputs, outputs: node.outputs };
  const pi = node.inputs.length / tp;
  const po = node.outputs.length / tp;
  return { inputs: node.inputs.slice(r * pi, (r + 1) * pi), outputs: node.outputs.slice(r * po, (r + 1) * po) };
}

function nodeArgs(graph: Graph, node: GraphNode, r: number, time: string): Record<string, unknown> {
  const { inputs, outputs } = ports(node, r, graph.tp);
  const args: Record<string, unknown> = {
    node: node.id,
    op: node.op,
    scope: node.scope,
    layer: node.layer,
    inputs: inputs.map((id) => described(graph, id)),
    outputs: outputs.map((id) => described(graph, id)),
    bytesIn: inputs.reduce((s, id) => s + bytesOf(graph, id), 0),
    bytesOut: outputs.reduce((s, id) => s + bytesOf(graph, id), 0),
    time,
  };
  if (isCollectiveOp(node.op)) {
    const op = node.op as CollectiveOp;
    const algorithm = op === 'allGather' ? null : ((node.attrs.algorithm as ReduceAlgorithm | undefined) ?? null);
    args.algorithm = algorithm;
    // collectives/commBytes.ts: the bytes this rank sends (the run summary's accounting)
    args.bytesSent = commBytesOf(op, algorithm, bytesOf(graph, inputs[0] ?? null), bytesOf(graph, outputs[0] ?? null), graph.tp);
  }
  return args;
}

const NODE_TIME =
  "host clock, from the previous node's end to this node's end as the engine reported it: compute on the cpu backend, enqueue on a device backend (which the host waits for every few nodes and at the end)";
const REPLAY_TIME =
  'not measured: the run was one recorded replay (one call for every node; see the "recorded replay" slice), so the nodes stand in graph order at its start';

/** The Chrome trace of a run (see the file's head for what its times mean). */
export function chromeTrace(input: TraceInput): ChromeTrace {
  const { graph, mode, timings } = input;
  const tp = graph.tp;
  if (timings.length !== (mode === 'sim' ? 1 : tp)) throw new Error(`--trace: ${timings.length} timings for ${mode === 'sim' ? 'one process' : `${tp} ranks`}`);
  const origin = Math.min(...timings.map((t) => t.startUs));
  const at = (us: number) => us - origin;
  const events: TraceEvent[] = [];
  for (let r = 0; r < tp; r++) {
    events.push({ name: 'process_name', ph: 'M', pid: r, tid: 0, args: { name: `rank ${r}` } });
    events.push({ name: 'process_sort_index', ph: 'M', pid: r, tid: 0, args: { sort_index: r } });
    events.push({ name: 'thread_name', ph: 'M', pid: r, tid: RUN_TID, args: { name: mode === 'sim' ? 'run (all ranks in one process)' : 'run' } });
    const timing = timings[mode === 'sim' ? 0 : r];
    events.push({
      name: 'thread_name',
      ph: 'M',
      pid: r,
      tid: STREAM_TID,
      args: { name: timing.recorded ? 'stream 0 (one recorded replay)' : 'stream 0 (node by node)' },
    });
  }
  // collective node id -> each rank's slice [ts, dur]
  const meets = new Map<number, { op: string; at: ([number, number] | undefined)[] }>();
  const place = (node: GraphNode, r: number, ts: number, dur: number, time: string) => {
    const collective = isCollectiveOp(node.op);
    events.push({ name: node.op, cat: collective ? 'collective' : 'node', ph: 'X', pid: r, tid: STREAM_TID, ts, dur, args: nodeArgs(graph, node, r, time) });
    if (!collective) return;
    const m = meets.get(node.id) ?? { op: node.op, at: new Array(tp) };
    m.at[r] = [ts, dur];
    meets.set(node.id, m);
  };
  // a rank's part lists the nodes it ran (a collective with only its own ports): the whole graph's nodes of the same ids
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const runs =
    mode === 'sim'
      ? [{ ranks: [...Array(tp).keys()], nodes: graph.nodes, timing: timings[0] }]
      : timings.map((timing, r) => ({ ranks: [r], nodes: rankGraph(graph, r).nodes.map((n) => byId.get(n.id)!), timing }));
  for (const { ranks, nodes, timing } of runs) {
    if (!timing.recorded && timing.nodeEndsUs.length !== nodes.length)
      throw new Error(`--trace: ${timing.nodeEndsUs.length} node times for ${nodes.length} nodes`);
    for (const r of ranks) {
      events.push({
        name: timing.recorded ? 'recorded replay' : 'run',
        cat: 'run',
        ph: 'X',
        pid: r,
        tid: RUN_TID,
        ts: at(timing.startUs),
        dur: timing.endUs - timing.startUs,
        args: {
          nodes: nodes.length,
          time: timing.recorded
            ? "host clock: the replay's enqueue and the wait for the device, with the feeds' upload and the outputs' download"
            : "host clock: the whole run, with the feeds' upload and the outputs' download",
        },
      });
    }
    let prev = at(timing.startUs);
    nodes.forEach((node, i) => {
      const end = timing.recorded ? prev : at(timing.nodeEndsUs[i]);
      const targets = node.rank === null ? ranks : ranks.filter((r) => r === node.rank);
      for (const r of targets)
        place(
          node,
          r,
          prev,
          end - prev,
          timing.recorded
            ? 'not measured (one recorded replay: otherData.time)'
            : i === 0
              ? "host clock, from the run's start (the feeds' upload too) to this node's end (otherData.time)"
              : "host clock, from the previous node's end to this node's end (otherData.time)",
        );
      prev = end;
    });
  }
  // one flow per collective through every rank's slice, rank 0 to the last
  for (const [id, m] of tp > 1 ? meets : []) {
    m.at.forEach((slice, r) => {
      if (!slice) throw new Error(`--trace: collective node ${id} has no slice on rank ${r}`);
      const ph = r === 0 ? 's' : r === tp - 1 ? 'f' : 't';
      events.push({ name: m.op, cat: 'collective', ph, id, pid: r, tid: STREAM_TID, ts: slice[0] + slice[1] / 2, ...(ph === 'f' ? { bp: 'e' as const } : {}) });
    });
  }
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: {
      producer: 'hcsp prefill --trace',
      device: input.device,
      ranks:
        mode === 'sim'
          ? `${tp} simulated in one process (--comm sim): a rank's track has gaps where the other ranks' nodes ran`
          : `${tp} processes, each timing its own part`,
      time: timings.some((t) => t.recorded) ? REPLAY_TIME : NODE_TIME,
      originEpochMicros: origin,
      ...(timings.some((t) => t.unreported > 0)
        ? {
            unreported: `${timings.map((t) => t.unreported).join(', ')} nodes (per ${mode === 'sim' ? 'process' : 'rank'}) reported their end only after the run returned: each such node ends with the next node reported, or the run`,
          }
        : {}),
    },
  };
}
