// The report of `hcsp xcheck --report DIR`: DIR/report.json (the --json object) and
// DIR/index.html, one self-contained page (inline CSS and SVG charts, no scripts, fonts or
// URLs: it opens offline, from a copied folder or a mail attachment). Per pair of runs: the
// differences against depth (max ulp and the differing fraction per layer), heatmaps (layer x
// tensor, layer x rank, layer x rows) and a table of every tensor with each side's error
// against the float64 evaluation when it ran.
import { nonFiniteCount, overGate, routingText, type XcheckPair, type XcheckReport, type XcheckTensor } from '@hcsp/core';
import { checkOutputDir, writeOutputDir, type OutputDir } from '../output/outputDir.ts';
import { heatmapSvg, linePlotSvg } from '../output/svgPlot.ts';

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

function layerLabel(layer: number): string {
  return layer < 0 ? 'embed' : String(layer);
}

/** The tensor's kind: its name without the `layers.{i}.` prefix. */
function kindOf(name: string): string {
  return name.replace(/^layers\.\d+\./, '');
}

/** The pair's tensors over --max-ulp, by core's rule (the one `hcsp xcheck` gates on). */
function overOf(pair: XcheckPair, gate: number | null): Set<XcheckTensor> {
  return new Set(gate === null ? [] : overGate([pair], gate).map((o) => o.tensor));
}

