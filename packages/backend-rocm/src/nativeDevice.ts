import {
  getOpDef,
  nodeLabel,
  withNodeContext,
  type DeviceOps,
  type GraphNode,
  type RecordedRun,
  type RunProgram,
  type Tensor,
  type TensorData,
  type ValueDecl,
  type ValueId,
} from '@hcsp/core';
import type { GpuDevice, NativeAddon, NativeTensor, OutputDecl, PreparedNode } from './nativeAddon.ts';
import type { GemmMode } from './rocmDevices.ts';
import { native, nativeSync } from './nativeErrors.ts';
import { NcclCommunicator } from './comm/ncclCommunicator.ts';

function viewOf(dtype: Tensor['dtype'], buf: ArrayBuffer): TensorData {
  switch (dtype) {
    case 'bf16':
      return new Uint16Array(buf);
    case 'f32':
      return new Float32Array(buf);
    case 'i32':
      return new Int32Array(buf);
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return new Uint8Array(buf);
  }
}

const declOf = (d: ValueDecl | null): OutputDecl | null => (d === null ? null : { dtype: d.dtype, shape: d.shape });

/**
 * A native device as core's DeviceOps: the host device (gpu null) or a GPU. Handles are
 * native tensors in that device's memory. Running a node enqueues it on the process's device
 * queue and returns its outputs as queued handles of the declared shapes: the host waits only
 * where a value must reach it (a download) and once at the end of a run, where a node's error
 * is raised naming it. Collectives take every simulated rank's buffer at once, in lockstep,
 * with the reference's reduction orders. A rank's collective on a GPU whose communicator is
 * NCCL on that GPU is enqueued on the same queue and stream, on the run's device tensors (no
 * host staging); the next sync then waits through the communicator (its watchdog, NCCL's
 * asynchronous error). Any other communicator gets host tensors from the session's loop. A
 * host op the addon has a kernel for on this device runs here too (DeviceOps.runsHostOp).
 */
