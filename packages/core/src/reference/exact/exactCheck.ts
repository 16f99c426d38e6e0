// Helpers for checking a rounded run against the float64 evaluation: the unit roundoffs of the
// formats the reference rounds to, the widened values of a tensor, and an elementwise bound
// check that reports the worst element (used by the exact kernels' tests).
import { bf16ToF32 } from '../../numerics/bf16.ts';
import { fp8FormatOfDtype, fp8ToF32 } from '../../numerics/fp8.ts';
import { getOpDef } from '../../graph/ops/registry.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { cpuCollectiveKernel, cpuKernel } from '../kernels/index.ts';
import { widenTensor } from './evaluateExact.ts';
import type { ExactTensor } from './exactTensor.ts';
import { exactCollectiveKernel, exactKernel } from './index.ts';

/** fp32's unit roundoff: |fl(v) - v| <= U32 |v| for round to nearest (24-bit significand). */
export const U32 = 2 ** -24;
/** bf16's unit roundoff: |bf(v) - v| <= UBF |v| (8-bit significand: half an ulp is at most 2^-8 of the value). */
export const UBF = 2 ** -8;
/** fp8 E4M3's unit roundoff on normal values (4-bit significand). */
export const UFP8 = 2 ** -4;

/** gamma_n = n u / (1 - n u): the bound on the relative error of a recursive sum of n + 1 terms in fp32. */
export function gamma32(n: number): number {
  return (n * U32) / (1 - n * U32);
}

/** A tensor's values as doubles (bf16, fp32, fp8 decoded exactly; i32 as numbers). */
export function valuesOf(t: Tensor | ExactTensor): Float64Array {
  const d = t.data;
  if (d instanceof Float64Array) return d;
  if (t.dtype === 'bf16') return Float64Array.from(d as Uint16Array, (b) => bf16ToF32(b));
  if (t.dtype === 'fp8e4m3fn' || t.dtype === 'fp8e4m3fnuz') {
    const f = fp8FormatOfDtype(t.dtype);
    return Float64Array.from(d as Uint8Array, (b) => fp8ToF32(b, f));
  }
  return Float64Array.from(d as ArrayLike<number>);
}

export interface BoundReport {
  count: number;
  /** elements with |ref - exact| > tol */
  exceeded: number;
  /** max over elements of |ref - exact| / tol (0 / 0 counts as 0) */
  worstRatio: number;
  worstIndex: number;
  /** one line naming the worst element, for failure messages */
  describe: string;
}

/**
 * |ref[i] - exact[i]| <= tol(i) for every element (NaN equals NaN; an infinity only itself).
 */
export function checkBound(ref: ArrayLike<number>, exact: ArrayLike<number>, tol: (i: number) => number, what = ''): BoundReport {
  if (ref.length !== exact.length) throw new Error(`checkBound ${what}: ${ref.length} reference values, ${exact.length} exact ones`);
  let exceeded = 0;
  let worstRatio = 0;
  let worstIndex = -1;
  for (let i = 0; i < ref.length; i++) {
    const a = ref[i];
    const e = exact[i];
    if ((a !== a && e !== e) || a === e) continue;
    const d = Math.abs(a - e);
    const t = tol(i);
    const ratio = d === 0 ? 0 : t > 0 ? d / t : Infinity;
    if (!(d <= t)) exceeded++;
    if (!(ratio <= worstRatio)) {
      worstRatio = ratio;
      worstIndex = i;
    }
  }
  const describe =
    worstIndex < 0
      ? `${what}: all ${ref.length} equal`
      : `${what}: worst at ${worstIndex}: ref ${ref[worstIndex]} exact ${exact[worstIndex]} |diff| ${Math.abs(ref[worstIndex] - exact[worstIndex])} tol ${tol(worstIndex)} (ratio ${worstRatio.toFixed(3)}), ${exceeded}/${ref.length} beyond`;
  return { count: ref.length, exceeded, worstRatio, worstIndex, describe };
}

/** An op on given inputs (a collective: rank-major ports), as test/cases/opCases.ts describes it. */
export interface OpOnInputs {
  op: string;
  tp: number;
  inputs: (Tensor | null)[];
  attrs: Record<string, unknown>;
}

/**
 * The CPU reference's and the exact kernel's outputs on the same inputs (widened for the exact
 * side), port by port; a collective's outputs rank-major, as its inputs.
 */
export function runBothSides(c: OpOnInputs): { ref: (Tensor | null)[]; exact: (ExactTensor | null)[]; inputs: (ExactTensor | null)[] } {
  const def = getOpDef(c.op);
  const inputs = c.inputs.map((t) => (t ? widenTensor(t) : null));
  if (!def.collective) {
    return { ref: cpuKernel(c.op)(c.inputs, c.attrs), exact: exactKernel(c.op)(inputs, c.attrs), inputs };
  }
  const ports = def.inputs.length;
  const perRank = <T>(xs: T[]): T[][] => Array.from({ length: c.tp }, (_, r) => xs.slice(r * ports, (r + 1) * ports));
  const attrs = { ...c.attrs, tp: c.tp };
  const ref = cpuCollectiveKernel(c.op)(perRank(c.inputs) as Tensor[][], attrs).flat();
  const exact = exactCollectiveKernel(c.op)(perRank(inputs) as ExactTensor[][], attrs).flat();
  return { ref, exact, inputs };
}
