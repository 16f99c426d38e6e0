import type { ModelConfig } from '../../config/modelConfig.ts';
import { bf16ArrayToF32, f32ToBf16 } from '../../numerics/bf16.ts';
import { torchCpuTopk, type TopkTies } from '../../numerics/topkTies.ts';
import { attnHeadNormRopeBf16 } from './attentionMath.ts';
import { qsaVisibleBlocks, type QsaSelection } from './qsaSelection.ts';

// The QSA indexer (HF Qwen4ExpTextQSAIndexer; ATOM Qwen4ExpIndexer with ops/qsa.py's
// _qsa_compress_groups_kernel, _qsa_paged_mqa_logits_kernel, top_k_per_row_prefill and
// _expand_selected_groups), for a prefill from an empty cache (position = row). Inputs
// come from index_qk_proj (a Linear, bf16 out) laid out [q: nHeads x headDim | k_raw:
// headDim] per row. Per query row p, with nb = floor((p+1) / ratio) complete blocks:
//   q_i   = RoPE(RMS1p(q_i, q_layernorm)) at position p              (bf16)
//   pool_b = bf( fr(((k_raw[4b] + k_raw[4b+1]) + k_raw[4b+2]) + ...) / ratio )
//   kb    = RoPE(RMS1p(pool_b, k_layernorm)) at position b * ratio    (bf16)
//   score_b = fr( (sum_i relu(dot_d(q_i, kb)), i order) / fr(sqrt(headDim)) )   (fp32)
//   keep  = tokens of the top min(width, nb) blocks  U  the tail nb*ratio .. p
// Ties in the top-k go to the lower block index (ATOM's top-k runs stable=True; HF's
// torch.topk promises no order). The sums run in index order (dot in d order, pooling in
// token order as ATOM's kernel, heads in head order as ATOM's `score +=`); the reference's
// GEMM orders are unspecified, so its scores can differ in the last fp32 bit, which
// changes a selection only at a near-tie. The block keys depend on k_raw alone and each
// row's scores on its own query, so any split of the rows selects identically.

const fr = Math.fround;

export interface QsaIndexerDims {
  nHeads: number;
  headDim: number;
  /** the attention's RoPE dims: the indexer heads rotate the same leading dims */
  ropeDims: number;
  compressRatio: number;
  /** selected blocks per row: budget / compressRatio */
  width: number;
  eps: number;
}

export function qsaIndexerDims(config: ModelConfig): QsaIndexerDims {
  const { indexer: ix, ropeDims } = config.attention;
  return { nHeads: ix.nHeads, headDim: ix.headDim, ropeDims, compressRatio: ix.compressRatio, width: ix.budget / ix.compressRatio, eps: config.rmsNormEps };
}

/** Columns of a row-major buffer that hold one value group: row r's group starts at r * stride + offset. */
export interface RowSlice {
  stride: number;
  offset: number;
}

function checkRows(what: string, arr: Uint16Array, rows: number, width: number, slice: RowSlice): void {
  if (slice.offset + width > slice.stride)
    throw new Error(`QSA indexer: ${what} at offset ${slice.offset} with width ${width} overruns stride ${slice.stride}`);
  if (arr.length !== rows * slice.stride) throw new Error(`QSA indexer: ${what} has ${arr.length} values, expected ${rows} x ${slice.stride}`);
}

/**
 * Block keys kb [nb, headDim], nb = floor(tokens / ratio), of the whole sequence's raw
 * keys (k_raw of row t at kRaw[t * stride + offset ..]), with the RoPE tables (bf16
 * [>= tokens, ropeDims/2], ropeTablesBf16).
 */
