/**
 * Sorted, merged row ranges covering the ids, and each id's row in their concatenation: how a
 * row-gathered weight (WeightRef.gather 'rows') is read, by GraphSession and by the exact
 * evaluation (reference/exact/evaluateExact.ts).
 */
export function rowRanges(ids: Int32Array, rows: number, what: string): { ranges: [number, number][]; local: Int32Array } {
  const sorted = Int32Array.from(new Set(ids)).sort();
  if (sorted.length > 0 && (sorted[0] < 0 || sorted[sorted.length - 1] >= rows)) {
    const bad = sorted[0] < 0 ? sorted[0] : sorted[sorted.length - 1];
    throw new Error(`${what}: row id ${bad} is outside the table [0, ${rows})`);
  }
  const ranges: [number, number][] = [];
  const index = new Map<number, number>();
  sorted.forEach((id, i) => {
    index.set(id, i);
    const last = ranges[ranges.length - 1];
    if (last && last[1] === id) last[1] = id + 1;
    else ranges.push([id, id + 1]);
  });
  return { ranges, local: ids.map((id) => index.get(id)!) };
}
