import type { FamilyTable } from '../../graph/ops/registry.ts';
import type { GraphNode } from '../../graph/graph.ts';
import type { PriceFn, PricingContext } from './types.ts';
import { bytesOf, cost, ioBytes, num, portBytes, shapeOf } from './types.ts';

// graph/ops/attentionOps.ts. Causal attention and the QSA selection cost what each row's
// position in ITS sequence allows: they are priced per request (ctx.requests sequences of
// ctx.requestTokens tokens; a prefill from an empty cache), the rest from the graph's shapes.

/** Keys row t attends to under QSA (attnCausalQsa's doc): ratio * min(width, nb) blocks + the tail. */
export function qsaKept(t: number, ratio: number, width: number): number {
  const nb = Math.floor((t + 1) / ratio);
  return ratio * Math.min(width, nb) + (t + 1 - nb * ratio);
}

const sums = new Map<string, { kept: number; blocks: number }>();
/** Sum over positions 0..L-1 of the kept keys and of the visible blocks (memoized). */
export function qsaSums(L: number, ratio: number, width: number): { kept: number; blocks: number } {
  const key = `${L}/${ratio}/${width}`;
  let s = sums.get(key);
  if (!s) {
    let kept = 0;
    let blocks = 0;
    for (let t = 0; t < L; t++) {
      kept += qsaKept(t, ratio, width);
      blocks += Math.floor((t + 1) / ratio);
    }
    s = { kept, blocks };
    sums.set(key, s);
  }
  return s;
}

/** The fraction of the batch's rows this node's rows are (a row-sharded selection runs 1/tp of them). */
function rowShare(_node: GraphNode, ctx: PricingContext, rows: number): number {
  return rows / (ctx.requests * ctx.requestTokens);
}

export const ATTENTION_COSTS: FamilyTable<'attentionOps', PriceFn> = {
  /** per head: the grouped RMS norm of headDim values (4 per element) and RoPE on ropeDims (3 per element); reads only the head's columns */
  attnHeadNormRopeBf16: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    const out = bytesOf(ctx, n.outputs[0]);
    const elems = rows * num(n, 'heads') * num(n, 'headDim');
    return cost({
      vectorFlops: elems * 4 + rows * num(n, 'heads') * num(n, 'ropeDims') * 3,
      actBytes: 2 * out + bytesOf(ctx, n.inputs[2]) + bytesOf(ctx, n.inputs[3]),
      weightBytes: portBytes(n, ctx, 'weight'),
    });
  },
  /** mean-pool ratio rows, norm and rope the block keys: linear in T */
  qsaBlockKeys: (n, ctx) => {
    const [T, dh] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: T * dh + (T / num(n, 'compressRatio')) * dh * 7, ...ioBytes(n, ctx) });
  },
  /**
   * each query row scores its visible blocks (nHeads dot products of headDim: matrix units) and
   * keeps the top `width` (about log2(width) compares per block): summed per request over its
   * positions, for this node's share of the rows
   */
  qsaSelect: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    const ratio = num(n, 'compressRatio');
    const width = num(n, 'width');
    const nh = num(n, 'nHeads');
    const s = qsaSums(ctx.requestTokens, ratio, width);
    const share = ctx.requests * rowShare(n, ctx, rows);
    return cost({
      matrixFlops: share * s.blocks * nh * 2 * num(n, 'headDim'),
      vectorFlops: share * s.blocks * (2 * nh + Math.log2(width)),
      ...ioBytes(n, ctx),
    });
  },
  qsaKeptCount: (n, ctx) => cost({ vectorFlops: shapeOf(ctx, n.inputs[0]).reduce((a, b) => a * b, 1), ...ioBytes(n, ctx) }),
  /**
   * flash-style causal attention over each row's kept keys: q k^T and p v are 2 headDim FLOPs
   * per (head, kept key) each, on the matrix units; the softmax about 5 vector FLOPs per
   * (head, key). q, k, v, the block lists and o move once (k and v stay on chip per tile).
   */
  attnCausalQsa: (n, ctx) => {
    const [rows] = shapeOf(ctx, n.inputs[0]);
    const heads = num(n, 'heads');
    const s = qsaSums(ctx.requestTokens, num(n, 'compressRatio'), num(n, 'width'));
    const pairs = ctx.requests * rowShare(n, ctx, rows) * s.kept * heads;
    return cost({ matrixFlops: pairs * 4 * num(n, 'headDim'), vectorFlops: pairs * 5, ...ioBytes(n, ctx) });
  },
  /** y = o * sigmoid(gate): 5 per element; reads o and the gate half of qg */
  attnOutputGate: (n, ctx) => {
    const o = bytesOf(ctx, n.inputs[0]);
    const [rows] = shapeOf(ctx, n.inputs[0]);
    return cost({ vectorFlops: rows * num(n, 'heads') * num(n, 'headDim') * 5, actBytes: 3 * o });
  },
};
