// The row-band diagram: one lane per rank over the T (or C * tp) rows, each rank's owned
// real rows in its colour and its padding rows hatched.
import type { PlanView } from '../plan/planView.ts';
import { h, s } from './dom.ts';
import { PADDING_FILL, rankColor } from './rankColors.ts';
import { paddingPattern } from './svgDefs.ts';

const WIDTH = 960;
const LABEL = 64;
const LANE = 22;
const GAP = 6;
/** padding can be 3 rows of 16384: keep it visible */
const MIN_PAD_PX = 4;

export function renderBands(v: PlanView): HTMLElement {
  const { plan, bands, diagramRows } = v;
  const plotW = WIDTH - LABEL - 150;
  const x = (row: number): number => LABEL + (row / diagramRows) * plotW;
  const height = bands.length * (LANE + GAP) + 28;
  const svg = s(
    'svg',
    { width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, class: 'bands', role: 'img', 'aria-label': 'rows per rank' },
    paddingPattern(),
  );
  bands.forEach((b, i) => {
    const y = i * (LANE + GAP);
    svg.append(s('text', { x: 0, y: y + LANE * 0.7, class: 'lane-label' }, `rank ${b.rank}`));
    svg.append(s('rect', { x: LABEL, y, width: plotW, height: LANE, fill: '#f3f4f6' }));
    if (b.realRows > 0) {
      svg.append(
        s(
          'rect',
          { x: x(b.start), y, width: Math.max(1, x(b.realEnd) - x(b.start)), height: LANE, fill: plan.sp ? rankColor(b.rank) : '#9ca3af' },
          s('title', {}, `rank ${b.rank}: rows [${b.start}, ${b.realEnd}) (${b.realRows} real)`),
        ),
      );
    }
    if (b.padRows > 0) {
      const w = Math.max(MIN_PAD_PX, x(b.end) - x(b.realEnd));
      svg.append(
        s(
          'rect',
          { x: x(b.end) - w, y, width: w, height: LANE, fill: PADDING_FILL, stroke: '#dc2626' },
          s('title', {}, `rank ${b.rank}: padding rows [${b.realEnd}, ${b.end}) (zero streams)`),
        ),
      );
    }
    const note = plan.sp ? `${b.realRows} rows${b.padRows ? ` + ${b.padRows} pad` : ''}` : `all ${b.realRows} rows (replicated)`;
    svg.append(s('text', { x: LABEL + plotW + 8, y: y + LANE * 0.7, class: b.padRows ? 'lane-note pad' : 'lane-note' }, note));
  });
  const axisY = bands.length * (LANE + GAP) + 12;
  const ticks = plan.sp ? [...bands.map((b) => b.start), diagramRows] : [0, diagramRows];
  for (const row of ticks) {
    svg.append(s('line', { x1: x(row), x2: x(row), y1: 0, y2: axisY - 8, class: 'tick' }));
    svg.append(s('text', { x: x(row), y: axisY + 8, class: 'tick-label', 'text-anchor': 'middle' }, String(row)));
  }
  if (plan.sp && plan.paddedTokens > plan.tokens) {
    svg.append(s('line', { x1: x(plan.tokens), x2: x(plan.tokens), y1: 0, y2: axisY - 8, class: 'tokens-line' }, s('title', {}, `T = ${plan.tokens}`)));
  }
  return h(
    'figure',
    { class: 'bands-figure' },
    svg,
    h(
      'figcaption',
      {},
      plan.sp
        ? `T = ${plan.tokens} rows split into ${plan.tp} shards of C = ${plan.chunk} rows (padded to ${plan.paddedTokens}); hatched: padding rows (zero streams).`
        : `Not sharded: every rank holds all T = ${plan.tokens} rows.`,
    ),
  );
}
