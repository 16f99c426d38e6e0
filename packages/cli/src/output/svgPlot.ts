// Standalone SVG charts drawn by a maintained plotting library: a Vega-Lite spec compiled to
// Vega and rendered headless in Node (`renderer: 'none'`, then toSVG), no canvas, no browser,
// no fonts or URLs (sans-serif, data inline). Used by the xcheck HTML report (differences
// against depth, layer x tensor heatmaps) and by the benchmarks (time against T); general:
// several series with a legend, linear / log / symlog axes.
//
// Vega's renderer is asynchronous, so both functions return a Promise. Vega is imported on
// first use: the bundled command reads it only when a chart is drawn.
import type { TopLevelSpec } from 'vega-lite';

export type AxisScale = 'linear' | 'log' | 'symlog';

export interface PlotAxis {
  label: string;
  /** a log axis (points with a value <= 0 on it are left out, and the subtitle says how many) */
  log?: boolean;
  /** the scale; overrides `log`. symlog: logarithmic away from 0, linear near it (takes 0 and negatives) */
  scale?: AxisScale;
  /** a fixed domain [min, max] (default: the data's, with zero on a linear y axis) */
  domain?: [number, number];
  /** whole-number ticks only (layers, ranks, token counts) */
  integer?: boolean;
  /** the ticks, exactly these values (e.g. powers of ten on a log axis: logTicks) */
  ticks?: number[];
  /** a tick's label by its value (e.g. -1: 'embed'); other ticks keep their number */
  tickLabels?: ReadonlyMap<number, string>;
}

/** Powers of ten from below `min` to above `max` (both > 0): readable ticks of a log axis. */
export function logTicks(min: number, max: number): number[] {
  if (!(min > 0) || !(max >= min) || !Number.isFinite(max)) return [];
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) out.push(Number(`1e${e}`));
  return out;
}

export interface PlotSeries {
  name: string;
  points: [number, number][];
}

export interface LinePlot {
  title: string;
  x: PlotAxis;
  y: PlotAxis;
  /** drawn in this order, legend in this order; names must differ */
  series: PlotSeries[];
  /** the plotting area in pixels (default 480 x 260) */
  width?: number;
  height?: number;
  /** the prefix of the SVG's ids (see render) */
  idPrefix?: string;
}

export interface HeatmapAxis {
  label: string;
  /** the categories, in order (x: left to right, y: top to bottom); must differ */
  labels: string[];
}

export interface Heatmap {
  title: string;
  x: HeatmapAxis;
  y: HeatmapAxis;
  /** values[yi][xi]; null (or a non-finite number): no cell */
  values: (number | null)[][];
  colour: {
    label: string;
    /** a Vega colour scheme name (default 'viridis') */
    scheme?: string;
    /** log: continuous from the smallest positive value to the largest (the colour bar labelled at both ends and the powers of ten between); 0 cells drawn grey */
    scale?: AxisScale;
    domain?: [number, number];
  };
  /** each cell's hover text (an SVG <title>), values' shape; default: its labels and value */
  notes?: (string | null)[][];
  /** pixels per cell (default 14 x 14) */
  cell?: [number, number];
  /** the prefix of the SVG's ids (see render) */
  idPrefix?: string;
}

function scaleOf(axis: { log?: boolean; scale?: AxisScale }): AxisScale {
  return axis.scale ?? (axis.log ? 'log' : 'linear');
}

function uniqueNames(names: readonly string[], what: string): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) throw new Error(`${what}: the name ${JSON.stringify(n)} appears twice`);
    seen.add(n);
  }
}

let svgCount = 0;

/**
 * The SVG of a compiled spec. Its ids (gradients, clips) are renumbered in order as
 * `<idPrefix><n>`, so that the same chart gives the same text and charts with different
 * prefixes can be inlined in one HTML document without their ids meeting (default prefix:
 * one not used before in this process).
 */
