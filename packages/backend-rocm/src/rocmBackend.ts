import {
  exactPrecision,
  getOpDef,
  GraphSession,
  matrixWeightPort,
  refuseTorchCpuTies,
  resolveWeightRows,
  type Backend,
  type BackendPrecision,
  type DeviceOps,
  type Graph,
  type PreparedGraph,
  type SessionOptions,
  type ValueId,
  type WeightSource,
} from '@hcsp/core';
import { NcclCommunicator } from './comm/ncclCommunicator.ts';
import { checkDeviceMemory, estimateDeviceMemory } from './deviceMemoryGuard.ts';
import { gpuMasks, selectGpu, type GpuSelection } from './gpuSelection.ts';
import { nativeDeviceOps } from './nativeDevice.ts';
import { nativeWeightLoads, weightLoaderMode } from './nativeWeightLoader.ts';
import { loadNativeAddon, type GpuDevice, type GpuRuntimeProbe, type NativeAddon, type NativeTensor } from './nativeAddon.ts';
import { withFastKernels } from './fastKernelsPrecision.ts';
import { GpuRuntimeUnavailableError, native, typedNativeError } from './nativeErrors.ts';
import {
  DEVICE_GEMMS,
  GEMM_MODES,
  GPU_KINDS,
  gpuRuntimeKind,
  KERNEL_MODES,
  ROCM_DEVICE_KINDS,
  ROCM_DEVICES,
  rocmDeviceKind,
  type GemmMode,
  type GpuKind,
  type KernelMode,
  type RocmDevice,
  type RocmDeviceChoice,
} from './rocmDevices.ts';

export interface RocmBackendOptions {
  /**
   * default 'host'. 'emulated' runs the GPU kernel sources on the host (a check of their
   * arithmetic without a GPU); 'auto' takes the first of hip, cuda, host that starts and
   * says so in describe()
   */
  device?: RocmDeviceChoice;
  /**
   * 'exact': the reference's k order, bit-exact; 'blas' (host): OpenBLAS sgemm; 'vendor'
   * (hip, cuda): hipBLASLt / cuBLASLt, the library's free choice per shape; 'vendor-invariant'
   * (hip, cuda): the same libraries with one algorithm per (N, K, dtype) for every row count, so
   * a row's bits do not depend on how many rows the GEMM has (SP on and off agree). Default: the
   * device's first (DEVICE_GEMMS).
   */
  gemm?: GemmMode;
  /**
   * GPU devices: 'fast' (the default) launches the production kernels (chunked GatedDeltaNet,
   * tiled attention, grouped MoE; declared tolerances, fastKernelsPrecision.ts), 'exact' the
   * reference-order ones, bit-exact with the CPU reference. The host device has only the
   * reference-order kernels: 'exact'.
   */
  kernels?: KernelMode;
  /** the device's memory limit in bytes (0: none); beyond it an allocation is a NativeOutOfMemoryError */
  memoryLimitBytes?: number;
  /** hip, cuda: the folder of the kernels' code objects (<folder>/<arch>/*.hsaco, *.cubin); default native/build/gpu beside the addon */
  codeObjects?: string;
}

const EXACT_NOTE =
  "every host kernel is C++ in the CPU reference's accumulation order, with core's fp32 math library ported operation for operation, " +
  'built with -ffp-contract=off; the GEMMs vectorize across outputs (each lane sums its output in k order, FMAs only on exact bf16 products); ' +
  'collectives use the reference summation orders. Bit-exact, checked op by op in test/.';

/**
 * OpenBLAS's sgemm sums the same exact fp32 products as the reference, in its own blocked
 * order. Reordering a k-term fp32 sum moves it by at most about k * 2^-24 * sum|x*w|; measured
 * against the bf16 ulp of the row's largest output (2^-8 of it, relative) that stays below
 * one ulp for the model's k (<= 16384) unless the whole row cancels; one more ulp covers the
 * bf16 rounding landing on the other side. So: 2 row-scaled ulps for a GEMM, nothing else.
 */
export const BLAS_GEMM_PRECISION: BackendPrecision = {
  ...exactPrecision(EXACT_NOTE),
  gemm: {
    maxUlp: 2,
    note: "OpenBLAS sgemm reorders each fp32 sum (blocked k, its own kernel order); bounded by 2 bf16 ulps of the row's largest output (rowScaledError)",
  },
};

