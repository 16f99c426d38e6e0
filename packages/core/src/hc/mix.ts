import { bf16ToF32, f32ToBf16, roundBf16 } from '../numerics/bf16.ts';
import { sigmoidF32, siluF32 } from '../numerics/fp32Math.ts';
import type { HcContract } from './hcContract.ts';

const fr = Math.fround;

export interface ScaledSiluResult {
  gate: Uint16Array;
  /** inject logits d[:, r:r+n]; null when d has only the r gate columns (the mixer) */
  raw: Uint16Array | null;
}

/**
 * gate = bf(silu(bf(d[:, :r] / n))), raw = d[:, r:r+n]. The same under both contracts: the
 * HF reference also rounds d/n to bf16 and computes silu in fp32 with one rounding.
 */
export function scaledSilu(d: Uint16Array, rows: number, lowRank: number, n: number): ScaledSiluResult {
  const width = d.length / rows;
  if (!Number.isInteger(width) || (width !== lowRank + n && width !== lowRank)) {
    throw new Error(`hcScaledSilu: d rows must be ${lowRank + n} (mix) or ${lowRank} (mixer) wide, got ${d.length} values for ${rows} rows`);
  }
  const gate = new Uint16Array(rows * lowRank);
  const raw = width === lowRank ? null : new Uint16Array(rows * n);
  for (let t = 0; t < rows; t++) {
    for (let j = 0; j < lowRank; j++) {
      const scaled = roundBf16(fr(bf16ToF32(d[t * width + j]) / n));
      gate[t * lowRank + j] = f32ToBf16(siluF32(scaled));
    }
    if (raw) for (let s = 0; s < n; s++) raw[t * n + s] = d[t * width + lowRank + s];
  }
  return { gate, raw };
}

/**
 * Gated mean x = bf(sum_s sigmoid(up_s) * normed_s / n), s = 0..n-1 in order:
 * 'atom': acc = fl(acc + fl(sig * normed)) with the sigmoid in fp32, x = bf(fl(acc / n)).
 * 'hf':   torch.sigmoid and the product are bf16 tensors, p_s = bf(bf(sig) * normed); the
 *         .mean over streams accumulates them in fp32 and rounds once: x = bf(fl(acc / n))
 *         with acc = fl(acc + p_s). (CUDA's mean multiplies by fl(1/n): the same for n = 4.)
 */
export function gatedMean(up: Uint16Array, normed: Uint16Array, rows: number, h: number, n: number, contract: HcContract): Uint16Array {
  const width = n * h;
  if (up.length !== rows * width) throw new Error(`hcGatedMean: up has ${up.length} values, expected ${rows}x${width}`);
  if (normed.length !== rows * width) throw new Error(`hcGatedMean: normed has ${normed.length} values, expected ${rows}x${width}`);
  const x = new Uint16Array(rows * h);
  for (let t = 0; t < rows; t++) {
    for (let j = 0; j < h; j++) {
      let acc = 0;
      for (let s = 0; s < n; s++) {
        const i = t * width + s * h + j;
        const sig = sigmoidF32(bf16ToF32(up[i]));
        const v = bf16ToF32(normed[i]);
        acc = fr(acc + (contract === 'atom' ? fr(sig * v) : roundBf16(fr(roundBf16(sig) * v))));
      }
      x[t * h + j] = f32ToBf16(fr(acc / n));
    }
  }
  return x;
}
