// Where two runs' discrete choices differ, row by row, per layer: the MoE router's experts
// (`layers.{i}.mlp.topk_ids` and the MTP head's `mtp.mlp.topk_ids` [T, topK], compared as sets:
// the same experts in another order route alike) and the QSA selection (`layers.{i}.attn.kept` [T], the blocks each row keeps).
// A row whose choice flipped follows another computation from that sub-layer on, so its
// difference there is not arithmetic.
import type { AlignedTensor } from './tensorDiff.ts';

/** one layer's flips: the rows whose choice differs */
export interface RoutingDifference {
  layer: number;
  /** the rows (0-based token positions) whose chosen experts differ, ascending */
  rows: number[];
  /** rows compared */
  count: number;
}

/** `pattern`'s group 1 is the layer; a match without it is the MTP head's, at `mtpLayer` (skipped when absent) */
function flips(
  a: ReadonlyMap<string, AlignedTensor>,
  b: ReadonlyMap<string, AlignedTensor>,
  pattern: RegExp,
  asSet: boolean,
  mtpLayer?: number,
): RoutingDifference[] {
  const out: RoutingDifference[] = [];
  for (const [name, tb] of b) {
    const m = pattern.exec(name);
    const ta = a.get(name);
    if (!m || !ta) continue;
    const layer = m[1] !== undefined ? Number(m[1]) : mtpLayer;
    if (layer === undefined) continue;
    const [x, y] = [ta.tensor, tb.tensor];
    if (x.shape.length !== y.shape.length || x.shape.some((d, i) => d !== y.shape[i]) || ta.rowStart !== tb.rowStart || x.shape.length === 0) continue;
    const T = x.shape[0];
    const k = x.shape.length === 1 ? 1 : x.shape.slice(1).reduce((p, q) => p * q, 1);
    const rows: number[] = [];
    for (let t = 0; t < T; t++) {
      const ra = Array.from(x.data.subarray(t * k, (t + 1) * k));
      const rb = Array.from(y.data.subarray(t * k, (t + 1) * k));
      if (asSet) {
        ra.sort((p, q) => p - q);
        rb.sort((p, q) => p - q);
      }
      if (ra.some((v, i) => v !== rb[i])) rows.push(ta.rowStart + t);
    }
    if (rows.length > 0) out.push({ layer, rows, count: T });
  }
  return out.sort((p, q) => p.layer - q.layer);
}

/**
 * Every MoE layer both sides carry topk_ids for (same shape and rows) where some row's expert
 * set differs; the MTP head's at `mtpLayer` (the report's layer for MTP values, the exit layer)
 * when given.
 */
export function routingFlips(a: ReadonlyMap<string, AlignedTensor>, b: ReadonlyMap<string, AlignedTensor>, mtpLayer?: number): RoutingDifference[] {
  return flips(a, b, /^(?:layers\.(\d+)|mtp)\.mlp\.topk_ids$/, true, mtpLayer);
}

/** Every QSA layer both sides carry `attn.kept` for where some row keeps another number of blocks. */
export function selectionFlips(a: ReadonlyMap<string, AlignedTensor>, b: ReadonlyMap<string, AlignedTensor>): RoutingDifference[] {
  return flips(a, b, /^layers\.(\d+)\.attn\.kept$/, false);
}
