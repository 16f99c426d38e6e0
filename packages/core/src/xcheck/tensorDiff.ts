// One named tensor of two runs compared (hcsp xcheck, the dev page): how many elements differ
// and by how much, and, given the float64 evaluation of the same graph, which side moved away
// from the exact value. Rows are aligned by their position among the T rows, so that a rank's
// shard (SP on) meets the same rows of a replicated value (SP off).
import { bf16ToF32 } from '../numerics/bf16.ts';
import { fp8ToF32 } from '../numerics/fp8.ts';
import { bf16UlpDistance } from '../numerics/ulp.ts';
import { bf16UlpAt } from '../numerics/rowScaledError.ts';
import { shapeStr, type Tensor } from '../tensor/tensor.ts';
import type { ExactTensor } from '../reference/exact/exactTensor.ts';

/** Rows of a value among the T rows: its first row's position (a rank's shard under SP starts at r*C). */
export interface AlignedTensor {
  tensor: Tensor;
  rowStart: number;
}

/** How far one side is from the float64 value. */
export interface ExactError {
  /** max |x - exact| */
  maxAbs: number;
  /** mean |x - exact| */
  meanAbs: number;
  /**
   * max |x - exact| in bf16 ulps of the row's largest |exact| (row-scaled, as TensorDiff.rowUlp:
   * elementwise, a value near zero would count the bf16 patterns to zero; 0.5 is a correctly
   * rounded row maximum)
   */
  maxUlp: number;
}

export interface TensorDiff {
  /** elements compared (the rows both sides hold) */
  count: number;
  /** elements whose bits differ (a NaN meeting a NaN of the same bits does not; see nonFinite) */
  differing: number;
  /**
   * elements that are NaN or +-Inf on side a, on side b (of the compared rows). No ulp figure
   * measures them (rowUlp leaves them out): every gate counts any of them as a difference,
   * on either side, even where both sides hold the same bits (overGate).
   */
  nonFinite: { a: number; b: number };
  /** (count - differing) / count */
  exactFraction: number;
  /** bf16 values: the largest and the mean ulp distance between the sides (null for other dtypes) */
  maxUlp: number | null;
  meanUlp: number | null;
  /** max |a - b| in bf16 ulps of the largest |b| of its row: the unit of a reordered sum */
  rowUlp: number | null;
  /** max |a - b| (Infinity where a NaN or an Inf differs) and max |a - b| / |b| (over finite |b| > 0) */
  maxAbs: number;
  maxRel: number;
  /** each side's own error against the float64 evaluation (when it is given) */
  exact: {
    a: ExactError;
    b: ExactError;
    /** differing elements where a (b) is the farther from the exact value */
    fartherA: number;
    fartherB: number;
    /** the side farther from the exact value on most differing elements ('tie' when as many; null when none differ) */
    attributed: 'a' | 'b' | 'tie' | null;
  } | null;
  /** the first differing element: its row (among the T rows) and column, and both values */
  first: { row: number; col: number; a: number; b: number } | null;
  /** differing elements per row bucket (at most `buckets` buckets over the compared rows, `bucketRows` rows each, from row `rowStart`) */
  rows: { rowStart: number; bucketRows: number; differing: number[]; maxUlp: number[] };
}

function valueAt(t: Tensor, i: number): number {
  switch (t.dtype) {
    case 'bf16':
      return bf16ToF32((t.data as Uint16Array)[i]);
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return fp8ToF32((t.data as Uint8Array)[i], t.dtype === 'fp8e4m3fn' ? 'e4m3fn' : 'e4m3fnuz');
    default:
      return (t.data as Float32Array | Int32Array)[i];
  }
}

/** the larger of m and |v|, a non-finite v left out */
function finiteMax(m: number, v: number): number {
  return Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m;
}

/** |x - exact|, Infinity when either is NaN */
function errorOf(x: number, exact: number): number {
  const e = Math.abs(x - exact);
  return Number.isNaN(e) ? Infinity : e;
}

function rowsOf(t: { shape: readonly number[] }): [number, number] {
  const rows = t.shape.length === 0 ? 1 : t.shape[0];
  const cols = t.shape.length <= 1 ? 1 : t.shape.slice(1).reduce((a, b) => a * b, 1);
  return [rows, cols];
}

export interface DiffOptions {
  /** the float64 evaluation of the value (of b's graph: its rows start where b's do) */
  exact?: { tensor: ExactTensor; rowStart: number } | null;
  /** row buckets for the heatmap (default 64) */
  buckets?: number;
}

/**
 * Compares `a` against `b` (the first SPEC's run) on the rows both hold. Shapes must agree
 * beyond the rows; dtypes must be equal. bf16 values get ulp figures; fp8 and integer values
 * are compared by their bits and values only.
 */
