import { nodeLabel, type DeviceOps, type GraphNode, type Tensor, type TensorData, type ValueDecl } from '@hcsp/core';
import type { GemmMode, GpuDevice, NativeAddon, NativeTensor, OutputDecl, PreparedNode } from './nativeAddon.ts';
import { native } from './nativeErrors.ts';
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
 * asynchronous error). Any other communicator gets host tensors from the session's loop.
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
  // each node parsed once (op, attributes, declarations), then enqueued run after run
  const prepared = new WeakMap<GraphNode, PreparedNode>();
  const nodeOf = (node: GraphNode, outputs: () => (OutputDecl | null)[] | (OutputDecl | null)[][], collective: boolean): PreparedNode => {
    let p = prepared.get(node);
    if (!p) prepared.set(node, (p = addon.prepareNode(nodeLabel(node), node.op, node.attrs, gemm, gpu, outputs(), collective)));
    return p;
  };
  return {
    // weights go at once (a session opening); a run's inputs and host ops' outputs take their
    // place in the queue, so their blocks come from the pool in the same order every run
    upload: (decl, t) => native(() => (decl.kind === 'weight' ? addon.upload : addon.enqueueUpload)(t.dtype, t.shape, t.data, gpu)),
    runNode: (node: GraphNode, inputs, _inputDecls, outputs) =>
      native(() => addon.enqueueNode(nodeOf(node, () => outputs.map(declOf), false), inputs) as (NativeTensor | null)[]),
    runCollective: (node, inputs, _inputDecls, outputs) =>
      native(() => addon.enqueueNode(nodeOf(node, () => outputs.map((ds) => ds.map(declOf)), true), inputs) as NativeTensor[][]),
    collective: (node, inputs, inputDecls, outputs, communicator) => {
      if (!gpu || !(communicator instanceof NcclCommunicator) || communicator.gpu !== gpu) return null;
      const label = nodeLabel(node);
      const ys = communicator.enqueueCollective(node, label, inputs, inputDecls, outputs);
      enqueued ??= { comm: communicator, first: label };
      return ys;
    },
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