/** hipBLASLt / cuBLASLt: fp32 accumulation in the library's own order (tiles, split-k) */
export const VENDOR_GEMM_PRECISION: BackendPrecision = {
  ...exactPrecision(EXACT_NOTE),
  gemm: {
    maxUlp: 2,
    note: "hipBLASLt / cuBLASLt accumulate each output in fp32 in their own tile and split-k order; bounded by 2 bf16 ulps of the row's largest output (as for OpenBLAS)",
  },
};

/**
 * hipBLASLt / cuBLASLt with one algorithm per (N, K, dtype), chosen once and kept for every row
 * count (native/src/gpu/blaslt.h): the same library kernels as 'vendor', so the same bound
 * against the reference; and a row's bits do not depend on the GEMM's row count.
 */
export const VENDOR_INVARIANT_GEMM_PRECISION: BackendPrecision = {
  ...exactPrecision(EXACT_NOTE),
  gemm: {
    maxUlp: 2,
    note:
      "hipBLASLt / cuBLASLt with one algorithm per (N, K, dtype) for every row count (no split-k, no stream-K candidates): each output summed in fp32 in that kernel's tile order, " +
      "bounded by 2 bf16 ulps of the row's largest output as for vendor; a row gets the same bits on T rows and on T/tp (SP on and off agree)",
  },
};

/** the GEMM ops whose weight matrix (the declared weight port) the exact GEMM reads only as its panel, and the addon's kind for it */
const PANEL_GEMMS: Readonly<Record<string, 'linear' | 'fp8'>> = { linear: 'linear', fp8LinearPtpc: 'fp8' };

/**
 * The weights every reader of which is a per-rank `linear` (as w) or `fp8LinearPtpc` (as qW):
 * the host device's exact GEMM reads only their packed panels (native/src/host/gemm/panels.h).
 */
export function panelOnlyWeights(graph: Graph): Map<ValueId, 'linear' | 'fp8'> {
  const kinds = new Map<ValueId, 'linear' | 'fp8' | null>();
  for (const node of graph.nodes) {
    const gemm = node.rank === null ? undefined : PANEL_GEMMS[node.op];
    const panelPort = gemm ? matrixWeightPort(getOpDef(node.op)) : -1;
    node.inputs.forEach((id, port) => {
      if (id === null || graph.values[id]?.kind !== 'weight') return;
      const kind = gemm && port === panelPort ? gemm : null;
      kinds.set(id, kinds.has(id) && kinds.get(id) !== kind ? null : kind);
    });
  }
  for (const id of graph.outputs) kinds.delete(id);
  return new Map([...kinds].filter((e): e is [ValueId, 'linear' | 'fp8'] => e[1] !== null));
}

/**
 * The host device's exact GEMM packs each weight once into bf16 panels; here, when a session
 * opens, the weights only those GEMMs read are packed at once and their original bytes freed
 * (addon.packForGemm), so each is held once, as its panel. Outputs are the same bits (the
 * GEMMs read the same panels as before); other devices and the 'blas' mode keep every weight.
 */
async function packGemmWeights(addon: NativeAddon, graph: Graph, weights: ReadonlyMap<ValueId, NativeTensor>): Promise<void> {
  for (const [id, kind] of panelOnlyWeights(graph)) {
    const h = weights.get(id);
    if (h) await native(() => addon.packForGemm(h, kind));
  }
}

export interface RocmBackend extends Backend {
  readonly device: RocmDevice;
  readonly gemm: GemmMode;
  /** the GPU ops' kernels (always 'exact' on the host device) */
  readonly kernels: KernelMode;
  readonly addon: NativeAddon;
  /** the open GPU (null on the host device) */
  readonly gpu: GpuDevice | null;
  /** `session`: a rank's communicator for its part of a graph (rankGraph) */
  prepare(graph: Graph, weights: WeightSource, session?: Partial<SessionOptions>): Promise<PreparedGraph>;
}

function gpuUnavailable(kind: GpuKind, probe: GpuRuntimeProbe): string | null {
  const { label: name, libraryVariable: envVar } = gpuRuntimeKind(kind);
  if (!probe.found) return `no ${name} runtime found: ${probe.detail} (set ${envVar} to the library's path)`;
  if (probe.devices === 0) {
    const masks = gpuMasks(kind);
    return `the ${name} runtime ${probe.library} sees no GPU${probe.detail ? ` (${probe.detail})` : ''}${masks ? ` through ${masks}` : ''}`;
  }
  return null;
}

