// What a clicked heatmap cell opens: one tensor's differences row by row (the report's row
// buckets) and, when the report has the float64 evaluation, each side's own error against it
// and which side the differing elements are attributed to. Pure: the view draws it.
import type { XcheckPair, XcheckTensor } from '@hcsp/core/xcheck';

export interface DetailRow {
  /** global rows [start, end) of the bucket */
  start: number;
  end: number;
  differing: number;
  maxUlp: number;
}

export interface TensorDetail {
  name: string;
  summary: string;
  /** the first differing element, or null when the tensor is bit-identical */
  first: string | null;
  /** the row buckets in row order; only the buckets that differ when `differingOnly` */
  rows: DetailRow[];
  /** against float64: a sentence, or null when the report has no float64 evaluation of this tensor */
  attribution: string | null;
}

const num = (v: number): string =>
  Number.isInteger(v) ? String(v) : Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : v.toFixed(3);

/** The detail of `pair`'s tensor `name`; an error naming it when the pair has no such tensor. */
export function tensorDetail(pair: XcheckPair, name: string, differingOnly = true): TensorDetail {
  const t: XcheckTensor | undefined = pair.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`xcheck: the pair ${pair.a} / ${pair.b} has no tensor ${JSON.stringify(name)}`);
  const { rowStart, bucketRows, differing, maxUlp } = t.rows;
  const rows: DetailRow[] = differing.map((d, i) => ({
    start: rowStart + i * bucketRows,
    end: rowStart + (i + 1) * bucketRows,
    differing: d,
    maxUlp: maxUlp[i],
  }));
  const rowUlp = t.rowUlp === null ? '' : `, max ${num(t.rowUlp)} row-scaled ulp`;
  const ulp = t.maxUlp === null ? '' : `, max ${num(t.maxUlp)} ulp elementwise`;
  const summary = `${t.differing} of ${t.count} elements differ${rowUlp}${ulp}, max |a - b| ${num(t.maxAbs)}`;
  const first = t.first ? `first difference at row ${t.first.row}, column ${t.first.col}: a ${num(t.first.a)}, b ${num(t.first.b)}` : null;
  const e = t.exact;
  let attribution: string | null = null;
  if (e) {
    const own = `own error against float64: a (${pair.a}) ${num(e.a.maxUlp)} row-scaled ulp (max abs ${num(e.a.maxAbs)}), b (${pair.b}) ${num(e.b.maxUlp)} (max abs ${num(e.b.maxAbs)})`;
    const who =
      e.attributed === null
        ? 'nothing differs to attribute'
        : e.attributed === 'tie'
          ? `a tie: ${e.fartherA} differing elements farther in a, ${e.fartherB} in b`
          : `run ${e.attributed} is farther from float64 on ${e.attributed === 'a' ? e.fartherA : e.fartherB} of ${t.differing} differing elements (the other on ${e.attributed === 'a' ? e.fartherB : e.fartherA})`;
    // the difference against the larger own error: within it, the two sides round alike
    const within =
      t.rowUlp !== null && t.differing > 0
        ? t.rowUlp <= Math.max(e.a.maxUlp, e.b.maxUlp)
          ? '; the difference is within the larger own error (rounding noise)'
          : "; the difference is larger than either side's own error: look here"
        : '';
    attribution = `${own}; ${who}${within}`;
  }
  return { name: t.name, summary, first, rows: differingOnly ? rows.filter((r) => r.differing > 0) : rows, attribution };
}
