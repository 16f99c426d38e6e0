// gpu-check's tiled exact GEMM step: at the HC mix's two GEMM shapes (Flash-Next, T = 4096:
// [4096, 10240] x [10240, 324] and [4096, 320] x [320, 10240]) the exact GEMM (`linear` in the
// 'exact' mode: kernels/gemm.cu's tiled kernel), the one-thread-per-output kernel it replaced and,
// on a GPU, the vendor GEMM, timed in the same run. The exact kernel must give the one-thread
// kernel's bits (both are the reference's order) and, on a GPU, reach the thresholds below.
import { FLASH_NEXT, Rng, type ModelConfig } from '@hcsp/core';
import type { GpuDevice, NativeAddon } from '@hcsp/backend-rocm';

/**
 * The thresholds, per shape. An exact GEMM sums each output in k order with fp32 FMAs on the
 * CUDA cores / SIMDs, where the vendor's bf16 GEMM runs on the tensor cores / matrix cores at
 * about 15x that peak (H200: 989 vs 67 TFLOP/s dense; MI300: 1307 vs 163), so a fraction of the
 * vendor's figure is the most it can reach: it must reach 2% of it (a fair share of the
 * fp32 peak), and 4x the one-thread kernel (which reads both operand rows from memory for
 * every output).
 */
export const EXACT_GEMM_THRESHOLDS = { ofVendor: 0.02, overOneThread: 4 } as const;

export type GemmKernel = 'exact' | 'oneThread' | 'vendor';
/** one GEMM of the shape, timed: seconds (the median of a few runs after a warm-up) and y's bf16 bits */
export type GemmRunner = (kernel: GemmKernel, rows: number, inF: number, outF: number) => Promise<{ seconds: number; bits: Uint16Array }>;

/** the HC mix's GEMMs at T rows: the streams [T, n*H] by the mix weight's r = lowRank + n rows, and the low rank back up to n*H */
export function hcMixGemmShapes(config: ModelConfig = FLASH_NEXT, rows = 4096): [number, number, number][] {
  const width = config.hc.count * config.hiddenSize;
  return [
    [rows, width, config.hc.lowRank + config.hc.count],
    [rows, config.hc.lowRank, width],
  ];
}

const tflops = (rows: number, inF: number, outF: number, seconds: number) => (2 * rows * inF * outF) / seconds / 1e12;
/** 3 significant digits (a CPU's GFLOP/s show), whole numbers from 100 */
const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v.toPrecision(3));
const sameBits = (a: Uint16Array, b: Uint16Array) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * The step: a table (one line per shape: each kernel's TFLOP/s, exact over vendor and over one
 * thread) and the failures (none: pass). `vendor`: whether the device has the vendor GEMM (not
 * the emulated device, whose figures are the CPU's: there the thresholds are not applied).
 */
export async function exactGemmStep(run: GemmRunner, shapes: [number, number, number][], vendor: boolean): Promise<{ lines: string[]; failures: string[] }> {
  const t = EXACT_GEMM_THRESHOLDS;
  const lines = [
    `tiled exact GEMM (${vendor ? `thresholds: >= ${t.ofVendor * 100}% of the vendor GEMM's TFLOP/s, >= ${t.overOneThread}x the one-thread kernel's, the one-thread kernel's bits` : "no vendor GEMM, no thresholds: the one-thread kernel's bits"}):`,
    '  shape (TFLOP/s)                exact  one-thread   vendor  of vendor  x one-thread',
  ];
  const failures: string[] = [];
  for (const [rows, inF, outF] of shapes) {
    const shape = `[${rows},${inF}] x [${inF},${outF}]`;
    const exact = await run('exact', rows, inF, outF);
    const oneThread = await run('oneThread', rows, inF, outF);
    const vendorRun = vendor ? await run('vendor', rows, inF, outF) : null;
    const e = tflops(rows, inF, outF, exact.seconds);
    const o = tflops(rows, inF, outF, oneThread.seconds);
    const v = vendorRun ? tflops(rows, inF, outF, vendorRun.seconds) : null;
    const bad: string[] = [];
    if (!sameBits(exact.bits, oneThread.bits)) bad.push("its bits differ from the one-thread kernel's");
    if (v !== null && e < t.ofVendor * v) bad.push(`${fmt(e)} TFLOP/s is under ${t.ofVendor * 100}% of the vendor's ${fmt(v)}`);
    if (vendor && e < t.overOneThread * o) bad.push(`${fmt(e)} TFLOP/s is under ${t.overOneThread}x the one-thread kernel's ${fmt(o)}`);
    for (const b of bad) failures.push(`tiled exact GEMM ${shape}: ${b}`);
    lines.push(
      `  ${shape.padEnd(28)}${fmt(e).padStart(8)}${fmt(o).padStart(12)}${(v === null ? '-' : fmt(v)).padStart(9)}${(v === null ? '-' : `${((e / v) * 100).toFixed(1)}%`).padStart(11)}${`${(e / o).toFixed(1)}x`.padStart(14)}  ${bad.length ? 'FAIL' : 'pass'}`,
    );
  }
  return { lines, failures };
}

/**
 * The runner on a device: x and w seeded (bf16, x ~ N(0, 1), w ~ N(0, 0.02)), `reps` timed runs
 * after one warm-up; 'exact' and 'vendor' through the `linear` op in that GEMM mode, 'oneThread'
 * through the addon's testKernel. Each call uploads its own operands and frees them.
 */
export function deviceGemmRunner(addon: NativeAddon, gpu: GpuDevice, reps = 3): GemmRunner {
  return async (kernel, rows, inF, outF) => {
    const rng = new Rng(rows + inF + outF);
    const x = addon.upload('bf16', [rows, inF], rng.fillBf16Normal(rows * inF, 1), gpu);
    const w = addon.upload('bf16', [outF, inF], rng.fillBf16Normal(outF * inF, 0.02), gpu);
    try {
      const times: number[] = [];
      let bits = new Uint16Array(0);
      for (let r = 0; r <= reps; r++) {
        const t0 = performance.now();
        const y =
          kernel === 'oneThread'
            ? addon.testKernel('gemmLinearBf16', gpu, x, { w, kernel: 'oneThread' })
            : (await addon.run('linear', [x, w], {}, kernel, gpu))[0]!;
        if (r > 0) times.push((performance.now() - t0) / 1000);
        if (r === reps) bits = new Uint16Array(addon.download(y));
        addon.free(y);
      }
      times.sort((a, b) => a - b);
      return { seconds: times[times.length >> 1]!, bits };
    } finally {
      addon.free(x);
      addon.free(w);
    }
  };
}
