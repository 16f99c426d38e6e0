// The GPU check's row-count-invariance step (issue 24 item 4): on one GPU, one prefill at tp 2
// (both ranks on the device, as the check's other tp runs) with SP on and with SP off, and the
// final outputs (h, the MTP state, logits, the greedy tokens, the MTP logits) compared bit for bit,
// once per GEMM mode. With SP on each rank's GEMMs before the HC gather see T/2 rows, with SP off
// all T: gemm 'vendor-invariant' (one algorithm per (N, K) for every row count) must give the same
// bits both ways, and does pass or fail the step; 'vendor' (the library's choice per M) is
// reported, not required. The emulated device has only the exact GEMM (row-invariant by
// construction): there the step runs that, required identical. gpuCheck.ts wires it in;
// gpuCheckInvariant.test.ts runs it on the emulated device at small shapes.
import { FLASH_NEXT, MODEL_SUB_LAYERS, preparePrefill, runOnce, SMALL, type ModelConfig, type SpMode, type Tensor } from '@hcsp/core';
import { createRocmBackend, type GemmMode, type KernelMode } from '@hcsp/backend-rocm';
import type { Verdict } from './gpuCheckVerdict.ts';

export interface InvariantStepOptions {
  config?: ModelConfig;
  tokens?: number;
  /** the decoder layers [from, to) (default: Flash-Next's layers 2-3 on a GPU, the whole small model on the emulated device) */
  layers?: [number, number];
  kernels?: KernelMode;
}

type Outputs = Record<string, Buffer>;

const bitsOf = (t: Tensor): Buffer => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

/** the outputs (by name) whose bits differ, or that one side lacks */
export function differingOutputs(a: Outputs, b: Outputs): string[] {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return names.filter((n) => !a[n] || !b[n] || !a[n].equals(b[n]));
}

/** the step's line for one GEMM mode: required modes fail when SP on and off differ */
export function invariantVerdict(gemm: GemmMode, required: boolean, differing: string[], compared: number, seconds: number): Verdict {
  const same = differing.length === 0;
  const pass = same || !required;
  const what = same ? `bit-identical (${compared} outputs)` : `differ in ${differing.join(', ')}`;
  const verdict = required ? (same ? 'pass' : 'FAIL (must be bit-identical)') : 'reported, not required';
  return { line: `  gemm ${gemm.padEnd(17)} SP on vs off: ${what}, ${seconds.toFixed(1)} s: ${verdict}`, pass };
}

/** the GEMM modes the step runs on a device, each with whether SP on/off must agree bit for bit */
export function invariantModes(device: 'hip' | 'cuda' | 'emulated'): { gemm: GemmMode; required: boolean }[] {
  return device === 'emulated'
    ? [{ gemm: 'exact', required: true }]
    : [
        { gemm: 'vendor-invariant', required: true },
        { gemm: 'vendor', required: false },
      ];
}

/** SP on vs off at tp 2 on one device, per GEMM mode: a header line, then one verdict per mode */
export async function spInvariantStep(device: 'hip' | 'cuda' | 'emulated', options: InvariantStepOptions = {}): Promise<Verdict[]> {
  const gpu = device !== 'emulated';
  const config = options.config ?? (gpu ? FLASH_NEXT : SMALL);
  const tokens = options.tokens ?? (gpu ? 4096 : 80);
  const layers = options.layers ?? (gpu ? ([2, 4] as [number, number]) : undefined);
  const prepared = (sp: SpMode) =>
    preparePrefill({ config, tokens, tp: 2, sp, reduce: 'ring', seed: 7, subLayers: MODEL_SUB_LAYERS, ...(layers ? { layers } : {}) });
  const span = layers ? `layers ${layers[0]}-${layers[1] - 1}` : 'all layers';
  const out: Verdict[] = [
    { line: `SP on vs off, tp 2 on one ${device} device: ${config.name} ${span}, T=${tokens}, final outputs compared bit for bit`, pass: true },
  ];
  for (const { gemm, required } of invariantModes(device)) {
    const t0 = performance.now();
    const backend = await createRocmBackend({ device, gemm, ...(options.kernels ? { kernels: options.kernels } : {}) });
    try {
      const run = async (sp: SpMode): Promise<Outputs> => {
        const p = prepared(sp);
        const r = await runOnce(backend, p.graph, p.feeds, p.weights);
        const o = p.outputs;
        const named: Record<string, string | null> = {
          h: o.h,
          mtpState: o.mtpState,
          logits: o.logits,
          nextTokens: o.nextTokens,
          mtpLogits: o.mtp?.logits ?? null,
        };
        return Object.fromEntries(Object.entries(named).flatMap(([k, id]) => (id === null ? [] : [[k, bitsOf(r.values.get(id)!)]])));
      };
      const on = await run('on');
      const off = await run('off');
      out.push(invariantVerdict(gemm, required, differingOutputs(on, off), Object.keys(on).length, (performance.now() - t0) / 1000));
    } finally {
      await backend.dispose();
    }
  }
  return out;
}
