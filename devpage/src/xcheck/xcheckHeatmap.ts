// What the xcheck views draw, as plain data (no DOM): for one pair of runs, a layer x rank
// grid of each rank's own values (`{step}.partial.r{k}` / `{step}.out.r{k}`), a layer x
// tensor-kind grid of the values of all T rows, the worst tensors, and the attribution
// against the float64 evaluation when the report has it.
import { tensorGroup, type XcheckPair, type XcheckTensor } from '@hcsp/core/xcheck';

/**
 * What a cell's colour shows: the fraction of elements whose bits differ, the largest bf16
 * ulp distance, or the largest difference in bf16 ulps of its row's largest value (the unit of
 * a reordered sum: a value near zero can be many ulps away and still one rounding off).
 */
export type XcheckMetric = 'fraction' | 'ulp' | 'rowUlp';

export const XCHECK_METRICS: readonly { value: XcheckMetric; label: string }[] = [
  { value: 'rowUlp', label: 'row-scaled ulp' },
  { value: 'ulp', label: 'max ulp (bf16 elementwise)' },
  { value: 'fraction', label: 'differing fraction' },
];

/**
 * A tensor's value under the metric. A non-float value (ids) has no ulp distance, and an fp8
 * value no elementwise bf16 one: any difference there counts as the worst class (Infinity),
 * none as 0. null: the report does not carry the figure (a report with only the issue's
 * minimal fields has no row-scaled ulp).
 */
export function metricValue(t: XcheckTensor, metric: XcheckMetric): number | null {
  if (metric === 'fraction') return t.count === 0 ? 0 : t.differing / t.count;
  if (metric === 'ulp') return t.maxUlp ?? (t.differing > 0 ? Infinity : 0);
  if (t.rowUlp !== null) return t.rowUlp;
  // a bf16 value has a row-scaled figure whenever the report computed them
  if (t.maxUlp !== null) return t.differing > 0 ? null : 0;
  return t.differing > 0 ? Infinity : 0;
}

/** The fill of a value the report does not carry. */
export const UNKNOWN_COLOR = '#d1d5db';
/** The fill of 0: bit-identical. */
export const IDENTICAL_COLOR = '#eef2f5';
/** The fill of a difference no ulp figure measures (a non-float value that differs): beyond the scale. */
export const BEYOND_COLOR = '#111827';

// viridis at 9 even stops: perceptually even, readable in grey
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725'];

/** The colour scale's range: the smallest positive and the largest finite value (null: none), so that the scale ends at the real maximum. */
export function metricDomain(values: readonly (number | null)[]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v === null || !Number.isFinite(v) || v <= 0) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  return hi >= lo ? [lo, hi] : null;
}

/** Where a value sits on the log scale over `domain`, 0 to 1. */
export function scalePosition(value: number, domain: readonly [number, number]): number {
  const [lo, hi] = domain;
  if (hi <= lo) return 1;
  return Math.min(1, Math.max(0, Math.log(value / lo) / Math.log(hi / lo)));
}

