// The run view: both runs' totals, the heatmap and the per-step table of collectives, HC
// rows and stream differences.
import { getConfig } from '@hcsp/core';
import type { RunReport, RunSide, RunSideReport } from '../run/runComparison.ts';
import { heatmapModel } from '../run/heatmapModel.ts';
import { stepTable, type StepRow } from '../run/stepTable.ts';
import { stepTitle } from '../run/stepTitle.ts';
import type { StepCollective, StepTraffic } from '../run/stepTraffic.ts';
import { h } from './dom.ts';
import { formatBytes, perRank } from './format.ts';
import { HEATMAP_MAX_BINS, renderHeatmap } from './renderHeatmap.ts';

const sideLabel = (side: RunSide): string => `SP ${side.sp}, ${side.reduce}`;
const fmtUlp = (u: number): string => (u === 0 ? '0' : u.toFixed(3));

function totals(name: string, r: RunSideReport): HTMLElement {
  const bytes = r.stats.commBytesPerRank;
  const kinds = (['allReduce', 'allGather', 'reduceScatter'] as const).filter((k) => bytes.some((b) => b[k] > 0));
  return h(
    'div',
    { class: 'run-totals' },
    h('h4', {}, `run ${name}: ${sideLabel(r.side)}`),
    // SP off reaches the planner as "variable = 0", so its gate reason would name the variable
    h(
      'p',
      {},
      `${r.plan.sp ? `sharded from layer ${r.plan.spStartLayer}, C = ${r.plan.chunk}` : r.side.sp === 'off' ? 'not sharded (SP off)' : `not sharded (${r.plan.reason})`}; ${r.nodes} graph nodes in ${r.stats.seconds.toFixed(2)} s`,
    ),
    h('p', {}, `HC rows / rank: ${perRank(r.stats.hcRowsPerRank)}`),
    ...kinds.map((k) =>
      h(
        'p',
        {},
        `${k} bytes sent / rank: ${perRank(
          bytes.map((b) => b[k]),
          formatBytes,
        )}`,
      ),
    ),
  );
}

/** what one rank sends: bytes and the rows' worth of the collective's input they hold */
function sent(c: StepCollective): string {
  const rows = (v: number): string => String(Math.round(v * 100) / 100);
  const [b0, r0] = [c.bytesPerRank[0], c.rowsSentPerRank[0]];
  if (c.bytesPerRank.every((b) => b === b0)) return `sends ${formatBytes(b0)} = ${rows(r0)} rows / rank`;
  return `sends by rank: ${c.bytesPerRank.map((b, r) => `${formatBytes(b)} = ${rows(c.rowsSentPerRank[r])} rows`).join(', ')}`;
}

function trafficCell(t: StepTraffic | null): HTMLElement {
  if (!t || t.collectives.length === 0) return h('td', { class: 'muted' }, '-');
  return h(
    'td',
    {},
    ...t.collectives.map((c) =>
      h(
        'div',
        { class: 'coll' },
        h('b', {}, c.kind),
        `${c.algorithm ? ` (${c.algorithm})` : ''} [${c.inShape.join(',')}]→[${c.outShape.join(',')}] · ${sent(c)}`,
      ),
    ),
  );
}

type Title = (step: string) => string;

function rowOf(r: StepRow, title: Title): HTMLElement[] {
  const hc = (t: StepTraffic | null) => h('td', { class: 'num' }, t?.hcRowsPerRank.some((v) => v > 0) ? perRank(t.hcRowsPerRank) : '-');
  const diffs = r.diffs.length ? r.diffs : [null];
  return diffs.map((d, i) => {
    const first = i === 0;
    const span = diffs.length;
    // the step's traffic cells span its diff lines (the exit has two: MTP state and h)
    const cells: HTMLElement[] = first ? [h('td', { class: 'step' }, title(r.step)), trafficCell(r.a), hc(r.a), trafficCell(r.b), hc(r.b)] : [];
    if (span > 1)
      cells.forEach((c) => {
        c.setAttribute('rowspan', String(span));
      });
    if (!d) return h('tr', {}, ...cells, h('td', { colspan: 5, class: 'muted' }, 'no stream compared'));
    const pad = d.padNonZeroA + d.padNonZeroB;
    const rep = d.replicaMismatchA + d.replicaMismatchB;
    return h(
      'tr',
      { class: d.differing > 0 ? 'differs' : '' },
      ...cells,
      h('td', {}, d.step.startsWith('exit') ? d.step.slice('exit: '.length) : d.shardedA ? 'streams (shards)' : 'streams'),
      h('td', { class: 'num' }, `${d.differing} / ${d.count}`),
      h('td', { class: 'num' }, fmtUlp(d.maxRowUlp)),
      d.shardedA || d.shardedB ? h('td', { class: pad ? 'bad' : 'ok' }, pad ? `${pad} nonzero` : 'zero') : h('td', { class: 'muted' }, 'none'),
      h('td', { class: rep ? 'bad' : 'ok' }, rep ? `${rep} differ` : 'agree'),
    );
  });
}

function table(report: RunReport, title: Title): HTMLElement {
  const a = sideLabel(report.a.side);
  const b = sideLabel(report.b.side);
  const head = h(
    'tr',
    {},
    ...[
      'step',
      `collectives a (${a})`,
      'HC rows a',
      `collectives b (${b})`,
      'HC rows b',
      'compared',
      'differing',
      'max row-ulp',
      'padding rows',
      'rank replicas',
    ].map((t) => h('th', {}, t)),
  );
  return h('table', { class: 'grid steps' }, h('thead', {}, head), h('tbody', {}, ...stepTable(report).flatMap((r) => rowOf(r, title))));
}

export function renderRun(report: RunReport): HTMLElement {
  const { a, b, diffs, request } = report;
  const config = getConfig(request.config);
  const title: Title = (step) => stepTitle(step, config, request.subLayers);
  const differing = diffs.filter((d) => d.differing > 0);
  const worst = Math.max(0, ...diffs.map((d) => d.maxRowUlp));
  const headline = differing.length
    ? `${differing.length} of ${diffs.length} compared points differ (first at ${title(differing[0].step)}); worst ${fmtUlp(worst)} row-scale ulp.`
    : `All ${diffs.length} compared points are bit-identical.`;
  // the heatmap's columns follow the sharded run's rows (run a's when both are, none when neither is)
  const sharded = a.plan.sp ? a.plan : b.plan;
  const model = heatmapModel(diffs, sharded.tokens, sharded.chunk, sharded.tp, sharded.sp, HEATMAP_MAX_BINS);
  return h(
    'div',
    { class: 'run' },
    h(
      'p',
      { class: 'headline' },
      `${request.config}, T = ${request.tokens}, tp ${request.tp}, seed ${request.seed}, sub-layers: ${report.subLayersName}. Run a (${sideLabel(a.side)}) against run b (${sideLabel(b.side)}): ${headline}`,
    ),
    h('div', { class: 'totals' }, totals('a', a), totals('b', b)),
    renderHeatmap(model, title),
    h(
      'p',
      { class: 'muted' },
      "Each step compares the streams entering it (after the previous sub-layer's combine; a PLE step: before the PLE adds to them); the exit compares the gathered MTP state and the mixer output h. A PLE layer issues no collective: every rank computes it on all T rows.",
    ),
    table(report, title),
  );
}