export function qsaBlockKeys(
  kRaw: Uint16Array,
  kNorm: Uint16Array,
  cos: Uint16Array,
  sin: Uint16Array,
  tokens: number,
  slice: RowSlice,
  d: QsaIndexerDims,
): Uint16Array {
  const { headDim: dh, compressRatio: ratio } = d;
  checkRows('k_raw', kRaw, tokens, dh, slice);
  const nb = Math.floor(tokens / ratio);
  const kf = bf16ArrayToF32(kRaw);
  const pooled = new Uint16Array(nb * dh);
  for (let b = 0; b < nb; b++) {
    for (let c = 0; c < dh; c++) {
      let sum = 0;
      for (let j = 0; j < ratio; j++) sum = fr(sum + kf[(b * ratio + j) * slice.stride + slice.offset + c]);
      pooled[b * dh + c] = f32ToBf16(fr(sum / ratio));
    }
  }
  return attnHeadNormRopeBf16(pooled, kNorm, cos, sin, nb, { heads: 1, headDim: dh, stride: dh, offset: 0 }, d.ropeDims, d.eps, { start: 0, step: ratio });
}

/**
 * Indexer queries [r1 - r0, nHeads * headDim] of rows r0..r1-1: qRows holds those rows'
 * q parts (row r - r0 at (r - r0) * stride + offset), roped at their own positions.
 */
export function qsaQueries(
  qRows: Uint16Array,
  qNorm: Uint16Array,
  cos: Uint16Array,
  sin: Uint16Array,
  r0: number,
  r1: number,
  slice: RowSlice,
  d: QsaIndexerDims,
): Uint16Array {
  checkRange(r0, r1);
  checkRows('q', qRows, r1 - r0, d.nHeads * d.headDim, slice);
  // heads are contiguous within a row: as stride-wide rows of one head each
  const heads = { heads: d.nHeads, headDim: d.headDim, stride: d.headDim, offset: 0 };
  const packed = slice.stride === d.nHeads * d.headDim && slice.offset === 0 ? qRows : packColumns(qRows, r1 - r0, d.nHeads * d.headDim, slice);
  return attnHeadNormRopeBf16(packed, qNorm, cos, sin, r1 - r0, heads, d.ropeDims, d.eps, { start: r0, step: 1 });
}

function packColumns(src: Uint16Array, rows: number, width: number, slice: RowSlice): Uint16Array {
  const out = new Uint16Array(rows * width);
  for (let r = 0; r < rows; r++) out.set(src.subarray(r * slice.stride + slice.offset, r * slice.stride + slice.offset + width), r * width);
  return out;
}

function checkRange(r0: number, r1: number): void {
  if (!Number.isInteger(r0) || !Number.isInteger(r1) || r0 < 0 || r1 < r0) throw new Error(`QSA indexer: rows [${r0}, ${r1}) are not a valid range`);
}

/**
 * fp32 block scores [r1 - r0, nb] of rows r0..r1-1 against the block keys kb [nb, headDim]
 * (the header's formula); a row's blocks past its visible count are -Infinity.
 */
export function qsaBlockScores(q: Uint16Array, kb: Uint16Array, r0: number, r1: number, nb: number, d: QsaIndexerDims): Float32Array {
  checkRange(r0, r1);
  const { nHeads: nh, headDim: dh } = d;
  if (q.length !== (r1 - r0) * nh * dh) throw new Error(`QSA indexer: q has ${q.length} values, expected ${r1 - r0} x ${nh * dh}`);
  if (kb.length !== nb * dh) throw new Error(`QSA indexer: block keys have ${kb.length} values, expected ${nb} x ${dh}`);
  const qf = bf16ArrayToF32(q);
  const kf = bf16ArrayToF32(kb);
  const divisor = fr(Math.sqrt(dh));
  const scores = new Float32Array((r1 - r0) * nb).fill(-Infinity);
  for (let r = 0; r < r1 - r0; r++) {
    const visible = Math.min(nb, qsaVisibleBlocks(r0 + r, d.compressRatio));
    for (let b = 0; b < visible; b++) {
      let score = 0;
      for (let h = 0; h < nh; h++) {
        const qb = (r * nh + h) * dh;
        let dot = 0;
        // bf16 x bf16 products are exact in fp32: one rounding per add
        for (let c = 0; c < dh; c++) dot = fr(dot + qf[qb + c] * kf[b * dh + c]);
        score = fr(score + Math.max(dot, 0));
      }
      scores[r * nb + b] = fr(score / divisor);
    }
  }
  return scores;
}