interface OpenedGpu {
  gpu: GpuDevice;
  selection: GpuSelection;
}

/**
 * The GPU of `kind` (gpuSelection.ts picks which), or the reason it cannot start. A runtime
 * that has GPUs but none for this rank's index throws: a misconfigured rank, never a reason
 * for 'auto' to run elsewhere.
 */
function openGpu(addon: NativeAddon, kind: GpuKind, codeObjects: string | undefined, kernels: KernelMode): OpenedGpu | string {
  const probe = addon.gpuRuntime(kind);
  const why = gpuUnavailable(kind, probe);
  if (why) return why;
  const selection = selectGpu(kind, probe.devices);
  try {
    return { gpu: addon.openGpu(kind, { device: selection.index, kernels, ...(codeObjects === undefined ? {} : { codeObjects }) }), selection };
  } catch (e) {
    return (typedNativeError(e) as Error).message;
  }
}

/** The native backend. A GPU device that cannot start is an error, never a silent run on the host. */
export async function createRocmBackend(options: RocmBackendOptions = {}): Promise<RocmBackend> {
  const choice = options.device ?? 'host';
  if (!ROCM_DEVICES.includes(choice)) throw new Error(`rocm backend: unknown device '${String(choice)}' (known: ${ROCM_DEVICES.join(', ')})`);
  if (options.gemm !== undefined && !GEMM_MODES.includes(options.gemm)) {
    throw new Error(`rocm backend: unknown gemm mode '${String(options.gemm)}' (known: ${GEMM_MODES.join(', ')})`);
  }
  if (options.kernels !== undefined && !KERNEL_MODES.includes(options.kernels)) {
    throw new Error(`rocm backend: unknown kernels mode '${String(options.kernels)}' (known: ${KERNEL_MODES.join(', ')})`);
  }
  if (choice !== 'auto' && options.kernels !== undefined && !rocmDeviceKind(choice).kernels.includes(options.kernels)) {
    const others = ROCM_DEVICE_KINDS.filter((d) => (d.kernels as readonly KernelMode[]).includes(options.kernels!)).map((d) => d.name);
    throw new Error(
      `rocm backend: the ${choice} device has only the reference-order kernels (kernels 'exact'); '${options.kernels}' applies to the GPU devices (${others.join(', ')})`,
    );
  }
  const kernels = options.kernels ?? 'fast';
  if (options.memoryLimitBytes !== undefined && !(Number.isInteger(options.memoryLimitBytes) && options.memoryLimitBytes >= 0)) {
    throw new Error(`rocm backend: memoryLimitBytes must be an integer >= 0, got ${options.memoryLimitBytes}`);
  }
  const loaderMode = weightLoaderMode();
  const addon = loadNativeAddon();
  const autoNotes: string[] = [];
  let device: RocmDevice = 'host';
  let gpu: GpuDevice | null = null;
  let selection: GpuSelection | null = null;
  const open = choice === 'auto' ? 'auto' : rocmDeviceKind(choice).open;
  if (open === 'runtime') {
    const kind = choice as GpuKind;
    const opened = openGpu(addon, kind, options.codeObjects, kernels);
    if (typeof opened === 'string') throw new GpuRuntimeUnavailableError(kind, `rocm backend, device ${kind}: ${opened}`);
    [device, gpu, selection] = [kind, opened.gpu, opened.selection];
  } else if (open === 'auto') {
    for (const kind of GPU_KINDS) {
      const opened = openGpu(addon, kind, options.codeObjects, kernels);
      if (typeof opened !== 'string') {
        [device, gpu, selection] = [kind, opened.gpu, opened.selection];
        break;
      }
      autoNotes.push(`${kind}: ${opened}`);
    }
  } else if (open === 'emulated') {
    [device, gpu] = [choice as RocmDevice, await native(() => addon.openGpu('emulated', { kernels }))];
  }
  const gemm = options.gemm ?? DEVICE_GEMMS[device][0];
  if (!DEVICE_GEMMS[device].includes(gemm)) {
    throw new Error(`rocm backend: the ${device} device has no '${gemm}' GEMM (it has: ${DEVICE_GEMMS[device].join(', ')})`);
  }
  if (gemm === 'blas') await native(() => addon.blas());
  // the host device's limit is the process's: dispose() puts back the one this replaced
  const memory = gpu ?? addon;
  let limitBefore: number | null = null;
  if (options.memoryLimitBytes !== undefined) {
    limitBefore = memory.stats().limitBytes;
    memory.setMemoryLimit(options.memoryLimitBytes);
  }
  const info = addon.info();
  const deviceOps = nativeDeviceOps(addon, gemm, gpu);
  const ops: DeviceOps<NativeTensor> =
    !gpu && gemm === 'exact' ? { ...deviceOps, prepared: (graph, weights) => packGemmWeights(addon, graph, weights) } : deviceOps;
  const gemmText =
    gemm === 'blas'
      ? `OpenBLAS sgemm (${addon.blas().path}, OPENBLAS_CORETYPE=${addon.blas().coretype || 'unset'})`
      : gemm === 'vendor'
        ? gpuRuntimeKind(device as GpuKind).blasLt
        : gemm === 'vendor-invariant'
          ? `${gpuRuntimeKind(device as GpuKind).blasLt} (row-count-invariant: one algorithm per N, K)`
          : gpu
            ? 'reference-order GEMM kernel'
            : `exact ${info.isa} GEMM`;
  const where = gpu
    ? `the ${device} device${selection ? ` ${selection.index} (${selection.reason})` : ''}: ${gpu.describe()}`
    : `the host device (${info.threads} threads)`;
  const deviceName = selection ? `${device}:${selection.index}${selection.masks ? ` (${selection.masks})` : ''}` : device;
  // a GPU's session must fit in the device's free memory: refused before any weight is uploaded
  const guardDevice = async (graph: Graph, session: Partial<SessionOptions>): Promise<void> => {
    if (!gpu || !selection) return;
    const estimate = estimateDeviceMemory(graph, {
      ncclCommunicator: session.communicator instanceof NcclCommunicator,
      vendorGemm: gemm === 'vendor' || gemm === 'vendor-invariant',
    });
    const { freeBytes, totalBytes } = await native(() => gpu!.memoryInfo());
    const { limitBytes, liveBytes } = gpu.stats();
    checkDeviceMemory(graph, estimate, { device: deviceName, freeBytes, totalBytes, limitBytes, liveBytes });
  };
  const gemmPrecision =
    gemm === 'blas'
      ? BLAS_GEMM_PRECISION
      : gemm === 'vendor'
        ? VENDOR_GEMM_PRECISION
        : gemm === 'vendor-invariant'
          ? VENDOR_INVARIANT_GEMM_PRECISION
          : exactPrecision(EXACT_NOTE);
  const picked = choice === 'auto' ? ` (auto picked ${device}${autoNotes.length ? `: ${autoNotes.join('; ')}` : ''})` : '';
  return {
    name: 'rocm',
    device,
    gemm,
    addon,
    gpu,
    kernels: gpu ? kernels : rocmDeviceKind(device).kernels[0]!,
    precision: gpu?.kernels === 'fast' ? withFastKernels(gemmPrecision) : gemmPrecision,
    describe: () =>
      `rocm on ${where}, ${gemmText}${gpu ? `, ${gpu.kernels === 'fast' ? 'production (fast) kernels' : 'reference-order kernels'}` : ''}${picked}`,
    prepare: async (graph: Graph, weights: WeightSource, session: Partial<SessionOptions> = {}): Promise<PreparedGraph> => {
      // the GPU kernels have only the 'lower-index' top-k rule; the host device calls libstdc++
      if (gpu) refuseTorchCpuTies(graph, `rocm on the ${device} device`);
      await guardDevice(graph, session);
      // checkpoint weights stored as the graph reads them: one batch through the native loader
      const loadWeights = nativeWeightLoads(addon, gpu, weights, loaderMode);
      return GraphSession.open(graph, loadWeights ? { ...ops, loadWeights } : ops, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), {
        backend: 'rocm',
        ...session,
      });
    },
    dispose: async () => {
      if (limitBefore !== null) memory.setMemoryLimit(limitBefore);
      limitBefore = null;
    },
  };
}