async function render(spec: TopLevelSpec, idPrefix: string | undefined): Promise<string> {
  const [vl, vega] = await Promise.all([import('vega-lite'), import('vega')]);
  const compiled = vl.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    const prefix = idPrefix ?? `hcsp-plot${++svgCount}-`;
    const ids = new Map<string, string>();
    for (const m of svg.matchAll(/\bid="([^"]+)"/g)) if (!ids.has(m[1])) ids.set(m[1], `${prefix}${ids.size}`);
    const to = (id: string): string => ids.get(id) ?? id;
    return (
      svg
        // a mark's aria-label as an SVG <title> too: what a viewer shows on hover
        .replace(
          /<(path|circle|rect|line|text)\b([^>]*?\baria-label="([^"]*)"[^>]*?role="graphics-symbol"[^>]*?)\/>/g,
          (_m, tag: string, attrs: string, label: string) => `<${tag}${attrs}><title>${label}</title></${tag}>`,
        )
        .replace(/\bid="([^"]+)"/g, (_m, id: string) => `id="${to(id)}"`)
        .replace(/url\(#([^)]+)\)/g, (_m, id: string) => `url(#${to(id)})`)
        .replace(/href="#([^"]+)"/g, (_m, id: string) => `href="#${to(id)}"`)
    );
  } finally {
    view.finalize();
  }
}

const CONFIG = {
  font: 'sans-serif',
  background: 'white',
  view: { stroke: '#ccc' },
  axis: { labelFontSize: 10, titleFontSize: 11 },
  legend: { labelFontSize: 10, titleFontSize: 11, labelLimit: 320 },
  title: { fontSize: 13, anchor: 'start' as const },
};

/** A line chart with a point per (x, y), one line and colour per series, a legend; as standalone SVG text. */
export async function linePlotSvg(plot: LinePlot): Promise<string> {
  uniqueNames(
    plot.series.map((s) => s.name),
    `plot ${JSON.stringify(plot.title)}`,
  );
  const xScale = scaleOf(plot.x);
  const yScale = scaleOf(plot.y);
  const values: { x: number; y: number; series: string; order: number; label: string }[] = [];
  let dropped = 0;
  for (const s of plot.series) {
    s.points.forEach(([x, y], order) => {
      const fits = (v: number, scale: AxisScale): boolean => Number.isFinite(v) && (scale !== 'log' || v > 0);
      if (fits(x, xScale) && fits(y, yScale))
        values.push({ x, y, series: s.name, order, label: `${s.name}: ${plot.x.label} ${plot.x.tickLabels?.get(x) ?? x}, ${plot.y.label} ${y}` });
      else dropped++;
    });
  }
  const axisScale = (axis: PlotAxis, scale: AxisScale, isY: boolean): Record<string, unknown> => ({
    type: scale,
    ...(axis.domain ? { domain: axis.domain } : {}),
    ...(scale === 'linear' && !isY ? { zero: false } : {}),
  });
  const axisOf = (axis: PlotAxis): Record<string, unknown> => ({
    ...(axis.integer ? { format: 'd', tickMinStep: 1 } : {}),
    ...(axis.ticks ? { values: axis.ticks, format: axis.integer ? 'd' : '~g' } : {}),
    ...(axis.tickLabels?.size
      ? { labelExpr: `${[...axis.tickLabels].map(([v, l]) => `datum.value === ${v} ? ${JSON.stringify(l)} : `).join('')}datum.label` }
      : {}),
  });
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: plot.title,
      ...(dropped ? { subtitle: `${dropped} point${dropped === 1 ? '' : 's'} not shown (not finite, or <= 0 on a log axis)` } : {}),
    },
    width: plot.width ?? 480,
    height: plot.height ?? 260,
    data: { values },
    mark: { type: 'line', point: { filled: true, size: 36 }, strokeWidth: 1.5 },
    encoding: {
      x: { field: 'x', type: 'quantitative', title: plot.x.label, scale: axisScale(plot.x, xScale, false), axis: axisOf(plot.x) },
      y: { field: 'y', type: 'quantitative', title: plot.y.label, scale: axisScale(plot.y, yScale, true), axis: axisOf(plot.y) },
      color: {
        field: 'series',
        type: 'nominal',
        title: null,
        scale: { domain: plot.series.map((s) => s.name) },
        legend: plot.series.length > 1 ? { orient: 'bottom', direction: 'vertical' } : null,
      },
      // Points joined in the order given, not sorted by x.
      order: { field: 'order', type: 'quantitative' },
      // Each point's aria-label in the SVG: its series and values.
      description: { field: 'label' },
    },
    config: CONFIG,
  } as TopLevelSpec;
  return render(spec, plot.idPrefix);
}

