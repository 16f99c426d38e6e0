// The ceilings the suite's cases are set against: this machine's (numpy, copies; the native
// host device's GEMMs without numpy), and a GPU's own.
import type { RocmBackend } from '@hcsp/backend-rocm';
import { formatBytes } from '@hcsp/core';
import { measureCeilings } from './ceilings.ts';
import { timeDeviceKernel, type KernelDevice } from './deviceKernel.ts';
import type { GemmShape } from './graphCost.ts';
import type { SuiteOptions } from './suiteOptions.ts';
import { tiledNormal } from './tiledWeights.ts';
import { median } from './timing.ts';

export interface SuiteCeilings {
  /** the matrix rate the cases are set against, GFLOP/s, or null */
  matrixGflops: number | null;
  /** what measured it (which GEMM, which shape), or why there is none */
  matrixNote: string;
  /** every GEMM measured: the ceiling is the best */
  gemms: { what: string; label: string; shape: GemmShape; gflops: number }[];
  bandwidthGBps: number | null;
  bandwidthNote: string;
  copies: { what: string; gbps: number }[];
}

/** GFLOP/s of the device's linear kernel at [n, n] x [n, n] (bf16 in, fp32 accumulation), median of reps */
export async function deviceGemmGflops(d: KernelDevice, n: number, reps: number): Promise<number> {
  const x = { shape: [n, n], data: tiledNormal(n * n, 11) };
  const w = { shape: [n, n], data: tiledNormal(n * n, 12) };
  return (2 * n * n * n) / median(await timeDeviceKernel(d, 'linear', [x, w], {}, reps)) / 1e9;
}

/** GB/s (read + written) of the device's trim of a bf16 tensor of `bytes` to all its rows: a copy, median of reps */
export async function deviceCopyGBps(d: KernelDevice, bytes: number, reps: number): Promise<number> {
  const cols = 4096;
  const rows = Math.max(1, Math.floor(bytes / (2 * cols)));
  const x = { shape: [rows, cols], data: new Uint16Array(rows * cols) };
  return (2 * rows * cols * 2) / median(await timeDeviceKernel(d, 'trim', [x], { rows }, reps)) / 1e9;
}

function best<T extends { gbps?: number; gflops?: number }>(xs: T[], key: 'gbps' | 'gflops'): T | null {
  return xs.reduce<T | null>((a, b) => (a === null || (b[key] ?? 0) > (a[key] ?? 0) ? b : a), null);
}

/**
 * This machine's ceilings: numpy fp32 GEMM at a square n^3 and at the HC mix's shapes, and the
 * copy bandwidth (Node, numpy one and two threads; benchHost's measureCeilings). Without numpy,
 * the matrix rate is the best GEMM of the native host device (exact or OpenBLAS kernel), when
 * the addon loads; else none.
 */
export async function machineCeilings(opts: SuiteOptions, say: (line: string) => void): Promise<SuiteCeilings> {
  const hc = opts.hcConfig;
  const width = hc.hc.count * hc.hiddenSize;
  const mid = opts.tokens.find((t) => t >= 4096) ?? opts.tokens.at(-1)!;
  const n = opts.ceilingGemm;
  const shapes: GemmShape[] = [
    { T: n, K: n, O: n },
    { T: mid, K: width, O: hc.hc.lowRank + hc.hc.count },
    { T: mid, K: hc.hc.lowRank, O: width },
  ];
  say(`ceilings: numpy fp32 GEMM at ${shapes.map((s) => `${s.T}x${s.K}x${s.O}`).join(', ')}; copy bandwidth (${formatBytes(opts.copyBytes)})`);
  const c = measureCeilings(shapes, 3, opts.copyBytes);
  const gemms: SuiteCeilings['gemms'] = [];
  for (const s of shapes) {
    const sec = c.gemmSeconds[`${s.T}x${s.K}x${s.O}`];
    if (sec !== undefined) gemms.push({ what: c.gemmNote, label: 'numpy', shape: s, gflops: (2 * s.T * s.K * s.O) / sec / 1e9 });
  }
  let matrixNote: string;
  if (gemms.length === 0) {
    // numpy missing: the best backend GEMM
    say(`ceilings: ${c.gemmNote}; the native host device's GEMMs instead`);
    try {
      const { loadNativeAddon } = await import('@hcsp/backend-rocm');
      const addon = loadNativeAddon();
      for (const mode of ['exact', 'blas'] as const) {
        try {
          gemms.push({
            what: `rocm host device, ${mode} linear kernel (bf16 in, fp32 accumulation), median of 3`,
            label: `rocm host ${mode}`,
            shape: shapes[0],
            gflops: await deviceGemmGflops({ addon, gpu: null, mode }, n, 3),
          });
        } catch (e) {
          say(`ceilings: rocm host ${mode} GEMM failed: ${(e as Error).message}`);
        }
      }
    } catch (e) {
      say(`ceilings: no native addon either (${(e as Error).message})`);
    }
    matrixNote = gemms.length
      ? `numpy unavailable (${c.gemmNote.replace(/^unavailable: /, '')}): the best backend GEMM`
      : `none: ${c.gemmNote}, and the native addon does not load`;
  } else {
    matrixNote = 'numpy';
  }
  const top = best(gemms, 'gflops');
  return {
    matrixGflops: top?.gflops ?? null,
    matrixNote: top
      ? `${top.what} at ${top.shape.T}x${top.shape.K}x${top.shape.O} (the best of ${gemms.length} measured${matrixNote === 'numpy' ? '' : `; ${matrixNote}`})`
      : matrixNote,
    gemms,
    bandwidthGBps: c.bandwidthGBps,
    bandwidthNote: c.bandwidthNote,
    copies: c.copies,
  };
}

/** A GPU's own ceilings: its vendor GEMM at n^3 and a device copy (trim) of `bytes`. */
export async function gpuCeilings(backend: RocmBackend, n: number, bytes: number): Promise<SuiteCeilings> {
  const d: KernelDevice = { addon: backend.addon, gpu: backend.gpu, mode: backend.gemm };
  const gemms: SuiteCeilings['gemms'] = [];
  const copies: SuiteCeilings['copies'] = [];
  const notes: string[] = [];
  try {
    gemms.push({
      what: `${backend.describe()}: ${backend.gemm} linear kernel (bf16 in, fp32 accumulation), median of 5`,
      label: backend.gemm,
      shape: { T: n, K: n, O: n },
      gflops: await deviceGemmGflops(d, n, 5),
    });
  } catch (e) {
    notes.push(`GEMM: ${(e as Error).message}`);
  }
  try {
    copies.push({ what: `device trim (a copy) of a ${formatBytes(bytes)} bf16 tensor, median of 5`, gbps: await deviceCopyGBps(d, bytes, 5) });
  } catch (e) {
    notes.push(`copy: ${(e as Error).message}`);
  }
  return {
    matrixGflops: gemms[0]?.gflops ?? null,
    matrixNote: gemms[0] ? `${gemms[0].what} at ${n}x${n}x${n}` : `not measured (${notes.join('; ')})`,
    gemms,
    bandwidthGBps: copies[0]?.gbps ?? null,
    bandwidthNote: copies[0] ? `${copies[0].what}; bytes read + bytes written per second` : `not measured (${notes.join('; ')})`,
    copies,
  };
}