export function nativeDeviceOps(addon: NativeAddon, gemm: GemmMode, gpu: GpuDevice | null = null): DeviceOps<NativeTensor> {
  const deviceSync = (): Promise<void> => native(() => addon.sync(gpu));
  // NCCL collectives enqueued since the last sync: the communicator and the first node's label
  let enqueued: { comm: NcclCommunicator; first: string } | null = null;
  const sync = (): Promise<void> => {
    if (!enqueued) return deviceSync();
    const { comm, first } = enqueued;
    enqueued = null;
    return comm.syncEnqueued(first, deviceSync);
  };
  // the host ops (OpDef.host) this device has a native kernel for, as the addon lists them (the
  // PLE's 64-bit n-gram hash): they run as nodes, on the device, with no host round trip; a
  // row-gathered table's lookup stays the loop's (its rows are read as the ids need them)
  const kernels = addon.kernels();
  const deviceOps = new Set(gpu ? kernels.gpuPerRank : kernels.perRank);
  const runsHostOp = (op: string): boolean => deviceOps.has(op) && !getOpDef(op).gathersRows;
  // each node parsed once (op, attributes, declarations), then enqueued run after run
  const prepared = new WeakMap<GraphNode, PreparedNode>();
  const nodeOf = (node: GraphNode, outputs: () => (OutputDecl | null)[] | (OutputDecl | null)[][], collective: boolean): PreparedNode => {
    let p = prepared.get(node);
    if (!p) prepared.set(node, (p = addon.prepareNode(nodeLabel(node), node.op, node.attrs, gemm, gpu, outputs(), collective)));
    return p;
  };
  /**
   * The run as one program of the addon's queue (native/src/engine/program.h): a slot per value,
   * the weights fixed, each node a step (its prepared node, or this GPU's NCCL collective).
   * null where a node needs the host: a host op with no native kernel, or a rank's collective
   * whose communicator is not NCCL on this GPU.
   */
  const record = (program: RunProgram, weights: ReadonlyMap<ValueId, NativeTensor>, communicator: unknown): RecordedRun<NativeTensor> | null => {
    const { graph } = program;
    const slots = new Map<ValueId, number>();
    const slotOf = (id: ValueId | null): number => {
      if (id === null) return -1;
      let i = slots.get(id);
      if (i === undefined) slots.set(id, (i = slots.size));
      return i;
    };
    const fixed: [number, NativeTensor][] = [...weights].map(([id, h]) => [slotOf(id), h]);
    const inputs = program.inputs.map(slotOf);
    const nccl = communicator instanceof NcclCommunicator && gpu !== null && communicator.gpu === gpu ? communicator : null;
    let firstCollective: GraphNode | null = null;
    const steps: unknown[] = [];
    const decls = (ids: (ValueId | null)[]) => ids.map((id) => (id === null ? null : graph.values[id]));
    for (const node of graph.nodes) {
      try {
        if (node.rank === null && graph.rank === undefined) {
          // every simulated rank at once: ports per rank
          const ports = node.inputs.length / graph.tp;
          const outPorts = node.outputs.length / graph.tp;
          const perRank = <T>(xs: T[], n: number) => Array.from({ length: graph.tp }, (_, r) => xs.slice(r * n, (r + 1) * n));
          const prepared = nodeOf(node, () => perRank(decls(node.outputs), outPorts).map((ds) => ds.map(declOf)), true);
          steps.push({ node: prepared, in: perRank(node.inputs.map(slotOf), ports), out: perRank(node.outputs.map(slotOf), outPorts) });
        } else if (node.rank === null) {
          if (!nccl) return null;
          firstCollective ??= node;
          const step = nativeSync(() => nccl.collectiveStep(node, nodeLabel(node), decls(node.inputs) as ValueDecl[], decls(node.outputs)));
          steps.push({ collective: step, in: [node.inputs.map(slotOf)], out: [node.outputs.map(slotOf)] });
        } else {
          if (getOpDef(node.op).host && !runsHostOp(node.op)) return null;
          const prepared = nodeOf(node, () => decls(node.outputs).map(declOf), false);
          steps.push({ node: prepared, in: [node.inputs.map(slotOf)], out: [node.outputs.map(slotOf)] });
        }
      } catch (e) {
        throw withNodeContext(e, `${nodeLabel(node)}: `);
      }
    }
    const outputs = program.outputs.map(slotOf);
    const recorded = nativeSync(() => addon.recordProgram(steps as Parameters<NativeAddon['recordProgram']>[0], slots.size, fixed, inputs, outputs));
    const first = firstCollective;
    return {
      replay: (ins) => {
        if (nccl && first) {
          try {
            nccl.checkUsable(first);
          } catch (e) {
            throw withNodeContext(e, `${nodeLabel(first)}: `);
          }
          enqueued ??= { comm: nccl, first: nodeLabel(first) };
        }
        return nativeSync(() => addon.replay(recorded, ins));
      },
      release: () => addon.releaseProgram(recorded),
      // a GPU's warm-up (its kernels' scratch and vendor GEMM plans at open); the host device's
      // kernels compute where they allocate, so it warms up on its first run instead
      ...(gpu
        ? {
            warm: async (ins: NativeTensor[]) => {
              const outs = nativeSync(() => addon.replay(recorded, ins, gpu));
              try {
                await deviceSync();
              } finally {
                for (const h of outs) addon.free(h);
              }
            },
          }
        : {}),
    };
  };
  return {
    // weights go at once (a session opening); a run's inputs and host ops' outputs take their
    // place in the queue, so their blocks come from the pool in the same order every run
    upload: (decl, t) => native(() => (decl.kind === 'weight' ? addon.upload : addon.enqueueUpload)(t.dtype, t.shape, t.data, gpu)),
    runNode: (node: GraphNode, inputs, _inputDecls, outputs) =>
      native(
        () =>
          addon.enqueueNode(
            nodeOf(node, () => outputs.map(declOf), false),
            inputs,
          ) as (NativeTensor | null)[],
      ),
    runCollective: (node, inputs, _inputDecls, outputs) =>
      native(
        () =>
          addon.enqueueNode(
            nodeOf(node, () => outputs.map((ds) => ds.map(declOf)), true),
            inputs,
          ) as NativeTensor[][],
      ),
    collective: (node, inputs, inputDecls, outputs, communicator) => {
      if (!gpu || !(communicator instanceof NcclCommunicator) || communicator.gpu !== gpu) return null;
      const label = nodeLabel(node);
      const ys = communicator.enqueueCollective(node, label, inputs, inputDecls, outputs);
      enqueued ??= { comm: communicator, first: label };
      return ys;
    },
    runsHostOp,
    record: (program, weights, communicator) => record(program, weights, communicator),
    download: async (decl, h) => {
      // a value whose node has run needs no wait (the end of a run reads its outputs after one sync)
      if (!h.computed) await sync();
      return native(() => ({ dtype: decl.dtype, shape: [...decl.shape], data: viewOf(decl.dtype, addon.download(h)) }));
    },
    free: (h) => addon.free(h),
    sync,
    syncEveryNodes: Infinity,
    reserve: (plan) => native(() => addon.reservePool(plan.blocks, gpu)),
    trim: () => addon.trimPool(gpu),
    counters: () => addon.counters(gpu),
  };
}