/** A heatmap: a cell per (x label, y label) with a value, coloured by it, with a colour legend; as standalone SVG text. */
export async function heatmapSvg(map: Heatmap): Promise<string> {
  uniqueNames(map.x.labels, `heatmap ${JSON.stringify(map.title)} x`);
  uniqueNames(map.y.labels, `heatmap ${JSON.stringify(map.title)} y`);
  if (map.values.length !== map.y.labels.length || map.values.some((row) => row.length !== map.x.labels.length)) {
    throw new Error(`heatmap ${JSON.stringify(map.title)}: values must be ${map.y.labels.length} rows of ${map.x.labels.length}`);
  }
  const scale = map.colour.scale ?? 'linear';
  const values: { x: string; y: string; v: number; note: string }[] = [];
  const zeros: { x: string; y: string; v: number; note: string }[] = [];
  let dropped = 0;
  map.values.forEach((row, yi) => {
    row.forEach((v, xi) => {
      if (v === null) return;
      const cell = {
        x: map.x.labels[xi],
        y: map.y.labels[yi],
        v,
        note: map.notes?.[yi]?.[xi] ?? `${map.x.label}: ${map.x.labels[xi]}; ${map.y.label}: ${map.y.labels[yi]}; ${map.colour.label}: ${v}`,
      };
      if (!Number.isFinite(v)) dropped++;
      else if (scale === 'log' && v === 0) zeros.push(cell);
      else if (scale !== 'log' || v > 0) values.push(cell);
      else dropped++;
    });
  });
  const [cw, ch] = map.cell ?? [14, 14];
  // a log scale spans the data's positive range exactly (no rounding out to nice values), its bar labelled at both ends
  const lo = values.reduce((m, c) => Math.min(m, c.v), Infinity);
  const hi = values.reduce((m, c) => Math.max(m, c.v), -Infinity);
  const domain = map.colour.domain ?? (scale === 'log' && values.length ? ([lo, hi] as [number, number]) : undefined);
  const legendValues =
    scale === 'log' && domain ? [domain[0], ...logTicks(domain[0], domain[1]).filter((t) => t > domain[0] * 1.5 && t < domain[1] / 1.5), domain[1]] : undefined;
  const notes = [
    dropped ? `${dropped} cell${dropped === 1 ? '' : 's'} not shown (not finite, or < 0 on a log scale)` : '',
    zeros.length ? `grey: 0 (${zeros.length} cell${zeros.length === 1 ? '' : 's'})` : '',
  ].filter(Boolean);
  const xEnc = { field: 'x', type: 'ordinal', title: map.x.label, scale: { domain: map.x.labels }, axis: { labelAngle: 0, labelOverlap: 'parity' } };
  const yEnc = { field: 'y', type: 'ordinal', title: map.y.label, scale: { domain: map.y.labels }, axis: { labelLimit: 260 } };
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: map.title, ...(notes.length ? { subtitle: notes.join('; ') } : {}) },
    width: Math.max(1, map.x.labels.length) * cw,
    height: Math.max(1, map.y.labels.length) * ch,
    encoding: { x: xEnc, y: yEnc, description: { field: 'note' } },
    layer: [
      {
        data: { values },
        mark: { type: 'rect' },
        encoding: {
          color: {
            field: 'v',
            type: 'quantitative',
            title: map.colour.label,
            scale: { type: scale, scheme: map.colour.scheme ?? 'viridis', ...(domain ? { domain, nice: false } : {}) },
            legend: {
              type: 'gradient',
              ...(legendValues ? { values: legendValues, format: '~g' } : {}),
              gradientLength: Math.max(120, Math.min(260, map.y.labels.length * ch)),
            },
          },
        },
      },
      { data: { values: zeros }, mark: { type: 'rect', fill: '#d9dde3' } },
    ],
    config: { ...CONFIG, view: { stroke: null } },
  } as TopLevelSpec;
  return render(spec, map.idPrefix);
}