function mix(a: string, b: string, f: number): string {
  const c = (s: string, i: number): number => parseInt(s.slice(1 + 2 * i, 3 + 2 * i), 16);
  return `#${[0, 1, 2]
    .map((i) =>
      Math.round(c(a, i) + (c(b, i) - c(a, i)) * f)
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
}

/** The colour of a position 0 to 1 on the bar. */
export function barColor(position: number): string {
  const x = position * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  return mix(VIRIDIS[i], VIRIDIS[i + 1], x - i);
}

/** The CSS gradient of the bar, left (domain[0]) to right (domain[1]). */
export function barGradient(): string {
  return `linear-gradient(to right, ${VIRIDIS.join(', ')})`;
}

/** A cell's fill: continuous on a log scale over `domain`; 0, unknown and unmeasured differences apart. */
export function metricColor(value: number | null, domain: readonly [number, number] | null): string {
  if (value === null) return UNKNOWN_COLOR;
  if (!(value >= 0)) throw new Error(`xcheck heatmap: a value must be >= 0, got ${value}`);
  if (value === 0) return IDENTICAL_COLOR;
  if (!Number.isFinite(value) || domain === null) return BEYOND_COLOR;
  return barColor(scalePosition(value, domain));
}

/** The bar's labels: its two ends and the powers of ten between them. */
export function barTicks(domain: readonly [number, number]): number[] {
  const [lo, hi] = domain;
  const between: number[] = [];
  for (let e = Math.ceil(Math.log10(lo)); e <= Math.floor(Math.log10(hi)); e++) {
    const t = Number(`1e${e}`);
    if (t > lo * 1.5 && t < hi / 1.5) between.push(t);
  }
  return hi > lo ? [lo, ...between, hi] : [lo];
}

export interface GridCell {
  row: number;
  col: number;
  tensor: XcheckTensor;
  /** null: not in the report (drawn as UNKNOWN_COLOR) */
  value: number | null;
}

export interface GridModel {
  rows: { label: string; layer: number }[];
  cols: { label: string; rank: number | null }[];
  cells: GridCell[];
}

const RANK_SUFFIX = /^(.*)\.([^.]+)\.r(\d+)$/;

/** A rank value's sub-layer step, its part (partial, out) and its rank, from its name. */
export function rankValuePlace(name: string): { step: string; part: string; rank: number } | null {
  const m = RANK_SUFFIX.exec(name);
  return m ? { step: m[1], part: m[2], rank: Number(m[3]) } : null;
}

/** `layers.3.attn` -> `L3 attn`, `mtp.mlp` -> `mtp mlp`. */
export function stepLabel(step: string): string {
  const m = /^layers\.(\d+)\.(.+)$/.exec(step);
  return m ? `L${m[1]} ${m[2]}` : step.replace('.', ' ');
}

/**
 * Rows: the sub-layer steps that have per-rank values (in the report's order, which is graph
 * order); columns: each rank's partial sums and its collective's output. The grid has one
 * cell per (step, rank, part) the pair compares.
 */
export function rankGrid(pair: XcheckPair, metric: XcheckMetric): GridModel {
  const steps = new Map<string, number>();
  const ranks = new Set<number>();
  const parts: string[] = [];
  const placed: { t: XcheckTensor; step: string; part: string; rank: number }[] = [];
  for (const t of pair.tensors) {
    if (t.rank === null) continue;
    const p = rankValuePlace(t.name);
    if (!p) continue;
    if (!steps.has(p.step)) steps.set(p.step, t.layer);
    ranks.add(p.rank);
    if (!parts.includes(p.part)) parts.push(p.part);
    placed.push({ t, ...p });
  }
  // partial before out whatever order the report lists them in
  parts.sort((x, y) => (x === 'partial' ? -1 : y === 'partial' ? 1 : 0));
  const rankList = [...ranks].sort((x, y) => x - y);
  const cols = rankList.flatMap((r) => parts.map((part) => ({ label: `r${r} ${part}`, rank: r })));
  const stepList = [...steps.keys()];
  const colOf = (rank: number, part: string): number => rankList.indexOf(rank) * parts.length + parts.indexOf(part);
  return {
    rows: stepList.map((st) => ({ label: stepLabel(st), layer: steps.get(st)! })),
    cols,
    cells: placed.map(({ t, step, part, rank }) => ({ row: stepList.indexOf(step), col: colOf(rank, part), tensor: t, value: metricValue(t, metric) })),
  };
}

/** `layers.3.attn_hc.mixed` -> `attn_hc.mixed`, `mtp.logits` -> `logits` (in the mtp row); names outside a layer (embed, final.in, logits) are their own kind. */
export function tensorKind(name: string): string {
  return name.replace(/^layers\.\d+\./, '').replace(/^mtp\./, '');
}

/**
 * Rows: the places (embed, the layers, final, mtp), columns: the kinds of the values of all T
 * rows, in the order they first appear; a cell where that place has that value.
 */
export function kindGrid(pair: XcheckPair, metric: XcheckMetric): GridModel {
  const all = pair.tensors.filter((t) => t.rank === null);
  // rows: the places in depth order, named as everywhere (embed, L{i}, final, mtp)
  const order = (p: string): number => (p === 'embed' ? -1 : p === 'final' ? 1e6 : p === 'mtp' ? 1e6 + 1 : Number(p.slice(1)));
  const places = [...new Set(all.map((t) => tensorGroup(t.name)))].sort((x, y) => order(x) - order(y));
  const kinds: string[] = [];
  for (const t of all) if (!kinds.includes(tensorKind(t.name))) kinds.push(tensorKind(t.name));
  const layerOf = new Map(all.map((t) => [tensorGroup(t.name), t.layer]));
  return {
    rows: places.map((p) => ({ label: p, layer: layerOf.get(p)! })),
    cols: kinds.map((k) => ({ label: k, rank: null })),
    cells: all.map((t) => ({ row: places.indexOf(tensorGroup(t.name)), col: kinds.indexOf(tensorKind(t.name)), tensor: t, value: metricValue(t, metric) })),
  };
}

/**
 * The differing tensors, worst first: by row-scaled ulp (a non-float difference first; the
 * elementwise ulp where the report has no row-scaled figure), then elementwise ulp, then
 * differing fraction.
 */
export function worstTensors(pair: XcheckPair, n: number): XcheckTensor[] {
  return pair.tensors
    .filter((t) => t.differing > 0)
    .map((t) => {
      const u = metricValue(t, 'ulp')!;
      return { t, r: metricValue(t, 'rowUlp') ?? u, u, f: metricValue(t, 'fraction')! };
    })
    .sort((x, y) => y.r - x.r || y.u - x.u || y.f - x.f)
    .slice(0, n)
    .map((x) => x.t);
}

export interface Attribution {
  /** tensors with a float64 evaluation */
  withExact: number;
  /** differing tensors by the side farther from the float64 value */
  a: number;
  b: number;
  tie: number;
  /** each side's largest own error over all tensors, in bf16 ulps of the exact value */
  maxUlpA: number;
  maxUlpB: number;
}

/** null when no tensor of the pair has a float64 evaluation. */
export function attribution(pair: XcheckPair): Attribution | null {
  const withExact = pair.tensors.filter((t) => t.exact !== null);
  if (withExact.length === 0) return null;
  const out: Attribution = { withExact: withExact.length, a: 0, b: 0, tie: 0, maxUlpA: 0, maxUlpB: 0 };
  for (const t of withExact) {
    const e = t.exact!;
    if (e.attributed === 'a') out.a++;
    else if (e.attributed === 'b') out.b++;
    else if (e.attributed === 'tie') out.tie++;
    out.maxUlpA = Math.max(out.maxUlpA, e.a.maxUlp);
    out.maxUlpB = Math.max(out.maxUlpB, e.b.maxUlp);
  }
  return out;
}

/** One line for a pair: how many tensors differ and the largest distance. */
export function pairHeadline(pair: XcheckPair): string {
  const n = pair.tensors.length;
  const differ = pair.tensors.filter((t) => t.differing > 0);
  if (differ.length === 0) return `${pair.a} against ${pair.b}: all ${n} compared tensors are bit-identical.`;
  const first = differ[0];
  const rowUlp = pair.tensors.reduce((m, t) => Math.max(m, t.rowUlp ?? 0), 0);
  return `${pair.a} against ${pair.b}: ${differ.length} of ${n} compared tensors differ (${pair.differing} elements; max ${+rowUlp.toFixed(3)} row-scaled ulp, ${pair.maxUlp} elementwise ulp; first: ${first.name}).`;
}
