// xcheck's verdict on a pair of runs, read from its compared tensors (graph order), its
// routing and QSA selection flips: where the runs first differ and by how much, the noise
// floor there (each side's own row-scaled error against the float64 evaluation), where the
// difference grows and through what, which side is farther from float64 by element count
// and by magnitude, and one line that says whether rounding explains it.
//
// The rule: on a tensor, E is the closer side's own error against float64 (the rounding a run
// of this graph made there). Two runs each within E differ by at most 2E (triangle
// inequality), but E is one run's luck: honest reorderings, propagated through sensitive ops
// (attention partials of the MTP head, tiny at T 64, SP on vs off), differ by up to ~3.3 E, and
// rows after a routing flip by ~5.4 E (small, T 300). A difference over BEYOND_FACTOR E is more
// than rounding explains: "larger than the float64 error", look there; a side that is exact
// (E = 0) and differs is always beyond. Rows whose MoE
// experts or QSA blocks flipped follow another computation from that sub-layer on, so the
// tensors from there are explained by the flip, not judged by the rule.
import type { RoutingDifference } from './flipDiff.ts';
import type { PairVerdict, VerdictTensor } from './verdictTypes.ts';
import type { XcheckPair, XcheckTensor } from './xcheckReport.ts';

/** A difference over this many times the closer side's float64 error is more than rounding explains (see above). */
export const BEYOND_FACTOR = 8;

const PARTIAL = /\.partial\.r(\d+)$/;
const RANK_OUT = /\.out\.r(\d+)$/;

/** `layers.2.mlp.partial.r0` -> `mlp.partial`, `mtp.attn.out` -> `mtp.attn.out` */
export function tensorKindOf(name: string): string {
  return name.replace(/^layers\.\d+\./, '').replace(/\.r\d+$/, '');
}

/** What computes a named value, in words. */
export function tensorOp(name: string): string {
  let m = PARTIAL.exec(name);
  if (m) return `rank ${m[1]}'s partial sum before the collective`;
  m = RANK_OUT.exec(name);
  if (m) return `the collective's output on rank ${m[1]}`;
  const k = tensorKindOf(name);
  if (k === 'embed') return 'the embedding lookup';
  if (/(^|\.)(attn|mlp)\.out$/.test(k)) return `the ${/attn/.test(k) ? 'attention' : 'MLP/MoE'} sub-layer's output (after its collective)`;
  if (k.endsWith('_hc.mixed')) return 'the HC mix';
  if (k.endsWith('mlp.topk_ids')) return "the MoE router's choice";
  if (k.endsWith('attn.kept')) return "the QSA selection's kept blocks";
  if (k === 'in') return 'the layer input';
  if (k.startsWith('ple.')) return 'the per-layer embedding';
  if (k.endsWith('logits')) return 'the LM head';
  if (k.startsWith('final.')) return 'the final HC mix and norm';
  return k;
}

/** The place a tensor belongs to, the same everywhere: `embed`, `L{i}`, `final` (the exit: final.*, logits) or `mtp`. */
export function tensorGroup(name: string): string {
  const m = /^layers\.(\d+)\./.exec(name);
  if (m) return `L${m[1]}`;
  if (name === 'embed' || name === 'input_ids') return 'embed';
  if (name.startsWith('mtp.') || name === 'mtp') return 'mtp';
  return 'final';
}

/** Is the tensor computed from a flipped sub-layer on (layer L's `sub.*`, or any later layer, the exit and MTP)? */
function afterFlip(t: XcheckTensor, flips: readonly RoutingDifference[], sub: 'attn' | 'mlp'): RoutingDifference | null {
  for (const f of flips) {
    if (t.layer > f.layer) return f;
    if (t.layer === f.layer && new RegExp(`^layers\\.${f.layer}\\.${sub}\\.`).test(t.name)) return f;
  }
  return null;
}

function described(t: XcheckTensor): VerdictTensor {
  return {
    name: t.name,
    kind: tensorKindOf(t.name),
    op: tensorOp(t.name),
    rowUlp: t.rowUlp,
    floor: t.exact ? { a: t.exact.a.maxUlp, b: t.exact.b.maxUlp } : null,
    at: t.first ? { row: t.first.row, col: t.first.col } : null,
  };
}

/** A distance as text: 3 significant digits, integers in full. */
export function ulpText(v: number | null): string {
  if (v === null) return '-';
  if (!Number.isFinite(v)) return String(v);
  if (v === 0 || Number.isInteger(v)) return String(v);
  if (v >= 100) return v.toFixed(0);
  return String(Number(v.toPrecision(3)));
}

function sideOf(a: number, b: number): 'a' | 'b' | 'tie' {
  return a > b ? 'a' : b > a ? 'b' : 'tie';
}

function flipText(what: string, f: RoutingDifference): string {
  return `${what} flips at layer ${f.layer} (${f.rows.length} of ${f.count} rows)`;
}

