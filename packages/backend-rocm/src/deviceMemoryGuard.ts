// Refusing a graph that would not fit on its GPU, before anything is uploaded: what the session
// will hold on the device (graphSession.ts: every weight its nodes read, uploaded when it
// opens; the run's memory plan, reserved at prepare) plus what the libraries the run calls
// allocate on the device themselves, against the memory the device has free now.
import { formatBytes, planMemory, valueBytes, type Graph } from '@hcsp/core';
import { NativeOutOfMemoryError } from './nativeErrors.ts';

/**
 * RCCL/NCCL's own device buffers for a rank's communicator: per channel and connected peer, a
 * receive buffer per protocol (SIMPLE 4 MiB, NCCL_BUFFSIZE's default; LL128 about 4.7 MiB; LL
 * 0.5 MiB), about 0.3 GiB for a ring over 32 channels, more once the tree connects too. Newer
 * libraries connect at the first collective (NCCL 2.22's runtime connection), after the
 * session opened, so the device's free memory then does not show them yet. An allowance, not
 * a measurement.
 */
export const COMMUNICATOR_ALLOWANCE_BYTES = 2 ** 30;
/** hipBLASLt / cuBLASLt's workspace, allocated at the device's first vendor GEMM (native/src/gpu/blaslt.cc, kWorkspaceBytes) */
export const VENDOR_BLAS_WORKSPACE_BYTES = 32 * 2 ** 20;

export interface DeviceMemoryEstimate {
  /** the weights the session uploads: every weight value a node reads, but for row-gathered tables (read on the host, only the rows a run needs) */
  weights: number;
  /** the run's memory plan (core's planMemory: inputs, intermediates, outputs), reserved at prepare */
  activations: number;
  /** COMMUNICATOR_ALLOWANCE_BYTES for a rank meeting its peers through RCCL/NCCL, else 0 */
  communicator: number;
  /** VENDOR_BLAS_WORKSPACE_BYTES when the GEMMs are hipBLASLt's / cuBLASLt's, else 0 */
  blasWorkspace: number;
  /** the sum */
  total: number;
}

/** What a session of `graph` holds on its device. */
export function estimateDeviceMemory(graph: Graph, o: { ncclCommunicator: boolean; vendorGemm: boolean }): DeviceMemoryEstimate {
  const uploaded = new Set<string>();
  for (const node of graph.nodes) {
    for (const id of node.inputs) {
      const d = id === null ? undefined : graph.values[id];
      if (d?.kind === 'weight' && d.weight?.gather !== 'rows') uploaded.add(d.id);
    }
  }
  let weights = 0;
  for (const id of uploaded) weights += valueBytes(graph.values[id]);
  const activations = planMemory(graph).poolBytes;
  const hasCollective = graph.nodes.some((n) => n.rank === null);
  const communicator = o.ncclCommunicator && hasCollective ? COMMUNICATOR_ALLOWANCE_BYTES : 0;
  const blasWorkspace = o.vendorGemm ? VENDOR_BLAS_WORKSPACE_BYTES : 0;
  return { weights, activations, communicator, blasWorkspace, total: weights + activations + communicator + blasWorkspace };
}

/** a graph refused because its session would not fit on the device: nothing was allocated */
export class DeviceMemoryError extends NativeOutOfMemoryError {
  override name = 'DeviceMemoryError';
  constructor(
    message: string,
    readonly estimate: DeviceMemoryEstimate,
    readonly availableBytes: number,
  ) {
    super('HCSP_OOM', message);
  }
}

export interface DeviceMemoryState {
  /** e.g. "hip:0 (HIP_VISIBLE_DEVICES=3)" */
  device: string;
  freeBytes: number;
  totalBytes: number;
  /** the backend's memory limit (memoryLimitBytes; 0: none) and what the device holds under it now */
  limitBytes: number;
  liveBytes: number;
}

/**
 * Throws a DeviceMemoryError naming both figures and the device when `estimate` exceeds what
 * the device can give: its free memory, or what the backend's memory limit leaves if less.
 */
export function checkDeviceMemory(graph: Graph, estimate: DeviceMemoryEstimate, state: DeviceMemoryState): void {
  const underLimit = state.limitBytes > 0 ? Math.max(0, state.limitBytes - state.liveBytes) : Infinity;
  const available = Math.min(state.freeBytes, underLimit);
  if (estimate.total <= available) return;
  const who = graph.rank !== undefined ? `rank ${graph.rank} of ${graph.tp}` : graph.tp > 1 ? `the whole graph (tp ${graph.tp} on one device)` : 'the graph';
  const parts = [`weights ${formatBytes(estimate.weights)}`, `activations ${formatBytes(estimate.activations)} (memory plan)`];
  if (estimate.communicator > 0) parts.push(`communicator buffers ${formatBytes(estimate.communicator)} (RCCL/NCCL allowance)`);
  if (estimate.blasWorkspace > 0) parts.push(`vendor-BLAS workspace ${formatBytes(estimate.blasWorkspace)}`);
  const has =
    available < state.freeBytes
      ? `the backend's memory limit of ${formatBytes(state.limitBytes)} leaves ${formatBytes(available)} (the device has ${formatBytes(state.freeBytes)} free of ${formatBytes(state.totalBytes)})`
      : `the device has ${formatBytes(state.freeBytes)} free (of ${formatBytes(state.totalBytes)})`;
  throw new DeviceMemoryError(
    `rocm backend: ${who} needs ${formatBytes(estimate.total)} on ${state.device} (${parts.join(', ')}) but ${has}; nothing was allocated. ` +
      'Use more ranks (tp), fewer tokens, or free the device',
    estimate,
    available,
  );
}
