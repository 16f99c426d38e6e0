import { bf16ToF32, f32ToBf16, roundBf16 } from '../numerics/bf16.ts';
import { canonicalSumF32 } from '../numerics/canonicalSum.ts';
import { rsqrtF32, sigmoidF32 } from '../numerics/fp32Math.ts';
import type { HcContract } from './hcContract.ts';

const fr = Math.fround;

/**
 * inj_s = 2 sigmoid(bf(raw_s / n)); 'hf' stores the sigmoid as bf16 (torch.sigmoid of a
 * bf16 tensor) before the doubling, which is exact.
 */
export function injectScale(rawBits: number, n: number, contract: HcContract): number {
  const logit = roundBf16(fr(bf16ToF32(rawBits) / n));
  const sig = sigmoidF32(logit);
  return fr(2 * (contract === 'atom' ? sig : roundBf16(sig)));
}

/** X_s = bf(X_s + y * inj_s) for one row in place ('hf' stores the product y * inj as bf16 first). */
export function combineRow(
  x: Uint16Array,
  xOff: number,
  y: Uint16Array,
  yOff: number,
  raw: Uint16Array,
  rawOff: number,
  n: number,
  h: number,
  contract: HcContract,
): void {
  for (let s = 0; s < n; s++) {
    const inj = injectScale(raw[rawOff + s], n, contract);
    const base = xOff + s * h;
    for (let j = 0; j < h; j++) {
      const prod = fr(bf16ToF32(y[yOff + j]) * inj);
      const p = contract === 'atom' ? prod : roundBf16(prod);
      x[base + j] = f32ToBf16(fr(bf16ToF32(x[base + j]) + p));
    }
  }
}

export interface CombineNormResult {
  x: Uint16Array;
  normed: Uint16Array;
}

/**
 * Combine-norm of model.md, per row and stream: the pending combine (when blockOut and raw
 * are given), then the grouped RMS norm with weight (1 + w), the same under both contracts
 * (HF's Qwen4ExpTextRMSNorm also computes in fp32 and rounds once):
 *   sumsq = sum_j X[j]^2 in fp32 in canonical reduction order v1 (numerics/canonicalSum.ts:
 *   64 lanes of 8-term chunks, then the xor butterfly; bf16 squares are exact, so each add
 *   is one rounding), rstd = 1/sqrt(sumsq/H + eps)
 *   normed = bf(fl(fl(X * rstd) * fl(1 + w)))
 * Zero rows stay zero: the eps keeps rstd finite and 0 * rstd = 0.
 */
export function combineNorm(
  xIn: Uint16Array,
  blockOut: Uint16Array | null,
  raw: Uint16Array | null,
  normWeight: Uint16Array,
  rows: number,
  h: number,
  n: number,
  eps: number,
  contract: HcContract,
): CombineNormResult {
  const width = n * h;
  if (xIn.length !== rows * width) throw new Error(`hcCombineNorm: x has ${xIn.length} values, expected ${rows}x${width}`);
  if ((blockOut === null) !== (raw === null)) throw new Error('hcCombineNorm: blockOut and raw come together (the pending combine) or not at all');
  if (blockOut && blockOut.length !== rows * h) throw new Error(`hcCombineNorm: blockOut has ${blockOut.length} values, expected ${rows}x${h}`);
  if (raw && raw.length !== rows * n) throw new Error(`hcCombineNorm: raw has ${raw.length} values, expected ${rows}x${n}`);
  if (normWeight.length !== width) throw new Error(`hcCombineNorm: norm weight has ${normWeight.length} values, expected ${width}`);
  const x = xIn.slice();
  const normed = new Uint16Array(x.length);
  const epsF = fr(eps);
  const scale = new Float32Array(width);
  for (let i = 0; i < width; i++) scale[i] = fr(1 + bf16ToF32(normWeight[i]));
  for (let t = 0; t < rows; t++) {
    if (blockOut && raw) combineRow(x, t * width, blockOut, t * h, raw, t * n, n, h, contract);
    for (let s = 0; s < n; s++) {
      const base = t * width + s * h;
      const sumsq = canonicalSumF32(h, (j) => {
        const v = bf16ToF32(x[base + j]);
        return v * v;
      });
      const rstd = rsqrtF32(fr(fr(sumsq / h) + epsF));
      for (let j = 0; j < h; j++) normed[base + j] = f32ToBf16(fr(fr(bf16ToF32(x[base + j]) * rstd) * scale[s * h + j]));
    }
  }
  return { x, normed };
}

/** The unfused combine X_s = bf(X_s + y * 2 sigmoid(bf(raw_s / n))) over all rows. */
export function combine(xIn: Uint16Array, blockOut: Uint16Array, raw: Uint16Array, rows: number, h: number, n: number, contract: HcContract): Uint16Array {
  const width = n * h;
  if (xIn.length !== rows * width) throw new Error(`hcCombine: x has ${xIn.length} values, expected ${rows}x${width}`);
  if (blockOut.length !== rows * h) throw new Error(`hcCombine: blockOut has ${blockOut.length} values, expected ${rows}x${h}`);
  if (raw.length !== rows * n) throw new Error(`hcCombine: raw has ${raw.length} values, expected ${rows}x${n}`);
  const x = xIn.slice();
  for (let t = 0; t < rows; t++) combineRow(x, t * width, blockOut, t * h, raw, t * n, n, h, contract);
  return x;
}
