// Where two runs' MoE routers chose other experts: each layer's `layers.{i}.mlp.topk_ids`
// (and the MTP head's `mtp.mlp.topk_ids`) [T, topK] compared row by row as sets, so that a difference in a layer's MoE output can be
// told apart: from another expert choice (those rows) or from arithmetic (the others). Two
// rows holding the same experts in another order (a tie ranked otherwise) route alike.
import type { AlignedTensor } from './tensorDiff.ts';
import { type RoutingDifference, routingFlips } from './flipDiff.ts';

/** Every layer both sides carry topk_ids for (same shape, all rows), where some row's experts differ; by layer (the MTP head's at `mtpLayer`, when given). */
export function routingDifferences(a: ReadonlyMap<string, AlignedTensor>, b: ReadonlyMap<string, AlignedTensor>, mtpLayer?: number): RoutingDifference[] {
  return routingFlips(a, b, mtpLayer);
}

/** "routing differs at rows 3, 17 (2 of 40)", the rows listed up to `shown` */
export function routingText(d: RoutingDifference, shown = 12): string {
  const list = d.rows.slice(0, shown).join(', ');
  const more = d.rows.length > shown ? `, ... (${d.rows.length - shown} more)` : '';
  return `routing differs at rows ${list}${more} (${d.rows.length} of ${d.count})`;
}
