// The cost model's test on a GPU (issue 27): the GPU check's measured kernel times next to what
// `hcsp model --engine hcsp` predicts for the same kernel on that GPU, and their ratio; and a
// device description (`hcsp model --device FILE.json`) made from the ceilings the check
// measured. gpuCheck.ts wires both in; gpuCheckModel.test.ts holds them to hand-computed cases.
//
// A kernel is described by what it ran: an op of the decoder graph at T rows (priced as that
// op's first node, or its first in `layer`, in the graph the cost model builds at T rows, tp 1, SP off, one sequence:
// the GPU check's Flash-Next shapes), a GEMM (m x k by k x n; the vendor library's, or the
// exact kernel's fp32 FMAs), or a device copy (bytes read + written).
import { renameSync, writeFileSync } from 'node:fs';
import { FLASH_NEXT, type ModelConfig } from '@hcsp/core';
import {
  buildCostGraph,
  type Device,
  type DeviceFigureName,
  type KernelsMode,
  nodeSeconds,
  type OpCost,
  priceGraph,
  type PricedGraph,
} from '@hcsp/core/cost-model';

export type KernelShape =
  | { op: string; tokens: number; kernels: KernelsMode; layer?: number }
  | { gemm: [m: number, k: number, n: number]; vendor: boolean }
  | { copyBytes: number };

export interface MeasuredKernel {
  name: string;
  /** seconds per launch as the check timed it */
  seconds: number;
  shape: KernelShape;
}

export interface ModelRow {
  kernel: string;
  measured: number;
  predicted: number;
  /** measured / predicted: above 1, the GPU was slower than the model says */
  ratio: number;
}

const PEAK = { hc: 1, other: 1 };
const ZERO: OpCost = { matrixFlops: 0, fp8Flops: 0, vectorFlops: 0, actBytes: 0, weightBytes: 0, kernels: 1, busBytes: 0 };

/** One kernel's predicted seconds on `device`. */
export function predictKernel(shape: KernelShape, device: Device, config: ModelConfig = FLASH_NEXT, graphs: Map<string, PricedGraph> = new Map()): number {
  if ('copyBytes' in shape) return nodeSeconds({ ...ZERO, actBytes: shape.copyBytes }, 'other', device, PEAK, 1).seconds;
  if ('gemm' in shape) {
    const [m, k, n] = shape.gemm;
    const flops = 2 * m * k * n;
    const actBytes = (m * k + m * n) * 2;
    const weightBytes = k * n * 2;
    // the exact GEMM (gemm.cu) sums in k order with fp32 FMAs on the vector units
    const c: OpCost = shape.vendor
      ? { ...ZERO, matrixFlops: flops, actBytes, weightBytes, gemms: [{ rows: [m], n, flops, fp8: false }] }
      : { ...ZERO, vectorFlops: flops, actBytes, weightBytes };
    return nodeSeconds(c, 'gemm', device, PEAK, 1).seconds;
  }
  const key = `${config.name}/${shape.tokens}/${shape.kernels}`;
  let priced = graphs.get(key);
  if (!priced) {
    const { graph } = buildCostGraph(config, shape.tokens, 1, 'off', false);
    priced = priceGraph(graph, { config, device, efficiency: PEAK, requests: 1, requestTokens: shape.tokens, engine: 'hcsp', kernels: shape.kernels });
    graphs.set(key, priced);
  }
  const node = priced.nodes.find((x) => x.op === shape.op && (shape.layer === undefined || x.layer === shape.layer));
  if (!node)
    throw new Error(`gpu-check model: op '${shape.op}' is not in the ${config.name} graph${shape.layer === undefined ? '' : ` at layer ${shape.layer}`}`);
  return node.seconds;
}

/** The table's rows: each measured kernel next to its prediction on `device`. */
export function measuredVsPredicted(kernels: readonly MeasuredKernel[], device: Device, config: ModelConfig = FLASH_NEXT): ModelRow[] {
  const graphs = new Map<string, PricedGraph>();
  return kernels.map((k) => {
    const predicted = predictKernel(k.shape, device, config, graphs);
    return { kernel: k.name, measured: k.seconds, predicted, ratio: k.seconds / predicted };
  });
}

const us = (s: number) => (s * 1e6).toPrecision(4);

/** The table as the check prints it. */
export function formatModelRows(rows: readonly ModelRow[], device: Device): string[] {
  const table = [
    ['kernel', 'measured us', 'predicted us', 'measured/predicted'],
    ...rows.map((r) => [r.kernel, us(r.measured), us(r.predicted), r.ratio.toFixed(2)]),
  ];
  const widths = table[0].map((_, c) => Math.max(...table.map((r) => r[c].length)));
  return [
    `cost model (--engine hcsp) on ${device.name} (${device.origin}): measured vs predicted per kernel`,
    ...table.map((r) => `  ${r.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join('  ')}`),
  ];
}

/** The ceilings a GPU check measures (absent: not measured). */
export interface MeasuredCeilings {
  /** the device copy: bytes read + written per second, GB/s */
  copyGBps?: number;
  /** the vendor GEMM's best bf16 rate, TFLOP/s */
  matrixBf16Tflops?: number;
  matrixFp8Tflops?: number;
  /** one kernel launch, us */
  kernelLaunchUs?: number;
  /** one host sync, us */
  hostSyncUs?: number;
}

/**
 * A device description for `hcsp model --device FILE.json`: `base`'s figures with the measured
 * ones in their place, each sourced to the check. The measured matrix rate is the library's
 * achieved rate, so gemmFraction becomes 1 with it (the fraction is in the rate).
 */
export function measuredDeviceJson(base: Device, ceilings: MeasuredCeilings, what: string): Record<string, unknown> {
  const figures: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(base.figures))
    if (f) figures[name] = { value: f.value, source: f.source, published: f.published, ...(f.range ? { range: f.range } : {}) };
  const measured = (name: DeviceFigureName, value: number | undefined, how: string) => {
    if (value === undefined) return;
    if (!(Number.isFinite(value) && value > 0)) throw new Error(`gpu-check model: measured ${name} must be a positive number, got ${value}`);
    figures[name] = { value, source: `measured by ${what}: ${how}`, published: false };
  };
  measured('hbmTBps', ceilings.copyGBps === undefined ? undefined : ceilings.copyGBps / 1000, 'the device copy, bytes read + written per second');
  measured('matrixBf16Tflops', ceilings.matrixBf16Tflops, "the vendor GEMM's best bf16 TFLOP/s");
  measured('matrixFp8Tflops', ceilings.matrixFp8Tflops, "the vendor GEMM's best fp8 TFLOP/s");
  measured('kernelLaunchUs', ceilings.kernelLaunchUs, 'one launch of a chained run');
  measured('hostSyncUs', ceilings.hostSyncUs, 'one host sync');
  if (ceilings.matrixBf16Tflops !== undefined)
    figures.gemmFraction = { value: 1, source: `measured by ${what}: the matrix rate above is the library's achieved rate`, published: false };
  return { name: `${base.name}-measured`, description: `${base.description} (figures measured by ${what} where it could)`, topology: base.topology, figures };
}

/** Writes the description whole or not at all (a temporary file renamed into place). */
export function writeMeasuredDevice(path: string, json: Record<string, unknown>): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(json, null, 2)}\n`);
  renameSync(tmp, path);
}
