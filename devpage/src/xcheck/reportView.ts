// Draws an xcheck report (loaded from a file or from the page's live run): the runs, then per
// pair the layer x rank heatmap of each rank's own values, the layer x tensor-kind heatmap of
// the values of all T rows, the attribution against float64 when the report has it, and a
// table of the worst tensors.
import { attributionText, pairVerdict, tensorGroup, type XcheckPair, type XcheckReport, type XcheckTensor } from '@hcsp/core/xcheck';
import { h, s } from '../view/dom.ts';
import { tensorDetail } from './tensorDetail.ts';
import {
  attribution,
  barGradient,
  barTicks,
  BEYOND_COLOR,
  IDENTICAL_COLOR,
  kindGrid,
  metricColor,
  metricDomain,
  pairHeadline,
  rankGrid,
  scalePosition,
  UNKNOWN_COLOR,
  worstTensors,
  XCHECK_METRICS,
  type GridModel,
  type XcheckMetric,
} from './xcheckHeatmap.ts';

const CELL_H = 16;
const LABEL_W = 110;
const HEADER_H = 96;
const MAX_W = 1100;

function fmt(v: number | null, digits = 3): string {
  if (v === null) return '-';
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  if (Math.abs(v) >= 1e4 || Math.abs(v) < 1e-3) return v.toExponential(2);
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

function metricText(t: XcheckTensor): string {
  const ulp = t.maxUlp === null ? 'not bf16' : `max ${t.maxUlp} ulp`;
  const row = t.rowUlp === null ? '' : `, ${fmt(t.rowUlp)} row-scaled ulp`;
  const e = t.exact;
  const exact =
    e && e.attributed !== null
      ? `; against float64: ${e.attributed === 'tie' ? 'a tie' : `run ${e.attributed} is farther`} (${e.fartherA} / ${e.fartherB} elements), own max ulp a ${fmt(e.a.maxUlp)}, b ${fmt(e.b.maxUlp)}`
      : '';
  return `${t.name}: ${t.differing} of ${t.count} elements differ (${fmt(100 * (1 - t.exactFraction), 2)}%), ${ulp}${row}, max abs ${fmt(t.maxAbs)}${exact}`;
}

/** One heatmap grid as SVG: row labels left, rotated column labels on top, one rect per cell (class xc-cell). */
export function renderGrid(model: GridModel, domain: readonly [number, number] | null, kind: 'rank' | 'kind', caption: string): HTMLElement {
  const cellW = Math.max(10, Math.min(44, Math.floor((MAX_W - LABEL_W - 20) / Math.max(1, model.cols.length))));
  const width = LABEL_W + model.cols.length * cellW + 20;
  const height = HEADER_H + model.rows.length * CELL_H + 4;
  const svg = s('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: `xc-grid xc-${kind}-grid`, role: 'img', 'aria-label': caption });
  model.cols.forEach((c, i) => {
    const x = LABEL_W + i * cellW + cellW / 2;
    svg.append(s('text', { x, y: HEADER_H - 4, class: 'xc-col-label', transform: `rotate(-50 ${x} ${HEADER_H - 4})` }, c.label));
  });
  // rank groups: a line between ranks
  model.rows.forEach((r, i) => {
    const y = HEADER_H + i * CELL_H;
    svg.append(s('text', { x: 0, y: y + CELL_H - 4, class: 'lane-label xc-row-label' }, r.label));
    svg.append(s('rect', { x: LABEL_W, y, width: model.cols.length * cellW, height: CELL_H - 1, class: 'xc-empty' }));
  });
  for (const c of model.cells) {
    const x = LABEL_W + c.col * cellW;
    const y = HEADER_H + c.row * CELL_H;
    svg.append(
      s(
        'rect',
        {
          x: x + 0.5,
          y,
          width: cellW - 1,
          height: CELL_H - 1,
          fill: metricColor(c.value, domain),
          class: c.tensor.differing > 0 ? 'xc-cell xc-differs' : 'xc-cell',
          tabindex: 0,
          'data-name': c.tensor.name,
          'data-layer': c.tensor.layer,
          'data-rank': c.tensor.rank ?? undefined,
          'data-value': c.value ?? 'none',
        },
        s('title', {}, metricText(c.tensor)),
      ),
    );
  }
  for (let i = 1; i < model.cols.length; i++) {
    if (model.cols[i].rank !== null && model.cols[i].rank !== model.cols[i - 1].rank) {
      const x = LABEL_W + i * cellW;
      svg.append(s('line', { x1: x, x2: x, y1: HEADER_H - 10, y2: height - 4, class: 'xc-rank-line' }));
    }
  }
  return h('figure', { class: 'xc-figure' }, svg, h('figcaption', {}, caption));
}

/** The colour bar of a pair's grids: continuous on a log scale from the smallest positive value to the real maximum, labelled at both ends and the powers of ten between. */
export function renderLegend(metric: XcheckMetric, domain: readonly [number, number] | null): HTMLElement {
  const label = XCHECK_METRICS.find((m) => m.value === metric)!.label;
  const swatch = (color: string, text: string): HTMLElement => h('span', {}, h('i', { style: `background:${color}` }), text);
  const bar = domain
    ? h(
        'span',
        { class: 'xc-colorbar', 'data-min': domain[0], 'data-max': domain[1], title: `${label}: ${fmt(domain[0])} to ${fmt(domain[1])}, log scale` },
        h('span', { class: 'xc-bar', style: `background:${barGradient()}` }),
        ...barTicks(domain).map((t) => h('span', { class: 'xc-tick', style: `left:${(100 * scalePosition(t, domain)).toFixed(2)}%` }, fmt(t))),
      )
    : h('span', { class: 'muted' }, 'no positive value');
  return h(
    'div',
    { class: 'legend xc-legend' },
    h('span', {}, `${label} (log):`),
    bar,
    swatch(IDENTICAL_COLOR, '0 (bit-identical)'),
    swatch(BEYOND_COLOR, 'a non-float value differs'),
    swatch(UNKNOWN_COLOR, 'not in the report'),
    h('span', {}, h('i', { class: 'xc-none' }), 'not compared'),
  );
}

function worstTable(pair: XcheckPair, withExact: boolean): HTMLElement {
  const worst = worstTensors(pair, 20);
  if (worst.length === 0) return h('p', { class: 'muted xc-worst-none' }, 'No tensor differs.');
  const head = ['tensor', 'layer', 'rank', 'elements', 'differing', 'bit-exact', 'max ulp', 'mean ulp', 'row ulp', 'max abs', 'max rel', 'first difference'];
  if (withExact) head.push(`${pair.a} vs float64 (max ulp)`, `${pair.b} vs float64 (max ulp)`, 'farther from float64');
  const rows = worst.map((t) => {
    const cells: (HTMLElement | string)[] = [
      h('td', { class: 'step' }, t.name),
      h('td', { class: 'num' }, tensorGroup(t.name)),
      h('td', { class: 'num' }, t.rank === null ? 'all' : `r${t.rank}`),
      h('td', { class: 'num' }, String(t.count)),
      h('td', { class: 'num' }, String(t.differing)),
      h('td', { class: 'num' }, `${fmt(100 * t.exactFraction, 2)}%`),
      h('td', { class: 'num' }, fmt(t.maxUlp)),
      h('td', { class: 'num' }, fmt(t.meanUlp)),
      h('td', { class: 'num' }, fmt(t.rowUlp)),
      h('td', { class: 'num' }, fmt(t.maxAbs)),
      h('td', { class: 'num' }, fmt(t.maxRel)),
      h('td', {}, t.first ? `row ${t.first.row}, col ${t.first.col}: ${fmt(t.first.a, 5)} vs ${fmt(t.first.b, 5)}` : '-'),
    ];
    if (withExact) {
      const e = t.exact;
      cells.push(
        h('td', { class: 'num' }, e ? fmt(e.a.maxUlp) : '-'),
        h('td', { class: 'num' }, e ? fmt(e.b.maxUlp) : '-'),
        h('td', { class: `xc-attr ${e?.attributed ?? ''}` }, e ? attributedText(pair, e.attributed, e.fartherA, e.fartherB) : 'no float64 value'),
      );
    }
    return h('tr', {}, ...cells);
  });
  return h('table', { class: 'grid xc-worst' }, h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))), h('tbody', {}, ...rows));
}