interface LayerStats {
  layer: number;
  maxUlp: number | null;
  rowUlp: number | null;
  differing: number;
  count: number;
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

function perLayer(tensors: readonly XcheckTensor[]): LayerStats[] {
  const by = new Map<number, LayerStats>();
  for (const t of tensors) {
    const s = by.get(t.layer) ?? { layer: t.layer, maxUlp: null, rowUlp: null, differing: 0, count: 0 };
    s.maxUlp = maxOrNull(s.maxUlp, t.maxUlp);
    s.rowUlp = maxOrNull(s.rowUlp, t.rowUlp);
    s.differing += t.differing;
    s.count += t.count;
    by.set(t.layer, s);
  }
  return [...by.values()].sort((x, y) => x.layer - y.layer);
}

/** A grid of the largest value per (x, y) key; null where no tensor gives one. */
function grid<T>(items: readonly T[], xOf: (t: T) => string, yOf: (t: T) => string, vOf: (t: T) => number | null, xs: string[], ys: string[]): (number | null)[][] {
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
  const layers = perLayer(pair.tensors);
  const label = `pair ${index + 1}`;
  const ulpLayers = layers.filter((l) => l.maxUlp !== null);
  if (ulpLayers.length > 0) {
    const series = [
      { name: 'max ulp', points: ulpLayers.map((l) => [l.layer, l.maxUlp as number] as [number, number]) },
      { name: 'row ulp', points: layers.filter((l) => l.rowUlp !== null).map((l) => [l.layer, l.rowUlp as number] as [number, number]) },
    ];
    if (gate !== null) {
      series.push({ name: `--max-ulp ${gate}`, points: [[layers[0].layer, gate], [layers[layers.length - 1].layer, gate]] });
    }
    out.push(
      await linePlotSvg({
        title: `${label}: largest bf16 ulp distance by layer (embed = -1; max over the layer's tensors)`,
        x: { label: 'layer', integer: true },
        y: { label: 'bf16 ulps', scale: 'symlog' },
        series,
        idPrefix: id(),
      }),
    );
  }
  if (layers.length > 0) {
    out.push(
      await linePlotSvg({
        title: `${label}: fraction of elements differing by layer (embed = -1)`,
        x: { label: 'layer', integer: true },
        y: { label: 'differing fraction' },
        series: [{ name: 'differing / compared', points: layers.map((l) => [l.layer, l.count > 0 ? l.differing / l.count : 0]) }],
        idPrefix: id(),
      }),
    );
  }
  const floats = pair.tensors.filter((t) => t.maxUlp !== null);
  const xs = firstSeen(layers.map((l) => layerLabel(l.layer)));
  if (floats.length > 0 && xs.length > 1) {
    const kinds = firstSeen(floats.map((t) => kindOf(t.name)));
    out.push(
      await heatmapSvg({
        title: `${label}: max bf16 ulp, layer x tensor`,
        x: { label: 'layer', labels: xs },
        y: { label: 'tensor', labels: kinds },
        values: grid(floats, (t) => layerLabel(t.layer), (t) => kindOf(t.name), (t) => t.maxUlp, xs, kinds),
        colour: { label: 'max ulp', scale: 'symlog' },
        idPrefix: id(),
      }),
    );
  }
  const ranked = floats.filter((t) => t.rank !== null);
  if (ranked.length > 0) {
    const rxs = firstSeen(ranked.map((t) => t.layer).sort((a, b) => a - b).map(layerLabel));
    const ranks = [...new Set(ranked.map((t) => t.rank as number))].sort((a, b) => a - b).map((r) => `rank ${r}`);
    out.push(
      await heatmapSvg({
        title: `${label}: max bf16 ulp of each rank's own values (partials, collective outputs), layer x rank`,
        x: { label: 'layer', labels: rxs },
        y: { label: 'rank', labels: ranks },
        values: grid(ranked, (t) => layerLabel(t.layer), (t) => `rank ${t.rank}`, (t) => t.maxUlp, rxs, ranks),
        colour: { label: 'max ulp', scale: 'symlog' },
        idPrefix: id(),
      }),
    );
  }
  // Where along the sequence: the row buckets of the values of all T rows, when they share one bucketing.
  const full = floats.filter((t) => t.rank === null && t.rows.maxUlp.length > 1);
  if (full.length > 0) {
    const key = (t: XcheckTensor): string => `${t.rows.rowStart}/${t.rows.bucketRows}/${t.rows.maxUlp.length}`;
    const counts = new Map<string, number>();
    for (const t of full) counts.set(key(t), (counts.get(key(t)) ?? 0) + 1);
    const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
    const same = full.filter((t) => key(t) === common);
    const { rowStart, bucketRows } = same[0].rows;
    const buckets = same[0].rows.maxUlp.map((_, i) => `${rowStart + i * bucketRows}`);
    const ys = firstSeen(perLayer(same).map((l) => layerLabel(l.layer)));
    const values = ys.map(() => buckets.map((): number | null => null));
    for (const t of same) {
      const i = ys.indexOf(layerLabel(t.layer));
      t.rows.maxUlp.forEach((v, j) => (values[i][j] = maxOrNull(values[i][j], v)));
    }
    out.push(
      await heatmapSvg({
        title: `${label}: max bf16 ulp by rows (${bucketRows} row${bucketRows === 1 ? '' : 's'} a cell, from row ${rowStart}), layer x rows`,
        x: { label: 'first row of the cell', labels: buckets },
        y: { label: 'layer', labels: ys },
        values,
        colour: { label: 'max ulp', scale: 'symlog' },
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

function tensorRow(t: XcheckTensor, over: ReadonlySet<XcheckTensor>): string {
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
    `<td class="name">${esc(t.name)}</td><td>${esc(layerLabel(t.layer))}</td><td>${t.rank === null ? '–' : t.rank}</td>` +
    `<td>${num(t.count)}</td><td>${num(t.differing)}</td><td>${fraction(t.exactFraction)}</td>` +
    `<td${nonFiniteCount(t) > 0 ? ' class="nonfinite"' : ''}>${nonFiniteCount(t) > 0 ? `a ${num(t.nonFinite.a)}, b ${num(t.nonFinite.b)}` : '0'}</td>` +
    `<td>${num(t.maxUlp)}</td><td>${num(t.meanUlp)}</td><td>${num(t.rowUlp)}</td><td>${num(t.maxAbs)}</td><td>${num(t.maxRel)}</td>` +
    exactCell(t.exact?.a) +
    exactCell(t.exact?.b) +
    `<td>${farther}</td><td>${first}</td></tr>`
  );
}

const TABLE_HEAD =
  '<thead><tr><th>tensor</th><th>layer</th><th>rank</th><th>count</th><th>differing</th><th>exact fraction</th><th>NaN/Inf</th>' +
  '<th>max ulp</th><th>mean ulp</th><th>row ulp</th><th>max abs</th><th>max rel</th>' +
  '<th>a vs float64</th><th>b vs float64</th><th>farther from float64</th><th>first differing</th></tr></thead>';

async function pairSection(pair: XcheckPair, report: XcheckReport, index: number): Promise<string> {
  const gate = report.maxUlpGate;
  const overSet = overOf(pair, gate);
  const over = pair.tensors.filter((t) => overSet.has(t));
  const maxRowUlp = pair.tensors.reduce<number | null>((m, t) => maxOrNull(m, t.rowUlp), null);
  const firstDiff = pair.tensors.find((t) => t.differing > 0);
  const nonFinite = pair.tensors.filter((t) => nonFiniteCount(t) > 0);
  const compared = pair.tensors.reduce((s, t) => s + t.count, 0);
  const charts = await pairCharts(pair, gate, index);
  const summary = [
    `<li>${pair.tensors.length} tensors, ${num(compared)} elements compared, ${num(pair.differing)} differing${compared > 0 ? ` (${fraction(pair.differing / compared)})` : ''}; largest distance ${num(pair.maxUlp)} bf16 ulps, row-scaled ${num(maxRowUlp)}</li>`,
    `<li>first tensor (in graph order) that differs: ${firstDiff ? `<code>${esc(firstDiff.name)}</code>` : 'none: the runs are bit-identical'}</li>`,
    nonFinite.length === 0
      ? ''
      : `<li class="nonfinite">NaN or Inf (over any --max-ulp, on either side): ${nonFinite.map((t) => `<code>${esc(t.name)}</code> (a ${num(t.nonFinite.a)}, b ${num(t.nonFinite.b)})`).join(', ')}</li>`,
    ...(pair.routing ?? []).map((d) => `<li>layer ${num(d.layer)}: ${esc(routingText(d))}: the MoE output of those rows follows another expert choice, not arithmetic</li>`),
    gate === null ? '' : `<li>over --max-ulp ${num(gate)}: ${over.length === 0 ? 'none' : over.map((t) => `<code>${esc(t.name)}</code>`).join(', ')}</li>`,
  ].join('');
  return (
    `<section><h2>Pair ${index + 1}: <code>${esc(pair.a)}</code> against <code>${esc(pair.b)}</code></h2>` +
    `<p class="small">a = <code>${esc(pair.a)}</code>, b = <code>${esc(pair.b)}</code>; ulp: bf16 units in the last place between a and b; ` +
    `row ulp: |a - b| in ulps of the largest |b| of its row; float64 columns: each side's error against the float64 evaluation${report.exact ? '' : ' (not run)'}.</p>` +
    `<ul>${summary}</ul>` +
    `<div class="charts">${charts.map((svg) => `<figure>${svg}</figure>`).join('')}</div>` +
    `<div class="scroll"><table>${TABLE_HEAD}<tbody>${pair.tensors.map((t) => tensorRow(t, overSet)).join('')}</tbody></table></div>` +
    `</section>`
  );
}

const CSS = `
body{font-family:sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.5em;margin:0 0 .5em}h2{font-size:1.2em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
code{font-family:monospace;font-size:.95em}
.small{font-size:.85em;color:#555}
.badge{display:inline-block;padding:.1em .6em;border-radius:.3em;font-weight:bold;color:#fff}
.ok{background:#2a7d2a}.fail{background:#b22}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.meta dt{font-weight:bold}dl.meta dd{margin:0}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.2em .4em;text-align:right;vertical-align:top}
th{background:#f2f2f2;position:sticky;top:0}
td.name,td.text{text-align:left;font-family:monospace}
tr.over td{background:#fde2e2}tr.same td{color:#777}.nonfinite{color:#b22;font-weight:bold}
.scroll{overflow-x:auto}
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}
`;

/** The report as one self-contained HTML page. */
export async function renderXcheckHtml(report: XcheckReport): Promise<string> {
  const status = report.ok ? '<span class="badge ok">ok</span>' : '<span class="badge fail">failed</span>';
  const meta: [string, string][] = [
    ['config', esc(report.config)],
    ['tokens (T)', num(report.tokens)],
    ['tp', num(report.tp)],
    ['seed', num(report.seed)],
    ['layers', `${report.layers[0]}:${report.layers[1]} (decoder layers [${report.layers[0]}, ${report.layers[1]}))`],
    ['weights', esc(report.weights)],
    ['float64 attribution', report.exact ? 'ran (each side’s error against the float64 evaluation of the first SPEC’s graph)' : 'not run'],
    ['--max-ulp gate', report.maxUlpGate === null ? 'none' : num(report.maxUlpGate)],
    ['result', report.ok ? 'ok' : `failed: tensors over --max-ulp ${num(report.maxUlpGate)} (or holding NaN or Inf)`],
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
          `<td class="text">${esc(Object.entries(r.options).map(([k, v]) => `${k}=${v}`).join(' ')) || '–'}</td>` +
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
