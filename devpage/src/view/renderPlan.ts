// The plan view: the gate decision, where sharding starts, the quant path, the exit gather,
// the row bands and the collectives one forward issues.
import { layerList, SP_MIN_TOKENS_ENV } from '@hcsp/core';
import type { PlanView } from '../plan/planView.ts';
import { h } from './dom.ts';
import { formatBytes } from './format.ts';
import { renderBands } from './renderBands.ts';

function facts(v: PlanView): HTMLElement {
  const { plan } = v;
  const rows: [string, string][] = [
    ['sharded', plan.sp ? `yes${plan.forced ? ' (forced: SP on skips the token thresholds)' : ''}` : `no: ${plan.reason}`],
    ['rows per rank C', plan.sp ? `${plan.chunk} = ceil(${plan.tokens} / ${plan.tp})` : `${plan.tokens} (all rows on every rank)`],
    ['layers', `[${plan.layers[0]}, ${plan.layers[1]})`],
    [
      'sharding starts',
      plan.spStartLayer === null
        ? '-'
        : `layer ${plan.spStartLayer} (after the last PLE layer): ${v.unshardedSubLayers} sub-layers unsharded, ${v.shardedSubLayers} sharded`,
    ],
    ['HC rows per rank per step', plan.sp ? `${v.hcRowsPerStep} instead of ${plan.tokens}` : String(v.hcRowsPerStep)],
    ['FP8 input quant', v.quantText],
    ['gathered at the exit', v.gatherText],
  ];
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, val]) => [h('dt', {}, k), h('dd', {}, val)]));
}

function collectives(v: PlanView): HTMLElement {
  if (v.collectives.length === 0) return h('p', { class: 'muted' }, `No collectives (tp ${v.plan.tp}).`);
  const head = h(
    'tr',
    {},
    ...['where', 'collective', 'algorithm', 'layers', 'per rank in', 'per rank out', 'bytes sent / rank', 'times', 'total / rank'].map((t) => h('th', {}, t)),
  );
  const body = v.collectives.map((c) =>
    h(
      'tr',
      {},
      h('td', {}, c.where),
      h('td', {}, c.op),
      h('td', {}, c.algorithm ?? '-'),
      h('td', {}, layerList(c.layers)),
      h('td', { class: 'num' }, c.input),
      h('td', { class: 'num' }, c.output),
      h('td', { class: 'num' }, formatBytes(c.bytesPerRank)),
      h('td', { class: 'num' }, `x ${c.count}`),
      h('td', { class: 'num' }, formatBytes(c.bytesPerRank * c.count)),
    ),
  );
  const total = h('tr', { class: 'total' }, h('td', { colspan: 8 }, 'one forward'), h('td', { class: 'num plan-total' }, formatBytes(v.totalBytesPerRank)));
  const rows = [...body, total];
  if (v.spOffBytesPerRank !== null) {
    const ratio = v.spOffBytesPerRank > 0 ? ` (SP on sends ${(v.totalBytesPerRank / v.spOffBytesPerRank).toFixed(2)}x)` : '';
    rows.push(
      h(
        'tr',
        { class: 'total' },
        h('td', { colspan: 8 }, `the same forward with SP off${ratio}`),
        h('td', { class: 'num plan-sp-off' }, formatBytes(v.spOffBytesPerRank)),
      ),
    );
  }
  return h('table', { class: 'grid' }, h('thead', {}, head), h('tbody', {}, ...rows));
}

export function renderPlan(v: PlanView): HTMLElement {
  return h(
    'div',
    { class: 'plan' },
    facts(v),
    renderBands(v),
    h('h3', {}, 'Collectives of one forward, MTP head included (as `hcsp plan` lists them; bytes each rank sends, nccl-tests accounting)'),
    collectives(v),
    h('p', { class: 'muted' }, `Token floor: ${SP_MIN_TOKENS_ENV} (unset = 1024, 0 disables). Sharding also needs T > 1024 so both paths quantize alike.`),
  );
}
