// The (step, row) heatmap of stream differences as cells to draw: rows are binned when
// there are more than fit across the page (a bin shows its worst row), padding rows are
// marked, and each bin knows which rank owns it in the sharded run.
import type { StepDiff } from './streamDiff.ts';

export interface HeatCell {
  /** global rows [start, end) in this bin */
  start: number;
  end: number;
  /** max row-scale ulp difference over the bin's real rows; 0 = bit-identical */
  ulp: number;
  /** elements that differ over the bin's real rows */
  differing: number;
}

export interface HeatmapModel {
  /** x extent in rows: C * tp when run a is sharded (padding included), else T */
  rows: number;
  tokens: number;
  /** rows per bin */
  binRows: number;
  /** row where each rank's block starts in the sharded run (empty when unsharded) */
  rankStarts: number[];
  /** sharded: run a or run b held this step as per-rank shards (its padding rows exist) */
  lines: { step: string; sharded: boolean; cells: HeatCell[] }[];
}

/** Bins the per-row differences of every step into at most `maxBins` columns. */
export function heatmapModel(diffs: StepDiff[], tokens: number, chunk: number, tp: number, sharded: boolean, maxBins: number): HeatmapModel {
  if (!Number.isSafeInteger(maxBins) || maxBins < 1) throw new Error(`heatmap: maxBins must be a positive integer, got ${maxBins}`);
  const rows = sharded ? chunk * tp : tokens;
  const binRows = Math.ceil(rows / maxBins);
  const lines = diffs.map((d) => {
    if (d.rowUlp.length !== tokens) throw new Error(`heatmap: step ${d.step} has ${d.rowUlp.length} rows, expected T ${tokens}`);
    const cells: HeatCell[] = [];
    for (let start = 0; start < rows; start += binRows) {
      const end = Math.min(rows, start + binRows);
      let ulp = 0;
      let differing = 0;
      for (let t = start; t < Math.min(end, tokens); t++) {
        ulp = Math.max(ulp, d.rowUlp[t]);
        differing += d.rowDiffering[t];
      }
      cells.push({ start, end, ulp, differing });
    }
    return { step: d.step, sharded: d.shardedA || d.shardedB, cells };
  });
  return { rows, tokens, binRows, rankStarts: sharded ? Array.from({ length: tp }, (_, r) => r * chunk) : [], lines };
}

/**
 * Colour classes of the legend: upper bounds in row-scale ulps. The stand-in sub-layers
 * stay within 4; the full model's nonlinear sub-layers (MoE routing, attention, GDN)
 * carry a reduction-order difference further, past 16 by the exit at tp 4 with the ring.
 */
export const ULP_CLASSES: readonly { max: number; color: string; label: string }[] = [
  { max: 0, color: '#eef2f5', label: 'bit-identical' },
  { max: 0.5, color: '#fde68a', label: '<= 0.5' },
  { max: 1, color: '#fbbf24', label: '<= 1' },
  { max: 2, color: '#f97316', label: '<= 2' },
  { max: 4, color: '#dc2626', label: '<= 4' },
  { max: 8, color: '#991b1b', label: '<= 8' },
  { max: 16, color: '#581c87', label: '<= 16' },
  { max: Infinity, color: '#111827', label: '> 16' },
];

/** Fill of a cell with the given max row-scale ulp difference. */
export function ulpColor(ulp: number): string {
  if (!(ulp >= 0)) throw new Error(`heatmap: ulp must be >= 0, got ${ulp}`);
  return ULP_CLASSES.find((c) => ulp <= c.max)!.color;
}
