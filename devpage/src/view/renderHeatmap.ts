// The (step, row) heatmap: one line per sub-layer step (and the exits), one column per
// global row (or bin of rows), coloured by the max row-scale ulp difference between the
// two runs. Rank block boundaries of the sharded run are drawn across it, so differences
// that start or stop at a block boundary (the ring's chunk ownership) line up with them.
import type { HeatmapModel } from '../run/heatmapModel.ts';
import { ULP_CLASSES, ulpColor } from '../run/heatmapModel.ts';
import { h, s } from './dom.ts';
import { PADDING_FILL, rankColor } from './rankColors.ts';
import { paddingPattern } from './svgDefs.ts';

const WIDTH = 960;
const LABEL = 140;
const LINE = 14;
const STRIP = 12;
/** columns that fit at >= 2 px each */
export const HEATMAP_MAX_BINS = Math.floor((WIDTH - LABEL - 10) / 2);

/** `title` labels a line's step (stepTitle.ts). */
export function renderHeatmap(m: HeatmapModel, title: (step: string) => string): HTMLElement {
  const plotW = WIDTH - LABEL - 10;
  const x = (row: number): number => LABEL + (row / m.rows) * plotW;
  const top = STRIP + 6;
  const height = top + m.lines.length * LINE + 22;
  const svg = s(
    'svg',
    { width: WIDTH, height, viewBox: `0 0 ${WIDTH} ${height}`, class: 'heatmap', role: 'img', 'aria-label': 'stream differences per step and row' },
    paddingPattern(),
  );
  // ownership strip: which rank holds each row in the sharded run
  svg.append(s('text', { x: 0, y: STRIP - 2, class: 'lane-label' }, m.rankStarts.length ? 'owner rank' : 'replicated'));
  m.rankStarts.forEach((start, r) => {
    const end = r + 1 < m.rankStarts.length ? m.rankStarts[r + 1] : m.rows;
    svg.append(
      s('rect', { x: x(start), y: 0, width: x(end) - x(start), height: STRIP, fill: rankColor(r) }, s('title', {}, `rank ${r}: rows [${start}, ${end})`)),
    );
    svg.append(s('text', { x: x(start) + 3, y: STRIP - 2, class: 'strip-label' }, `r${r}`));
  });
  if (m.rows > m.tokens) svg.append(s('rect', { x: x(m.tokens), y: 0, width: Math.max(2, x(m.rows) - x(m.tokens)), height: STRIP, fill: PADDING_FILL }));
  m.lines.forEach((line, i) => {
    const y = top + i * LINE;
    svg.append(s('text', { x: 0, y: y + LINE - 3, class: 'lane-label' }, title(line.step)));
    svg.append(s('rect', { x: LABEL, y, width: x(m.tokens) - LABEL, height: LINE - 1, fill: ulpColor(0) }));
    if (m.rows > m.tokens) {
      const fill = line.sharded ? PADDING_FILL : '#ffffff';
      svg.append(
        s(
          'rect',
          { x: x(m.tokens), y, width: Math.max(2, x(m.rows) - x(m.tokens)), height: LINE - 1, fill },
          s('title', {}, line.sharded ? `padding rows [${m.tokens}, ${m.rows})` : 'not sharded at this step: no padding rows'),
        ),
      );
    }
    for (const c of line.cells) {
      if (c.differing === 0) continue;
      const rowsText = c.end - c.start === 1 ? `row ${c.start}` : `rows [${c.start}, ${c.end})`;
      svg.append(
        s(
          'rect',
          { x: x(c.start), y, width: Math.max(1, x(c.end) - x(c.start)), height: LINE - 1, fill: ulpColor(c.ulp), class: 'diff-cell' },
          s('title', {}, `${title(line.step)} ${rowsText}: ${c.differing} elements differ, max ${c.ulp.toFixed(3)} row-scale ulp`),
        ),
      );
    }
  });
  const bottom = top + m.lines.length * LINE;
  for (const start of m.rankStarts.slice(1)) svg.append(s('line', { x1: x(start), x2: x(start), y1: 0, y2: bottom, class: 'rank-boundary' }));
  svg.append(s('text', { x: LABEL, y: bottom + 14, class: 'tick-label' }, 'row 0'));
  svg.append(s('text', { x: x(m.tokens), y: bottom + 14, class: 'tick-label', 'text-anchor': 'end' }, `T = ${m.tokens}`));
  const legend = h(
    'div',
    { class: 'legend' },
    ...ULP_CLASSES.map((c) => h('span', {}, h('i', { style: `background:${c.color}` }), c.label)),
    h('span', {}, h('i', { class: 'hatch' }), 'padding'),
  );
  const binNote = m.binRows > 1 ? ` Each column is ${m.binRows} rows (the worst row shown).` : '';
  return h(
    'figure',
    { class: 'heatmap-figure' },
    legend,
    svg,
    h(
      'figcaption',
      {},
      `Max row-scale ulp difference of the streams entering each step (lines) per global row (columns); white lines: rank block boundaries; hatched: the sharded run's padding rows.${binNote}`,
    ),
  );
}