/**
 * Rows r0..r1-1's selection from their scores [r1 - r0, nb]: the top min(width, visible)
 * blocks, ties to the lower index (or, ties 'torch-cpu', the set torch.topk picks on the CPU:
 * HF's indexer keeps its blocks as a mask, so their order does not count), listed ascending
 * (qsaSelection.ts's layout).
 */
export function qsaSelectBlocks(scores: Float32Array, r0: number, r1: number, nb: number, d: QsaIndexerDims, tieRule: TopkTies = 'lower-index'): QsaSelection {
  checkRange(r0, r1);
  const rows = r1 - r0;
  const { width, compressRatio } = d;
  if (scores.length !== rows * nb) throw new Error(`QSA indexer: ${scores.length} scores, expected ${rows} x ${nb}`);
  const blocks = new Int32Array(rows * width).fill(-1);
  for (let r = 0; r < rows; r++) {
    const visible = qsaVisibleBlocks(r0 + r, compressRatio);
    if (visible > nb) throw new Error(`QSA indexer: row ${r0 + r} sees ${visible} blocks, only ${nb} scored`);
    const row = scores.subarray(r * nb, r * nb + visible);
    for (let b = 0; b < visible; b++) if (Number.isNaN(row[b])) throw new Error(`QSA indexer: row ${r0 + r} block ${b} scored NaN`);
    const out = blocks.subarray(r * width, (r + 1) * width);
    if (visible <= width) {
      for (let b = 0; b < visible; b++) out[b] = b;
      continue;
    }
    if (tieRule === 'torch-cpu') {
      out.set(torchCpuTopk(row, width).sort());
      continue;
    }
    // threshold = the width-th largest score; take everything above it, then the
    // lowest-index blocks equal to it until width are taken
    const threshold = Float32Array.from(row).sort()[visible - width];
    let above = 0;
    for (let b = 0; b < visible; b++) if (row[b] > threshold) above++;
    let ties = width - above;
    let n = 0;
    for (let b = 0; b < visible; b++) {
      if (row[b] > threshold || (row[b] === threshold && ties-- > 0)) out[n++] = b;
    }
  }
  return { r0, rows, width, compressRatio, blocks };
}

/**
 * The indexer for query rows r0..r1-1 from index_qk_proj's output qk [tokens,
 * (nHeads + 1) * headDim] of the whole sequence (q read from rows r0..r1-1 only, k_raw
 * from all rows): what one sequence-parallel rank computes for its own rows.
 */
export function qsaIndexerSelect(
  qk: Uint16Array,
  qNorm: Uint16Array,
  kNorm: Uint16Array,
  cos: Uint16Array,
  sin: Uint16Array,
  tokens: number,
  r0: number,
  r1: number,
  d: QsaIndexerDims,
): QsaSelection {
  checkRange(r0, r1);
  if (r1 > tokens) throw new Error(`QSA indexer: rows [${r0}, ${r1}) run past the ${tokens} tokens`);
  const stride = (d.nHeads + 1) * d.headDim;
  if (qk.length !== tokens * stride) throw new Error(`QSA indexer: qk has ${qk.length} values, expected ${tokens} x ${stride}`);
  const kb = qsaBlockKeys(qk, kNorm, cos, sin, tokens, { stride, offset: d.nHeads * d.headDim }, d);
  const q = qsaQueries(qk.subarray(r0 * stride, r1 * stride), qNorm, cos, sin, r0, r1, { stride, offset: 0 }, d);
  const nb = Math.floor(tokens / d.compressRatio);
  return qsaSelectBlocks(qsaBlockScores(q, kb, r0, r1, nb, d), r0, r1, nb, d);
}