/** The verdict on one pair (its `routing` and `selection` flips as the report carries them). */
export function pairVerdict(pair: XcheckPair): PairVerdict {
  const routing = pair.routing ?? [];
  const selection = pair.selection ?? [];
  const differ = pair.tensors.filter((t) => t.differing > 0 || t.nonFinite.a + t.nonFinite.b > 0);
  // integer values (router ids, kept counts) have no rounding: their flips are counted apart
  const withExact = pair.tensors.filter((t) => t.exact !== null && t.rowUlp !== null);
  const first = differ.length ? described(differ[0]) : null;
  // where the running largest distance steps up the most (by factor), after the first difference
  let growth: PairVerdict['growth'] = null;
  let running = 0;
  let best = 1;
  for (const t of differ) {
    const d = t.rowUlp;
    if (d === null || !Number.isFinite(d) || d <= running) continue;
    if (running > 0 && d / running > best) {
      best = d / running;
      growth = { ...described(t), from: running };
    }
    running = d;
  }
  let beyond: VerdictTensor | null = null;
  if (withExact.length > 0) {
    for (const t of differ) {
      if (t.nonFinite.a + t.nonFinite.b > 0) {
        beyond = described(t);
        break;
      }
      if (t.rowUlp === null || t.exact === null) continue;
      if (afterFlip(t, routing, 'mlp') || afterFlip(t, selection, 'attn')) continue;
      if (t.rowUlp > BEYOND_FACTOR * Math.min(t.exact.a.maxUlp, t.exact.b.maxUlp)) {
        beyond = described(t);
        break;
      }
    }
  }
  let attribution: PairVerdict['attribution'] = null;
  let noiseFloor: PairVerdict['noiseFloor'] = null;
  if (withExact.length > 0) {
    let fa = 0;
    let fb = 0;
    let ma = 0;
    let mb = 0;
    let where = withExact[0].name;
    for (const t of withExact) {
      const e = t.exact!;
      fa += e.fartherA;
      fb += e.fartherB;
      if (Math.max(e.a.maxUlp, e.b.maxUlp) > Math.max(ma, mb)) where = t.name;
      ma = Math.max(ma, e.a.maxUlp);
      mb = Math.max(mb, e.b.maxUlp);
    }
    noiseFloor = { a: ma, b: mb };
    attribution = { byCount: { a: fa, b: fb, side: sideOf(fa, fb) }, byMagnitude: { a: ma, b: mb, side: sideOf(ma, mb), tensor: where } };
  }
  const kind: PairVerdict['kind'] = first === null ? 'identical' : beyond ? 'beyond' : withExact.length === 0 ? 'unjudged' : 'rounding';
  const v: PairVerdict = {
    kind,
    tensors: pair.tensors.length,
    differingTensors: differ.length,
    first,
    growth,
    beyond,
    noiseFloor,
    routing,
    selection,
    attribution,
    line: '',
  };
  v.line = verdictLine(v);
  return v;
}

function floorText(f: { a: number; b: number } | null): string {
  return f ? `a ${ulpText(f.a)}, b ${ulpText(f.b)} from float64` : 'no float64 value';
}

function atText(t: VerdictTensor): string {
  return t.at ? ` row ${t.at.row}, col ${t.at.col}` : '';
}

/** The verdict as one line (a: the compared run, b: the first SPEC's). */
export function verdictLine(v: PairVerdict): string {
  if (v.kind === 'identical') return `bit-identical: none of ${v.tensors} tensors differ`;
  const first = v.first!;
  const firstText = `${first.name} (${first.op};${atText(first)}) at ${ulpText(first.rowUlp)} row-scaled ulp`;
  if (v.kind === 'unjudged') return `first difference at ${firstText}; no float64 evaluation, so no noise floor to judge it against`;
  if (v.kind === 'beyond') {
    const b = v.beyond!;
    const nan = b.floor === null || b.rowUlp === 0 ? ' (NaN or Inf)' : '';
    return `a difference larger than the float64 error at ${b.name} (${b.op};${atText(b)}): ${ulpText(b.rowUlp)} row-scaled ulp${nan} where the closer side is ${ulpText(b.floor ? Math.min(b.floor.a, b.floor.b) : null)} from float64 (${floorText(b.floor)}): look here`;
  }
  const parts = [`expected rounding reordering at ${firstText} (${floorText(first.floor)})`];
  const flips = [...v.routing.map((f) => ({ what: 'routing', f })), ...v.selection.map((f) => ({ what: 'QSA selection', f }))].sort(
    (p, q) => p.f.layer - q.f.layer,
  );
  const step = v.growth ? ` (largest step at ${v.growth.name}, ${v.growth.kind}: ${ulpText(v.growth.from)} -> ${ulpText(v.growth.rowUlp)} row-scaled ulp)` : '';
  if (flips.length > 0) {
    const rows = flips.reduce((n, x) => n + x.f.rows.length, 0);
    const more = flips.length > 1 ? `; ${flips.length} layers in all, ${rows} rows` : '';
    parts.push(`grows through ${flipText(flips[0].what, flips[0].f)}${more}${step}`);
  } else if (v.growth) {
    parts.push(`grows at ${v.growth.name} (${v.growth.op}): ${ulpText(v.growth.from)} -> ${ulpText(v.growth.rowUlp)} row-scaled ulp`);
  }
  if (v.noiseFloor) parts.push(`noise floor up to ${ulpText(Math.max(v.noiseFloor.a, v.noiseFloor.b))} row-scaled ulp`);
  return parts.join('; ');
}

/** Who is farther from float64, by count and by magnitude, in words with the runs' names. */
export function attributionText(v: PairVerdict, pair: Pick<XcheckPair, 'a' | 'b'>): string | null {
  const at = v.attribution;
  if (!at) return null;
  const name = (s: 'a' | 'b' | 'tie'): string => (s === 'a' ? pair.a : s === 'b' ? pair.b : 'neither (a tie)');
  return `farther from float64 by element count: ${name(at.byCount.side)} (a ${at.byCount.a}, b ${at.byCount.b} elements); by magnitude: ${name(at.byMagnitude.side)} (largest own error a ${ulpText(at.byMagnitude.a)}, b ${ulpText(at.byMagnitude.b)} row-scaled ulp, at ${at.byMagnitude.tensor})`;
}
