import { BackendUnavailableError, type DeviceCounters } from '@hcsp/core';
import { BUILD_COMMAND, builtAddonPath, loadProbedAddon } from './addonLoading.ts';
import type { GemmMode, GpuDeviceKind, GpuKind, KernelMode } from './rocmDevices.ts';

/** A tensor on the host device (native memory); `free` releases it. */
export interface NativeTensor {
  readonly dtype: string;
  readonly shape: number[];
  readonly bytes: number;
  readonly freed: boolean;
  /** false while the node producing it is still queued (enqueue) */
  readonly computed: boolean;
}

export interface AllocatorStats {
  liveTensors: number;
  liveBytes: number;
  peakBytes: number;
  allocations: number;
  limitBytes: number;
  /** freed blocks the device's pool keeps for reuse */
  pooledBytes: number;
}

export interface GpuRuntimeProbe {
  found: boolean;
  library: string;
  devices: number;
  detail: string;
}

/** an NCCL collective as a step of a recorded run (NcclComm.step; opaque) */
export type NcclStep = { readonly __ncclStep: unique symbol };

/** a run recordProgram() recorded (opaque) */
export type RecordedProgram = { readonly __recordedProgram: unique symbol };

/** a node prepareNode() parsed (opaque) */
export type PreparedNode = { readonly __preparedNode: unique symbol };

/** an output port as prepareNode() declares it */
export interface OutputDecl {
  dtype: string;
  shape: readonly number[];
}

/** An open GPU device (HIP, CUDA, or the emulated one that runs the kernel sources on the host). */
export interface GpuDevice {
  readonly kind: GpuDeviceKind;
  readonly arch: string;
  /** which kernels its ops launch, as openGpu was asked */
  readonly kernels: KernelMode;
  describe(): string;
  stats(): AllocatorStats;
  setMemoryLimit(bytes: number): void;
  synchronize(): void;
  /** the device's free and total memory now, as its runtime reports them (hipMemGetInfo, cuMemGetInfo_v2; the host's for the emulated device) */
  memoryInfo(): { freeBytes: number; totalBytes: number };
  /** the vendor GEMMs' plans on this device since it opened (native/src/gpu/blaslt.h; all zero on the emulated device) */
  vendorGemm(): VendorGemmStats;
  /** the ops that ran their exact kernel although the device was opened with fast kernels, and why (each also said once on stderr) */
  kernelFallbacks(): KernelFallback[];
}

/** an op that ran its exact kernel on a fast-kernel device (native/src/gpu/kernel_fallbacks.h) */
export interface KernelFallback {
  op: string;
  reason: string;
}

/** a GEMM shape the vendor library had no algorithm for, run by the exact kernel: y[m, n] = x[m, k] . w[n, k]^T */
export interface GemmFallback {
  op: 'linear' | 'fp8LinearPtpc';
  m: number;
  n: number;
  k: number;
  dtype: 'bf16' | 'fp8e4m3fnuz' | 'fp8e4m3fn';
}

export interface VendorGemmStats {
  /** shapes with a cached algorithm */
  plans: number;
  /** calls of the library's heuristic: one per shape planned */
  heuristicQueries: number;
  fallbacks: GemmFallback[];
  /** gemm 'vendor-invariant': plans whose one algorithm serves every row count of their (N, K, dtype) */
  invariantPlans: number;
  /** the (plan, row count) pairs those plans checked and ran */
  invariantRowCounts: number;
  /** heuristic candidates they refused (split-k, stream-K: a k partition that can depend on M) */
  refusedCandidates: number;
}

/** one weight for the native loader: its bytes are `ranges`' bytes of the files, in order */
export interface WeightLoadRequest {
  /** for errors */
  name: string;
  dtype: string;
  shape: readonly number[];
  /** four numbers per range: file index, byte offset, bytes, part (the source read it belongs to) */
  ranges: Float64Array;
  /** parts (NaN/Inf are counted per part) */
  parts: number;
}

export interface WeightLoadResult {
  tensors: NativeTensor[];
  /** per request: NaN and Inf counts of each part, [nan0, inf0, nan1, inf1, ...] */
  nonFinite: Float64Array[];
  bytesRead: number;
  seconds: number;
  /** reading threads used */
  lanes: number;
  /** 'none' (the host device: reads land in its tensors), 'pinned' or 'pageable' staging buffers */
  staging: 'none' | 'pinned' | 'pageable';
  /** ranges after adjacent ones were merged, and chunks read */
  ranges: number;
  chunks: number;
}

