// Where two runs' MoE routers chose other experts: each layer's `layers.{i}.mlp.topk_ids`
// [T, topK] compared row by row as sets, so that a difference in a layer's MoE output can be
// told apart: from another expert choice (those rows) or from arithmetic (the others). Two
// rows holding the same experts in another order (a tie ranked otherwise) route alike.
import type { AlignedTensor } from './tensorDiff.ts';

export interface RoutingDifference {
  layer: number;
  /** the rows (0-based token positions) whose chosen experts differ, ascending */
  rows: number[];
  /** rows compared */
  count: number;
}

const TOPK_IDS = /^layers\.(\d+)\.mlp\.topk_ids$/;

/** Every layer both sides carry topk_ids for (same shape, all rows), where some row's experts differ; by layer. */
export function routingDifferences(a: ReadonlyMap<string, AlignedTensor>, b: ReadonlyMap<string, AlignedTensor>): RoutingDifference[] {
  const out: RoutingDifference[] = [];
  for (const [name, tb] of b) {
    const m = TOPK_IDS.exec(name);
    const ta = a.get(name);
    if (!m || !ta) continue;
    const [x, y] = [ta.tensor, tb.tensor];
    if (x.shape.length !== 2 || x.shape[0] !== y.shape[0] || x.shape[1] !== y.shape[1] || ta.rowStart !== tb.rowStart) continue;
    const [T, k] = x.shape;
    const rows: number[] = [];
    for (let t = 0; t < T; t++) {
      const sa = Array.from(x.data.subarray(t * k, (t + 1) * k)).sort((p, q) => p - q);
      const sb = Array.from(y.data.subarray(t * k, (t + 1) * k)).sort((p, q) => p - q);
      if (sa.some((v, i) => v !== sb[i])) rows.push(ta.rowStart + t);
    }
    if (rows.length > 0) out.push({ layer: Number(m[1]), rows, count: T });
  }
  return out.sort((p, q) => p.layer - q.layer);
}

/** "routing differs at rows 3, 17 (2 of 40)", the rows listed up to `shown` */
export function routingText(d: RoutingDifference, shown = 12): string {
  const list = d.rows.slice(0, shown).join(', ');
  const more = d.rows.length > shown ? `, ... (${d.rows.length - shown} more)` : '';
  return `routing differs at rows ${list}${more} (${d.rows.length} of ${d.count})`;
}
