// The report of `hcsp xcheck --report DIR`: DIR/report.json (the --json object) and
// DIR/index.html, one self-contained page (inline CSS and SVG charts, no scripts, fonts or
// URLs: it opens offline, from a copied folder or a mail attachment). Per pair of runs: the
// verdict first (verdict.ts), then the row-scaled difference against depth beside each side's
// own error against float64 (the noise floor) on log axes ticked at powers of ten, heatmaps
// (layer x tensor, layer x rank, layer x rows) on continuous log colour scales spanning the
// data with a labelled colour bar, hover values (SVG <title>), and a table of every tensor,
// worst first. Places are named once: embed, L{i}, final, mtp (tensorGroup).
import {
  attributionText,
  nonFiniteCount,
  overGate,
  pairVerdict,
  routingText,
  tensorGroup,
  ulpText,
  type XcheckPair,
  type XcheckReport,
  type XcheckTensor,
} from '@hcsp/core/xcheck';
import { checkOutputDir, writeOutputDir, type OutputDir } from '../output/outputDir.ts';
import { heatmapSvg, linePlotSvg, logTicks } from '../output/svgPlot.ts';

/** Text as HTML (element content and quoted attribute values alike). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

const esc = escapeHtml;

/** A number for a table cell: integers in full, others to 4 significant digits; null as a dash. */
function num(v: number | null | undefined): string {
  if (v === null || v === undefined) return '–';
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e6) return String(Number(v.toPrecision(4)));
  return v.toExponential(3);
}

function fraction(v: number): string {
  if (v === 1 || v === 0) return String(v);
  return v > 0.999 ? v.toFixed(6) : num(v);
}

/** A tensor's place: embed, L{i}, final or mtp, the names the terminal and the dev page use. */
function placeOf(t: XcheckTensor): string {
  return tensorGroup(t.name);
}

/** The places in depth order: embed, the layers, final, mtp. */
function placeOrder(p: string): number {
  if (p === 'embed') return -1;
  if (p === 'final') return 1e6;
  if (p === 'mtp') return 1e6 + 1;
  return Number(p.slice(1));
}

/** The tensor's kind: its name without the `layers.{i}.` or `mtp.` prefix (the MTP head's steps share the layers' rows). */
function kindOf(name: string): string {
  return name.replace(/^layers\.\d+\./, '').replace(/^mtp\./, '');
}

/** The pair's tensors over --max-ulp, by core's rule (the one `hcsp xcheck` gates on). */
function overOf(pair: XcheckPair, gate: number | null): Set<XcheckTensor> {
  return new Set(gate === null ? [] : overGate([pair], gate).map((o) => o.tensor));
}