/** The addon's surface (native/src/addon/addon.cc). */
export interface NativeAddon {
  /** onto the host device, or `gpu`'s memory */
  upload(dtype: string, shape: readonly number[], data: ArrayBufferView, gpu?: GpuDevice | null): NativeTensor;
  download(t: NativeTensor): ArrayBuffer;
  free(t: NativeTensor): void;
  /** on the host device, or on `gpu` (every input must live there) */
  run(op: string, inputs: (NativeTensor | null)[], attrs: Record<string, unknown>, gemm: GemmMode, gpu?: GpuDevice | null): Promise<(NativeTensor | null)[]>;
  runCollective(op: string, inputs: NativeTensor[][], attrs: Record<string, unknown>, gemm: GemmMode, gpu?: GpuDevice | null): Promise<NativeTensor[][]>;
  /**
   * A node parsed once for the process's device queue: its op, attributes and the declared
   * dtype and shape of each output (a collective: one array of ports per rank). `label` names
   * it in a queued error.
   */
  prepareNode(
    label: string,
    op: string,
    attrs: Record<string, unknown>,
    gemm: GemmMode,
    gpu: GpuDevice | null,
    outputs: (OutputDecl | null)[] | (OutputDecl | null)[][],
    collective: boolean,
  ): PreparedNode;
  /**
   * Records a prepared node on the queue and returns at once: its outputs are handles the queue
   * fills when the node runs (a kernel producing another shape than declared is an error raised
   * at sync). A collective takes one array of ports per rank.
   */
  enqueueNode(node: PreparedNode, inputs: (NativeTensor | null)[] | NativeTensor[][]): (NativeTensor | null)[] | (NativeTensor | null)[][];
  /** upload() on the queue: the bytes copied at once, the device tensor made and filled when the queue reaches it */
  enqueueUpload(dtype: string, shape: readonly number[], data: ArrayBufferView, gpu: GpuDevice | null): NativeTensor;
  /**
   * A run recorded once (native/src/engine/program.h): each step a node from prepareNode() or an
   * NCCL collective from NcclComm.step(), with the slot indices it reads and writes (per rank,
   * per port; -1: absent); the weights as fixed slots; the slots of the run's inputs and outputs.
   * Checked now (a slot read before it is written, or written twice, names the step).
   */
  recordProgram(
    steps: readonly ({ node: PreparedNode; in: number[][]; out: number[][] } | { collective: NcclStep; in: number[][]; out: number[][] })[],
    slots: number,
    fixed: readonly [number, NativeTensor][],
    inputs: readonly number[],
    outputs: readonly number[],
  ): RecordedProgram;
  /**
   * one run of a recorded program: every step enqueued in one call on fresh slots, `inputs` in
   * theirs (taken: their handles freed); the outputs, queued. `dryRunOn`: a dry run on that
   * device, no kernel launched, every block taken as a run takes it (a session's warm-up)
   */
  replay(program: RecordedProgram, inputs: readonly NativeTensor[], dryRunOn?: GpuDevice | null): NativeTensor[];
  /** lets go of a program's steps and of the weights it holds */
  releaseProgram(program: RecordedProgram): void;
  /** queued nodes fill their outputs with empty placeholders instead of running: for timing the host side of a run alone, never for values anyone reads */
  setStubKernels(on: boolean): void;
  /** waits for everything queued (and the GPU's stream); rejects with the first queued node's error, naming it */
  sync(gpu: GpuDevice | null): Promise<void>;
  /** the device's counters since it opened (native/src/host/memory.h) */
  counters(gpu: GpuDevice | null): DeviceCounters;
  /** one device allocation carved into blocks of these sizes, kept in the device's pool (a session's memory plan) */
  reservePool(blockBytes: readonly number[], gpu: GpuDevice | null): void;
  /** the device pool's unused blocks back to the device */
  trimPool(gpu: GpuDevice | null): void;
  /**
   * A host weight read only by exact GEMMs (linear's w: 'linear'; fp8LinearPtpc's qW: 'fp8')
   * packed into the exact GEMM's panels, then its own bytes freed: the tensor stays a valid
   * handle for those GEMMs (same results), other ops and the 'blas' mode refuse it, and
   * download rebuilds a bf16 one from the panel. No run may be reading it meanwhile.
   */
  packForGemm(t: NativeTensor, kind: 'linear' | 'fp8'): Promise<{ panelBytes: number; releasedBytes: number }>;
  /** ops with a host kernel, and with a GPU launcher */
  kernels(): { perRank: string[]; collective: string[]; gpuPerRank: string[]; gpuCollective: string[] };
  openGpu(kind: GpuDeviceKind, options?: { device?: number; codeObjects?: string; kernels?: KernelMode }): GpuDevice;
  stats(): AllocatorStats;
  setMemoryLimit(bytes: number): void;
  info(): { isa: string; threads: number; napiVersion: number };
  blas(): { path: string; coretype: string };
  gpuRuntime(kind: GpuKind): GpuRuntimeProbe;
  /**
   * Reads a batch of weights from checkpoint files (native/src/loader): positioned reads on the
   * addon's threads, NaN/Inf counted, copies to `gpu` (or the host device) overlapping the reads,
   * off the JavaScript thread. A file's `identity` ("dev:ino") is checked when it is opened. An
   * error names the file and the tensor and leaves nothing allocated.
   */
  loadWeights(
    files: readonly (string | { path: string; identity?: string })[],
    requests: readonly WeightLoadRequest[],
    gpu: GpuDevice | null,
    options?: { chunkBytes?: number; lanes?: number },
  ): Promise<WeightLoadResult>;
  /**
   * A GPU kernel no op launches yet, run once for its tests (native/src/addon/js_test_kernels.h):
   * 'canonicalSumSqBf16' gives f32 [rows], each row's sum of squares of x (bf16 [rows, n] on
   * gpu) in the canonical order, computed in blocks of blockThreads threads (64, 128, 192 or
   * 256; 1-4 rows each), `blocks` of them (default one per row group). Synchronous.
   */
  testKernel(name: 'canonicalSumSqBf16', gpu: GpuDevice, x: NativeTensor, options: { blockThreads: number; blocks?: number }): NativeTensor;
  /**
   * `linear` of x (bf16 [rows, inF] on gpu) and w (bf16 [outF, inF]) by the tiled exact GEMM in
   * blocks of blockThreads threads (64-256; default: the launcher's), `blocks` of them (default:
   * one per tile), or by the one-thread-per-output baseline (kernel 'oneThread'). Synchronous.
   */
  testKernel(
    name: 'gemmLinearBf16',
    gpu: GpuDevice,
    x: NativeTensor,
    options: { w: NativeTensor; blockThreads?: number; blocks?: number; kernel?: 'tiled' | 'oneThread' },
  ): NativeTensor;
  /** the grouped exact GEMM: w [groups * outF, inF], rowGroup i32 [x's rows], rows i32 [1] (the row count the kernel reads); y bf16 [x's rows, outF], rows past the count zero */
  testKernel(
    name: 'gemmGroupedBf16',
    gpu: GpuDevice,
    x: NativeTensor,
    options: { w: NativeTensor; outF: number; rowGroup: NativeTensor; rows: NativeTensor; blockThreads?: number; blocks?: number },
  ): NativeTensor;
  /** std::_Exit(code): ends the process at once, without exit handlers (a job with a lost peer) */
  exitNow(code: number): never;
}

/** Where the addon is: HCSP_NATIVE_ADDON, else the cmake-js build folder of native/. */
export function addonPath(): string {
  return builtAddonPath('HCSP_NATIVE_ADDON', 'hcsp_native.node');
}

/** The addon cannot be used here: missing, or it fails to load (its message names the path and the build command). */
export class NativeAddonUnavailableError extends BackendUnavailableError {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super('rocm', `native addon unavailable at ${path}: ${reason}. Build it with \`${BUILD_COMMAND}\` (or set HCSP_NATIVE_ADDON to a built hcsp_native.node)`);
    this.name = 'NativeAddonUnavailableError';
  }
}

/**
 * The addon, probed first in a child process (addonLoading.ts). The child prints only the
 * error's message: node's own report of an uncaught error starts with the source line that
 * threw, not with why (a bad ELF header, a missing symbol).
 */
export function loadNativeAddon(): NativeAddon {
  const path = addonPath();
  const script = `try { const a = require(${JSON.stringify(path)}); process.stdout.write(JSON.stringify(a.info())); } catch (e) { process.stderr.write(String(e?.message ?? e)); process.exit(1); }`;
  return loadProbedAddon<NativeAddon>(path, script, (p, reason) => new NativeAddonUnavailableError(p, reason));
}
