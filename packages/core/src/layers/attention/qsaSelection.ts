// The QSA indexer's kept sets, in a form a GPU kernel reads directly: per query row a fixed
// number of int32 block indices. Row r (query position p = r0 + r, a prefill from an empty
// cache) has nb = floor((p + 1) / compressRatio) complete blocks, block b holding tokens
// b*ratio .. b*ratio + ratio - 1. The row keeps
//   the tokens of its n = min(width, nb) selected blocks  U  the tail nb*ratio .. p,
// and blocks[r*width .. r*width + n) lists those blocks in ascending order, then -1 up to
// width. Expanded in that order the kept positions are ascending, so an attention kernel
// that walks them sums in the same order as dense causal attention over 0..p.
// Rows are independent, so selections for consecutive row ranges (sequence-parallel
// shards) concatenate into the selection of their union.

export interface QsaSelection {
  /** first query row (= its position) */
  r0: number;
  rows: number;
  /** selected blocks per row: indexer_budget / indexer_compress_ratio */
  width: number;
  compressRatio: number;
  /** [rows, width] int32, see above */
  blocks: Int32Array;
}

export function checkQsaSelection(s: QsaSelection): void {
  const ok = (v: number) => Number.isInteger(v) && v >= 0;
  if (!ok(s.r0) || !ok(s.rows) || !ok(s.width) || !(s.width > 0) || !(Number.isInteger(s.compressRatio) && s.compressRatio > 0)) {
    throw new Error(`QSA selection: r0 ${s.r0}, rows ${s.rows}, width ${s.width}, compressRatio ${s.compressRatio} are not valid`);
  }
  if (s.blocks.length !== s.rows * s.width) throw new Error(`QSA selection: ${s.blocks.length} block entries, expected ${s.rows} x ${s.width}`);
}

/** Complete blocks visible to the query at position p. */
export function qsaVisibleBlocks(p: number, compressRatio: number): number {
  return Math.floor((p + 1) / compressRatio);
}

/** How many key tokens row `row` keeps: min(width, nb) * ratio + the tail. */
export function qsaKeptCount(s: QsaSelection, row: number): number {
  const p = s.r0 + row;
  const nb = qsaVisibleBlocks(p, s.compressRatio);
  return Math.min(s.width, nb) * s.compressRatio + (p + 1 - nb * s.compressRatio);
}

/** Writes row `row`'s kept positions, ascending, into out; returns their count. */
export function qsaKeptPositions(s: QsaSelection, row: number, out: Int32Array): number {
  if (!Number.isInteger(row) || row < 0 || row >= s.rows) throw new Error(`QSA selection: row ${row} is outside [0, ${s.rows})`);
  const ratio = s.compressRatio;
  const p = s.r0 + row;
  const nb = qsaVisibleBlocks(p, ratio);
  const n = Math.min(s.width, nb);
  let count = 0;
  let prev = -1;
  for (let i = 0; i < n; i++) {
    const b = s.blocks[row * s.width + i];
    if (!(b > prev && b < nb)) throw new Error(`QSA selection: row ${row} entry ${i} is block ${b}, expected ascending blocks in [0, ${nb})`);
    prev = b;
    for (let j = 0; j < ratio; j++) out[count++] = b * ratio + j;
  }
  for (let i = n; i < s.width; i++) {
    if (s.blocks[row * s.width + i] !== -1)
      throw new Error(`QSA selection: row ${row} entry ${i} is ${s.blocks[row * s.width + i]}, expected -1 past its ${n} blocks`);
  }
  for (let j = nb * ratio; j <= p; j++) out[count++] = j;
  return count;
}

/** The selection of consecutive row ranges, in order (the all-gather of row shards). */
export function concatQsaSelections(parts: readonly QsaSelection[]): QsaSelection {
  if (parts.length === 0) throw new Error('QSA selection: nothing to concatenate');
  const { r0, width, compressRatio } = parts[0];
  let rows = 0;
  for (const part of parts) {
    checkQsaSelection(part);
    if (part.width !== width || part.compressRatio !== compressRatio) throw new Error('QSA selection: parts disagree on width or compress ratio');
    if (part.r0 !== r0 + rows) throw new Error(`QSA selection: a part starts at row ${part.r0}, expected ${r0 + rows}`);
    rows += part.rows;
  }
  const blocks = new Int32Array(rows * width);
  let at = 0;
  for (const part of parts) {
    blocks.set(part.blocks, at);
    at += part.blocks.length;
  }
  return { r0, rows, width, compressRatio, blocks };
}