interface PlaceStats {
  place: string;
  rowUlp: number | null;
  /** each side's largest own row-scaled error against float64 (null: not evaluated) */
  floorA: number | null;
  floorB: number | null;
  differing: number;
  count: number;
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

function perPlace(tensors: readonly XcheckTensor[]): PlaceStats[] {
  const by = new Map<string, PlaceStats>();
  for (const t of tensors) {
    const p = placeOf(t);
    const s = by.get(p) ?? { place: p, rowUlp: null, floorA: null, floorB: null, differing: 0, count: 0 };
    s.rowUlp = maxOrNull(s.rowUlp, t.rowUlp);
    // integer values (router ids) have no rounding error to stand for a floor
    if (t.exact && t.rowUlp !== null) {
      s.floorA = maxOrNull(s.floorA, t.exact.a.maxUlp);
      s.floorB = maxOrNull(s.floorB, t.exact.b.maxUlp);
    }
    s.differing += t.differing;
    s.count += t.count;
    by.set(p, s);
  }
  return [...by.values()].sort((x, y) => placeOrder(x.place) - placeOrder(y.place));
}

/** How bad a tensor is, for sorting: NaN/Inf first, then row-scaled ulp (an integer tensor that differs just after), then differing count. */
function severity(t: XcheckTensor): [number, number] {
  if (nonFiniteCount(t) > 0) return [Infinity, t.differing];
  if (t.rowUlp === null) return [t.differing > 0 ? 0.5 : 0, t.differing];
  return [t.rowUlp, t.differing];
}

/** A grid of the largest value per (x, y) key; null where no tensor gives one. */
function grid<T>(
  items: readonly T[],
  xOf: (t: T) => string,
  yOf: (t: T) => string,
  vOf: (t: T) => number | null,
  xs: string[],
  ys: string[],
): (number | null)[][] {
  const values: (number | null)[][] = ys.map(() => xs.map(() => null));
  const xi = new Map(xs.map((x, i) => [x, i]));
  const yi = new Map(ys.map((y, i) => [y, i]));
  for (const t of items) {
    const i = yi.get(yOf(t));
    const j = xi.get(xOf(t));
    if (i === undefined || j === undefined) continue;
    values[i][j] = maxOrNull(values[i][j], vOf(t));
  }
  return values;
}

function firstSeen(names: Iterable<string>): string[] {
  return [...new Set(names)];
}

async function pairCharts(pair: XcheckPair, gate: number | null, index: number): Promise<string[]> {
  const out: string[] = [];
  const id = (): string => `p${index + 1}c${out.length + 1}-`;
  const places = perPlace(pair.tensors);
  const label = `pair ${index + 1}`;
  // x: one position per place in depth order, labelled by its name
  const xs = places.map((p) => p.place);
  const xAxis = { label: 'layer', integer: true, ticks: xs.map((_, i) => i), tickLabels: new Map(xs.map((p, i) => [i, p])) };
  const ulpPlaces = places.filter((p) => p.rowUlp !== null);
  if (ulpPlaces.length > 0) {
    const pts = (v: (p: PlaceStats) => number | null): [number, number][] =>
      places.flatMap((p, i) => (v(p) === null ? [] : [[i, v(p) as number] as [number, number]]));
    const series = [{ name: 'a against b (row-scaled ulp)', points: pts((p) => p.rowUlp) }];
    if (places.some((p) => p.floorA !== null)) {
      series.push(
        { name: 'a against float64 (noise floor)', points: pts((p) => p.floorA) },
        { name: 'b against float64 (noise floor)', points: pts((p) => p.floorB) },
      );
    }
    if (gate !== null && gate > 0)
      series.push({
        name: `--max-ulp ${gate}`,
        points: [
          [0, gate],
          [xs.length - 1, gate],
        ],
      });
    const ys = series.flatMap((x) => x.points.map((q) => q[1])).filter((v) => v > 0 && Number.isFinite(v));
    out.push(
      await linePlotSvg({
        title: `${label}: largest row-scaled ulp distance by layer, beside each side's own error against float64`,
        x: xAxis,
        y: { label: 'row-scaled bf16 ulps (log)', scale: 'log', ticks: ys.length ? logTicks(Math.min(...ys), Math.max(...ys)) : undefined },
        series,
        idPrefix: id(),
      }),
    );
  }
  if (places.length > 0) {
    out.push(
      await linePlotSvg({
        title: `${label}: fraction of elements differing by layer`,
        x: xAxis,
        y: { label: 'differing fraction' },
        series: [{ name: 'differing / compared', points: places.map((p, i) => [i, p.count > 0 ? p.differing / p.count : 0]) }],
        idPrefix: id(),
      }),
    );
  }
  const floats = pair.tensors.filter((t) => t.rowUlp !== null);
  const note = (t: XcheckTensor): string =>
    `${t.name}: ${ulpText(t.rowUlp)} row-scaled ulp, ${t.differing} of ${t.count} differ${t.exact ? `; own error against float64 a ${ulpText(t.exact.a.maxUlp)}, b ${ulpText(t.exact.b.maxUlp)}` : ''}`;
  /** the worst tensor per cell, and its hover text */
  const cells = (items: readonly XcheckTensor[], xOf: (t: XcheckTensor) => string, yOf: (t: XcheckTensor) => string, cx: string[], cy: string[]) => {
    const values = grid(items, xOf, yOf, (t) => t.rowUlp, cx, cy);
    const notes: (string | null)[][] = cy.map(() => cx.map(() => null));
    const worst: (XcheckTensor | null)[][] = cy.map(() => cx.map(() => null));
    for (const t of items) {
      const i = cy.indexOf(yOf(t));
      const j = cx.indexOf(xOf(t));
      if (i < 0 || j < 0) continue;
      if (worst[i][j] === null || (t.rowUlp ?? 0) > (worst[i][j]!.rowUlp ?? 0)) worst[i][j] = t;
      notes[i][j] = note(worst[i][j]!);
    }
    return { values, notes };
  };
  const fx = firstSeen(perPlace(floats).map((p) => p.place));
  if (floats.length > 0 && fx.length > 1) {
    const kinds = firstSeen(floats.map((t) => kindOf(t.name)));
    out.push(
      await heatmapSvg({
        title: `${label}: row-scaled ulp, layer x tensor`,
        x: { label: 'layer', labels: fx },
        y: { label: 'tensor', labels: kinds },
        ...cells(floats, placeOf, (t) => kindOf(t.name), fx, kinds),
        colour: { label: 'row-scaled ulp (log)', scale: 'log' },
        idPrefix: id(),
      }),
    );
  }
  const ranked = floats.filter((t) => t.rank !== null);
  if (ranked.length > 0) {
    const rxs = firstSeen(perPlace(ranked).map((p) => p.place));
    const ranks = [...new Set(ranked.map((t) => t.rank as number))].sort((a, b) => a - b).map((r) => `rank ${r}`);
    out.push(
      await heatmapSvg({
        title: `${label}: row-scaled ulp of each rank's own values (partials, collective outputs), layer x rank`,
        x: { label: 'layer', labels: rxs },
        y: { label: 'rank', labels: ranks },
        ...cells(ranked, placeOf, (t) => `rank ${t.rank}`, rxs, ranks),
        colour: { label: 'row-scaled ulp (log)', scale: 'log' },
        idPrefix: id(),
      }),
    );
  }
  // Where along the sequence: the row buckets of the values of all T rows, when they share one bucketing.
  // The buckets carry the elementwise distance only (TensorDiff.rows): it says which rows, not how far in rows' units.
  const full = floats.filter((t) => t.rank === null && t.rows.maxUlp.length > 1);
  if (full.length > 0) {
    const key = (t: XcheckTensor): string => `${t.rows.rowStart}/${t.rows.bucketRows}/${t.rows.maxUlp.length}`;
    const counts = new Map<string, number>();
    for (const t of full) counts.set(key(t), (counts.get(key(t)) ?? 0) + 1);
    const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
    const same = full.filter((t) => key(t) === common);
    const { rowStart, bucketRows } = same[0].rows;
    const buckets = same[0].rows.differing.map((_, i) => `${rowStart + i * bucketRows}`);
    const ys = firstSeen(perPlace(same).map((p) => p.place));
    const values = ys.map(() => buckets.map((): number | null => null));
    for (const t of same) {
      const i = ys.indexOf(placeOf(t));
      t.rows.differing.forEach((v, j) => {
        values[i][j] = (values[i][j] ?? 0) + v;
      });
    }
    out.push(
      await heatmapSvg({
        title: `${label}: differing elements by rows (${bucketRows} row${bucketRows === 1 ? '' : 's'} a cell, from row ${rowStart}), layer x rows`,
        x: { label: 'first row of the cell', labels: buckets },
        y: { label: 'layer', labels: ys },
        values,
        colour: { label: 'differing elements (log)', scale: 'log' },
        cell: [Math.max(6, Math.min(14, Math.floor(640 / buckets.length))), 12],
        idPrefix: id(),
      }),
    );
  }
  return out;
}

function exactCell(e: { maxUlp: number; maxAbs: number; meanAbs: number } | undefined): string {
  if (!e) return '<td>–</td>';
  return `<td>${num(e.maxUlp)} ulp<br><span class="small">abs ${num(e.maxAbs)}, mean ${num(e.meanAbs)}</span></td>`;
}

function tensorRow(t: XcheckTensor, order: number, over: ReadonlySet<XcheckTensor>): string {
  const farther =
    t.exact === null
      ? '–'
      : t.exact.attributed === null
        ? 'none differ'
        : `${t.exact.attributed === 'tie' ? 'tie' : t.exact.attributed}<br><span class="small">a ${t.exact.fartherA}, b ${t.exact.fartherB}</span>`;
  const first = t.first === null ? '–' : `row ${t.first.row}, col ${t.first.col}<br><span class="small">a ${num(t.first.a)}, b ${num(t.first.b)}</span>`;
  const cls = [over.has(t) ? 'over' : '', t.differing === 0 && nonFiniteCount(t) === 0 ? 'same' : ''].filter(Boolean).join(' ');
  return (
    `<tr${cls ? ` class="${cls}"` : ''}>` +
    `<td class="name">${esc(t.name)}</td><td>${order}</td><td>${esc(placeOf(t))}</td><td>${t.rank === null ? '–' : t.rank}</td>` +
    `<td>${num(t.count)}</td><td>${num(t.differing)}</td><td>${fraction(t.exactFraction)}</td>` +
    `<td${nonFiniteCount(t) > 0 ? ' class="nonfinite"' : ''}>${nonFiniteCount(t) > 0 ? `a ${num(t.nonFinite.a)}, b ${num(t.nonFinite.b)}` : '0'}</td>` +
    `<td>${num(t.rowUlp)}</td><td>${num(t.maxUlp)}</td><td>${num(t.meanUlp)}</td><td>${num(t.maxAbs)}</td><td>${num(t.maxRel)}</td>` +
    exactCell(t.exact?.a) +
    exactCell(t.exact?.b) +
    `<td>${farther}</td><td>${first}</td></tr>`
  );
}

const TABLE_HEAD =
  '<thead><tr><th>tensor</th><th>graph order</th><th>layer</th><th>rank</th><th>count</th><th>differing</th><th>exact fraction</th><th>NaN/Inf</th>' +
  '<th>row-scaled ulp</th><th>max ulp (elementwise)</th><th>mean ulp</th><th>max abs</th><th>max rel</th>' +
  '<th>a vs float64</th><th>b vs float64</th><th>farther from float64</th><th>first differing</th></tr></thead>';

async function pairSection(pair: XcheckPair, report: XcheckReport, index: number): Promise<string> {
  const gate = report.maxUlpGate;
  const overSet = overOf(pair, gate);
  const over = pair.tensors.filter((t) => overSet.has(t));
  const maxRowUlp = pair.tensors.reduce<number | null>((m, t) => maxOrNull(m, t.rowUlp), null);
  const nonFinite = pair.tensors.filter((t) => nonFiniteCount(t) > 0);
  const compared = pair.tensors.reduce((s, t) => s + t.count, 0);
  const charts = await pairCharts(pair, gate, index);
  const v = pair.verdict ?? pairVerdict(pair);
  const attribution = attributionText(v, pair);
  const summary = [
    v.first
      ? `<li>first difference in graph order: <code>${esc(v.first.name)}</code> (${esc(v.first.op)}${v.first.at ? `, row ${v.first.at.row}, col ${v.first.at.col}` : ''}): ${num(v.first.rowUlp)} row-scaled ulp${v.first.floor ? `; each side's own error against float64 there: a ${num(v.first.floor.a)}, b ${num(v.first.floor.b)}` : ''}</li>`
      : '<li>first difference: none, the runs are bit-identical</li>',
    v.growth
      ? `<li>grows most at <code>${esc(v.growth.name)}</code> (${esc(v.growth.kind)}: ${esc(v.growth.op)}): ${num(v.growth.from)} to ${num(v.growth.rowUlp)} row-scaled ulp</li>`
      : '',
    v.noiseFloor
      ? `<li>noise floor (each side's largest own error against float64): a ${num(v.noiseFloor.a)}, b ${num(v.noiseFloor.b)} row-scaled ulp</li>`
      : '',
    attribution ? `<li>${esc(attribution)}</li>` : '',
    ...(pair.routing ?? []).map(
      (d) =>
        `<li>routing flips, layer ${num(d.layer)}: ${esc(routingText(d))}: the MoE output of those rows follows another expert choice, not arithmetic</li>`,
    ),
    ...(pair.selection ?? []).map(
      (d) => `<li>QSA selection flips, layer ${num(d.layer)}: ${d.rows.length} of ${d.count} rows keep another number of blocks</li>`,
    ),
    `<li>${pair.tensors.length} tensors, ${num(compared)} elements compared, ${num(pair.differing)} differing${compared > 0 ? ` (${fraction(pair.differing / compared)})` : ''}; largest row-scaled distance ${num(maxRowUlp)} (elementwise ${num(pair.maxUlp)} bf16 ulps)</li>`,
    nonFinite.length === 0
      ? ''
      : `<li class="nonfinite">NaN or Inf (over any --max-ulp, on either side): ${nonFinite.map((t) => `<code>${esc(t.name)}</code> (a ${num(t.nonFinite.a)}, b ${num(t.nonFinite.b)})`).join(', ')}</li>`,
    gate === null ? '' : `<li>over --max-ulp ${num(gate)}: ${over.length === 0 ? 'none' : over.map((t) => `<code>${esc(t.name)}</code>`).join(', ')}</li>`,
  ].join('');
  // worst first; the graph order in its own column
  const rows = pair.tensors
    .map((t, i) => ({ t, i }))
    .sort((x, y) => {
      const [sx, dx] = severity(x.t);
      const [sy, dy] = severity(y.t);
      return sy - sx || dy - dx || x.i - y.i;
    });
  return (
    `<section><h2>Pair ${index + 1}: <code>${esc(pair.a)}</code> against <code>${esc(pair.b)}</code></h2>` +
    `<p class="small">a = <code>${esc(pair.a)}</code>, b = <code>${esc(pair.b)}</code>; ulp: bf16 units in the last place between a and b; ` +
    `row-scaled ulp: |a - b| in bf16 ulps of the largest |b| of its row (the unit of a reordered sum); float64 columns: each side's own row-scaled error against the float64 evaluation${report.exact ? '' : ' (not run)'}. Hover a point or cell for its values.</p>` +
    `<p class="verdict ${v.kind}"><strong>Verdict:</strong> ${esc(v.line)}</p>` +
    `<ul>${summary}</ul>` +
    `<div class="charts">${charts.map((svg) => `<figure>${svg}</figure>`).join('')}</div>` +
    `<h3>Every tensor, worst first</h3><div class="scroll"><table>${TABLE_HEAD}<tbody>${rows.map(({ t, i }) => tensorRow(t, i + 1, overSet)).join('')}</tbody></table></div>` +
    `</section>`
  );
}

const CSS = `
body{font-family:sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.5em;margin:0 0 .5em}h2{font-size:1.2em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
code{font-family:monospace;font-size:.95em}
.small{font-size:.85em;color:#555}
.badge{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff}
.ran{background:#3a5f8f}.fail{background:#b22}
.verdict{font-size:1.05em;padding:.4em .6em;border-left:.3em solid #3a5f8f;background:#f4f7fb}.verdict.beyond{border-color:#b22;background:#fdf0f0}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.meta dt{font-weight:bold}dl.meta dd{margin:0}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.2em .4em;text-align:right;vertical-align:top}
th{background:#f2f2f2;position:sticky;top:0}
td.name,td.text{text-align:left;font-family:monospace}
tr.over td{background:#fde2e2}tr.same td{color:#777}.nonfinite{color:#b22;font-weight:bold}
.scroll{overflow-x:auto}
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}
`;

/** What the run checked, not a bare "ok": "ran: 2 pairs compared, 140 of 193 tensors differ" (and the gate's outcome). */
export function badgeText(report: XcheckReport): string {
  const tensors = report.pairs.reduce((n, p) => n + p.tensors.length, 0);
  const differ = report.pairs.reduce((n, p) => n + p.tensors.filter((t) => t.differing > 0 || nonFiniteCount(t) > 0).length, 0);
  const gate = report.maxUlpGate === null ? '' : report.ok ? `; within --max-ulp ${num(report.maxUlpGate)}` : `; over --max-ulp ${num(report.maxUlpGate)}`;
  return `${report.ok ? 'ran' : 'failed'}: ${report.pairs.length} pair${report.pairs.length === 1 ? '' : 's'} compared, ${differ} of ${tensors} tensors differ${gate}`;
}

/** The report as one self-contained HTML page. */
export async function renderXcheckHtml(report: XcheckReport): Promise<string> {
  const status = `<span class="badge ${report.ok ? 'ran' : 'fail'}">${esc(badgeText(report))}</span>`;
  const meta: [string, string][] = [
    ['config', esc(report.config)],
    ['tokens (T)', num(report.tokens)],
    ['tp', num(report.tp)],
    ['seed', num(report.seed)],
    ['layers', `${report.layers[0]}:${report.layers[1]} (decoder layers [${report.layers[0]}, ${report.layers[1]}))`],
    ['weights', esc(report.weights)],
    ['float64 attribution', report.exact ? 'ran (each side’s error against the float64 evaluation of the first SPEC’s graph)' : 'not run'],
    ['--max-ulp gate', report.maxUlpGate === null ? 'none' : num(report.maxUlpGate)],
    [
      'result',
      report.ok
        ? `the runs completed${report.maxUlpGate === null ? ' (no --max-ulp gate)' : `, within --max-ulp ${num(report.maxUlpGate)}`}`
        : `failed: tensors over --max-ulp ${num(report.maxUlpGate)} (or holding NaN or Inf)`,
    ],
  ];
  if (report.golden) {
    meta.push([
      'golden',
      `<code>${esc(report.golden.file)}</code>${report.golden.unused.length ? `; in the file but not compared (the run has no such value): ${report.golden.unused.map((m) => `<code>${esc(m)}</code>`).join(', ')}` : ''}` +
        `${report.golden.notCompared.length ? `; the run's but not in the file, not compared: ${report.golden.notCompared.map((m) => `<code>${esc(m)}</code>`).join(', ')}` : ''}`,
    ]);
  }
  const runs =
    '<table><thead><tr><th>SPEC</th><th>backend</th><th>device</th><th>options</th><th>SP</th><th>chunk</th><th>reduce</th><th>seconds</th></tr></thead><tbody>' +
    report.runs
      .map(
        (r) =>
          `<tr><td class="text">${esc(r.spec)}</td><td class="text">${esc(r.backend)}</td><td class="text">${esc(r.device)}</td>` +
          `<td class="text">${
            esc(
              Object.entries(r.options)
                .map(([k, v]) => `${k}=${v}`)
                .join(' '),
            ) || '–'
          }</td>` +
          `<td>${r.sp ? 'on' : 'off'}</td><td>${num(r.chunk)}</td><td class="text">${esc(r.reduce)}</td><td>${num(r.seconds)}</td></tr>`,
      )
      .join('') +
    '</tbody></table>';
  const sections: string[] = [];
  for (const [i, pair] of report.pairs.entries()) sections.push(await pairSection(pair, report, i));
  return (
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<title>hcsp xcheck: ${esc(report.config)}, T=${report.tokens}, tp ${report.tp}</title>\n` +
    `<style>${CSS}</style>\n</head>\n<body>\n` +
    `<h1>hcsp xcheck ${status}</h1>\n` +
    `<dl class="meta">${meta.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>\n` +
    `<h2>Runs</h2>\n<div class="scroll">${runs}</div>\n` +
    (sections.length ? sections.join('\n') : '<p>No pairs compared.</p>') +
    '\n</body>\n</html>\n'
  );
}

/** The files of `--report DIR`. */
export const REPORT_FILES = { json: 'report.json', html: 'index.html' } as const;

/** Checks `--report DIR` before any work (output/outputDir.ts): existing files are replaced only with `force`. */
export function checkXcheckReport(dir: string, force: boolean, option = '--report'): OutputDir {
  return checkOutputDir(dir, option, Object.values(REPORT_FILES), { replace: force, forceFlag: '--force' });
}

/**
 * Writes DIR/report.json and DIR/index.html (checked by checkXcheckReport), creating DIR;
 * both through temp files renamed together (a reader never sees half a report, or one
 * file of another run). Errors name the path.
 */
export async function writeXcheckReport(out: OutputDir, report: XcheckReport): Promise<{ json: string; html: string }> {
  const html = await renderXcheckHtml(report);
  await writeOutputDir(
    out,
    new Map([
      [REPORT_FILES.json, [Buffer.from(`${JSON.stringify(report, null, 2)}\n`, 'utf8')]],
      [REPORT_FILES.html, [Buffer.from(html, 'utf8')]],
    ]),
  );
  return { json: out.files.get(REPORT_FILES.json)!.path, html: out.files.get(REPORT_FILES.html)!.path };
}