function attributedText(pair: XcheckPair, who: 'a' | 'b' | 'tie' | null, fa: number, fb: number): string {
  if (who === null) return 'none differ';
  if (who === 'tie') return `tie (${fa} / ${fb})`;
  return `${who === 'a' ? pair.a : pair.b} (${who === 'a' ? fa : fb} of ${fa + fb} elements)`;
}

function attributionBlock(pair: XcheckPair): HTMLElement {
  const at = attribution(pair);
  if (!at) return h('p', { class: 'muted xc-attribution none' }, 'No float64 evaluation in this report: differences are not attributed to a side.');
  return h(
    'p',
    { class: 'xc-attribution' },
    `Against the float64 evaluation (${at.withExact} tensors): ${at.a} differing tensors are attributed to ${pair.a} (farther from the exact value), ${at.b} to ${pair.b}, ${at.tie} tie. `,
    `Largest own error: ${pair.a} ${fmt(at.maxUlpA)} ulp, ${pair.b} ${fmt(at.maxUlpB)} ulp.`,
  );
}

/** The clicked tensor's row-level differences and float64 attribution. */
function renderDetail(pair: XcheckPair, name: string): HTMLElement[] {
  const d = tensorDetail(pair, name);
  const rows = d.rows.length
    ? h(
        'table',
        { class: 'grid xc-detail-rows' },
        h('thead', {}, h('tr', {}, ...['rows', 'differing elements', 'max ulp'].map((t) => h('th', {}, t)))),
        h(
          'tbody',
          {},
          ...d.rows.map((r) =>
            h(
              'tr',
              {},
              h('td', {}, r.end - r.start === 1 ? `row ${r.start}` : `rows [${r.start}, ${r.end})`),
              h('td', { class: 'num' }, String(r.differing)),
              h('td', { class: 'num' }, fmt(r.maxUlp)),
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No row differs: bit-identical.');
  return [
    h('h4', {}, d.name, ' ', h('button', { type: 'button', class: 'xc-detail-close' }, 'close')),
    h('p', {}, d.summary, d.first ? `; ${d.first}` : ''),
    h('p', { class: 'xc-detail-exact' }, d.attribution ?? 'No float64 evaluation of this tensor in the report (xcheck --exact adds it).'),
    rows,
  ];
}

function renderPair(pair: XcheckPair, index: number, metric: XcheckMetric, exact: boolean): HTMLElement {
  const ranks = rankGrid(pair, metric);
  const kinds = kindGrid(pair, metric);
  // one scale for both grids of the pair, to their real maximum
  const domain = metricDomain([...ranks.cells, ...kinds.cells].map((c) => c.value));
  const v = pair.verdict ?? pairVerdict(pair);
  const at = attributionText(v, pair);
  const flips = [
    ...v.routing.map((f) => `routing flips at layer ${f.layer}: ${f.rows.length} of ${f.count} rows`),
    ...v.selection.map((f) => `QSA selection flips at layer ${f.layer}: ${f.rows.length} of ${f.count} rows`),
  ];
  const detail = h('div', { class: 'xc-detail', hidden: true, 'aria-live': 'polite' });
  const open = (target: EventTarget | null): void => {
    const cell = (target as Element | null)?.closest?.('rect.xc-cell');
    if (cell) {
      detail.replaceChildren(...renderDetail(pair, cell.getAttribute('data-name')!));
      detail.hidden = false;
    } else if ((target as Element | null)?.closest?.('.xc-detail-close')) detail.hidden = true;
  };
  const section = h(
    'section',
    { class: 'xc-pair', 'data-pair': index },
    h('h3', {}, `${pair.a} (a) against ${pair.b} (b)`),
    h('p', { class: `xc-verdict ${v.kind}` }, h('strong', {}, 'Verdict: '), v.line),
    h('p', { class: 'headline xc-headline' }, pairHeadline(pair)),
    at ? h('p', { class: 'xc-attribution-sides' }, at) : null,
    flips.length ? h('ul', { class: 'xc-flips' }, ...flips.map((f) => h('li', {}, f))) : null,
    attributionBlock(pair),
    renderLegend(metric, domain),
    ranks.cells.length
      ? renderGrid(
          ranks,
          domain,
          'rank',
          `Each rank's own values per sub-layer step (rows, graph order): its partial sums before the collective and the collective's output on that rank (columns grouped by rank). A cell's rows are the ones that rank holds. Click a cell for that tensor's rows and its float64 attribution.`,
        )
      : h('p', { class: 'muted' }, 'No per-rank values (`*.partial.r{k}`, `*.out.r{k}`) in this pair.'),
    kinds.cells.length
      ? renderGrid(
          kinds,
          domain,
          'kind',
          'Values of all T rows (the golden-dump names) per layer (rows) and tensor kind (columns); blank: that layer has no such value. Click a cell for its rows.',
        )
      : h('p', { class: 'muted' }, 'No values of all T rows in this pair.'),
    detail,
    h('h4', {}, 'Worst tensors'),
    worstTable(pair, exact),
  );
  section.addEventListener('click', (e) => open(e.target));
  section.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') open(e.target);
  });
  return section;
}

/** `source`: where the report came from, e.g. "file report.json" or "live run". */
export function renderXcheckReport(report: XcheckReport, metric: XcheckMetric, source: string): HTMLElement {
  const facts = [
    `config ${report.config}`,
    `T ${report.tokens}`,
    `tp ${report.tp}`,
    `seed ${report.seed}`,
    report.weights ? `weights ${report.weights}` : '',
    report.maxUlpGate !== null ? `--max-ulp ${report.maxUlpGate}: ${report.ok ? 'passed' : 'exceeded'}` : '',
  ].filter(Boolean);
  const runs = report.runs.length
    ? h(
        'table',
        { class: 'grid xc-runs' },
        h('thead', {}, h('tr', {}, ...['spec', 'backend', 'device', 'SP', 'chunk', 'reduce', 'seconds'].map((c) => h('th', {}, c)))),
        h(
          'tbody',
          {},
          ...report.runs.map((r) =>
            h(
              'tr',
              {},
              h('td', {}, r.spec),
              h('td', {}, r.backend),
              h('td', { class: 'xc-device' }, r.device),
              h('td', {}, r.sp ? 'sharded' : 'off'),
              h('td', { class: 'num' }, String(r.chunk)),
              h('td', {}, r.reduce),
              h('td', { class: 'num' }, r.seconds.toFixed(2)),
            ),
          ),
        ),
      )
    : null;
  const golden = report.golden
    ? h(
        'p',
        { class: 'muted' },
        `Golden file ${report.golden.file}${report.golden.unused.length ? `; in it but not compared: ${report.golden.unused.join(', ')}` : ''}${report.golden.notCompared.length ? `; the run's but not in it, not compared: ${report.golden.notCompared.join(', ')}` : ''}`,
      )
    : null;
  return h(
    'div',
    { class: 'xc-report' },
    h(
      'p',
      { class: 'xc-source' },
      `${source}: ${facts.join(', ')}; ${report.pairs.length} pair${report.pairs.length === 1 ? '' : 's'}${report.exact ? ', with the float64 evaluation' : ''}.`,
    ),
    runs,
    golden,
    ...report.pairs.map((p, i) => renderPair(p, i, metric, report.exact)),
  );
}