export function diffTensors(name: string, a: AlignedTensor, b: AlignedTensor, options: DiffOptions = {}): TensorDiff {
  const ta = a.tensor;
  const tb = b.tensor;
  if (ta.dtype !== tb.dtype) throw new Error(`${name}: dtypes differ: ${ta.dtype} against ${tb.dtype}`);
  const [ra, ca] = rowsOf(ta);
  const [rb, cb] = rowsOf(tb);
  if (ca !== cb || ta.shape.length !== tb.shape.length)
    throw new Error(`${name}: shapes differ beyond the rows: ${shapeStr(ta.shape)} against ${shapeStr(tb.shape)}`);
  const cols = ca;
  const start = Math.max(a.rowStart, b.rowStart);
  const end = Math.min(a.rowStart + ra, b.rowStart + rb);
  const rows = Math.max(0, end - start);
  const exact = options.exact ?? null;
  if (exact) {
    const [re, ce] = rowsOf(exact.tensor);
    if (ce !== cols || exact.rowStart > start || exact.rowStart + re < end) {
      throw new Error(
        `${name}: the float64 evaluation has shape ${shapeStr(exact.tensor.shape)} from row ${exact.rowStart}, the runs ${shapeStr(ta.shape)} from row ${a.rowStart}`,
      );
    }
  }
  const bf16 = ta.dtype === 'bf16';
  const isFloat = ta.dtype !== 'i32';
  const nBuckets = Math.max(1, Math.min(options.buckets ?? 64, rows));
  const bucketRows = Math.max(1, Math.ceil(rows / nBuckets));
  const bucketDiff = new Array<number>(Math.ceil(rows / bucketRows) || 0).fill(0);
  const bucketUlp = new Array<number>(bucketDiff.length).fill(0);
  let differing = 0;
  let maxUlp = 0;
  let sumUlp = 0;
  let rowUlp = 0;
  let maxAbs = 0;
  let maxRel = 0;
  let first: TensorDiff['first'] = null;
  const nonFinite = { a: 0, b: 0 };
  const errA = { maxAbs: 0, sumAbs: 0, maxUlp: 0 };
  const errB = { maxAbs: 0, sumAbs: 0, maxUlp: 0 };
  let fartherA = 0;
  let fartherB = 0;
  const ua = ta.data;
  const ub = tb.data;
  for (let r = 0; r < rows; r++) {
    const row = start + r;
    const ia = (row - a.rowStart) * cols;
    const ib = (row - b.rowStart) * cols;
    // the row's scale from its finite values: one NaN must not make every distance NaN
    let rowMax = 0;
    for (let c = 0; c < cols; c++) rowMax = finiteMax(rowMax, valueAt(tb, ib + c));
    const rowUnit = bf16UlpAt(rowMax);
    let exactMax = 0;
    if (exact) for (let c = 0; c < cols; c++) exactMax = finiteMax(exactMax, exact.tensor.data[(row - exact.rowStart) * cols + c]);
    const exactUnit = bf16UlpAt(exactMax);
    const bucket = Math.floor(r / bucketRows);
    for (let c = 0; c < cols; c++) {
      const va = valueAt(ta, ia + c);
      const vb = valueAt(tb, ib + c);
      const same = ua[ia + c] === ub[ib + c];
      const finite = Number.isFinite(va) && Number.isFinite(vb);
      if (!Number.isFinite(va)) nonFinite.a++;
      if (!Number.isFinite(vb)) nonFinite.b++;
      const d = Math.abs(va - vb);
      if (!same) {
        differing++;
        bucketDiff[bucket]++;
        first ??= { row, col: c, a: va, b: vb };
        if (finite) {
          maxAbs = Math.max(maxAbs, d);
          if (vb !== 0) maxRel = Math.max(maxRel, d / Math.abs(vb));
          // d is 0 for -0 against +0; a row of zeros (unit 0) makes any other distance unbounded
          if (isFloat && d > 0) rowUlp = Math.max(rowUlp, d / rowUnit);
        } else {
          maxAbs = Infinity;
        }
      }
      if (bf16) {
        const u = bf16UlpDistance((ua as Uint16Array)[ia + c], (ub as Uint16Array)[ib + c]);
        maxUlp = Math.max(maxUlp, u);
        sumUlp += u;
        bucketUlp[bucket] = Math.max(bucketUlp[bucket], u);
      }
      if (exact) {
        const e = exact.tensor.data[(row - exact.rowStart) * cols + c];
        // a NaN is infinitely far from the float64 value (and so the farther side)
        const ea = errorOf(va, e);
        const eb = errorOf(vb, e);
        const unit = exactUnit;
        errA.maxAbs = Math.max(errA.maxAbs, ea);
        errA.sumAbs += ea;
        errA.maxUlp = Math.max(errA.maxUlp, ea === 0 ? 0 : ea / unit);
        errB.maxAbs = Math.max(errB.maxAbs, eb);
        errB.sumAbs += eb;
        errB.maxUlp = Math.max(errB.maxUlp, eb === 0 ? 0 : eb / unit);
        if (!same) {
          if (ea > eb) fartherA++;
          else if (eb > ea) fartherB++;
        }
      }
    }
  }
  const count = rows * cols;
  const attributed = differing === 0 ? null : fartherA > fartherB ? 'a' : fartherB > fartherA ? 'b' : 'tie';
  const exactError = (e: typeof errA): ExactError => ({ maxAbs: e.maxAbs, meanAbs: count ? e.sumAbs / count : 0, maxUlp: e.maxUlp });
  return {
    count,
    differing,
    nonFinite,
    exactFraction: count ? (count - differing) / count : 1,
    maxUlp: bf16 ? maxUlp : null,
    meanUlp: bf16 ? (count ? sumUlp / count : 0) : null,
    rowUlp: isFloat ? rowUlp : null,
    maxAbs,
    maxRel,
    exact: exact ? { a: exactError(errA), b: exactError(errB), fartherA, fartherB, attributed } : null,
    first,
    rows: { rowStart: start, bucketRows, differing: bucketDiff, maxUlp: bucketUlp },
  };
}
