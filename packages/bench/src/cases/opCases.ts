import {
  f32ToBf16,
  fp8Info,
  getOpDef,
  GraphBuilder,
  pleNgramIdsAttrs,
  pleShape,
  quantizeBf16RowsFp8,
  Rng,
  ropeTablesBf16,
  TINY,
  type Graph,
  type OpName,
  type Tensor,
} from '@hcsp/core';
import { gdnPleCanonicalCases } from './gdnPleCanonicalCases.ts';
import type { OpCase } from './opCase.ts';
import { canonicalAttnMoeCases } from './canonicalAttnMoeCases.ts';
import { moeFp8OpCases } from './moeFp8Cases.ts';

// Single-op graphs over seeded random inputs: the per-op half of the cross-backend suite.
export type { OpCase };

/** The case as a graph with its feeds; output shapes come from the op's own rule. */
export function opCaseGraph(c: OpCase): { graph: Graph; feeds: Map<string, Tensor> } {
  const def = getOpDef(c.op);
  const b = new GraphBuilder(c.tp, { case: c.name });
  const feeds = new Map<string, Tensor>();
  const inputIds = c.inputs.map((t, i) => {
    if (!t) return null;
    const id = b.input(`in${i}`, [...t.shape], t.dtype);
    feeds.set(id, t);
    return id;
  });
  const ports = def.inputs.length;
  const perRank = def.collective ? Array.from({ length: c.tp }, (_, r) => c.inputs.slice(r * ports, (r + 1) * ports)) : [c.inputs];
  const info = (t: Tensor | null) => (t ? { shape: t.shape, dtype: t.dtype } : null);
  const outputs = perRank.flatMap((ins) => def.shape(ins.map(info), def.collective ? { ...c.attrs, tp: c.tp } : c.attrs));
  const outputIds = outputs.map((t, i) => {
    if (!t) return null;
    const rank = def.collective ? Math.floor(i / def.outputs.length) : 0;
    return b.value(`out${i}`, [...t.shape], t.dtype, rank);
  });
  b.node({ op: c.op, rank: def.collective ? null : 0, layer: 0, scope: c.name, inputs: inputIds, outputs: outputIds, attrs: c.attrs });
  for (const id of outputIds) if (id) b.markOutput(id);
  return { graph: b.build(), feeds };
}

const rng = new Rng(2024);
const bf = (shape: number[], std = 1): Tensor => rng.bf16Tensor(shape, std);

const N = 4;
const H = 24;
const R = 6;
const T = 7;

function collective(op: OpName, tp: number, shape: number[], attrs: Record<string, unknown>, name: string): OpCase {
  return { name, op, tp, inputs: Array.from({ length: tp }, () => bf(shape)), attrs };
}

export const OP_CASES: OpCase[] = [
  { name: 'linear odd shapes', op: 'linear', tp: 1, inputs: [bf([T, 37]), bf([9, 37], 0.2)], attrs: {} },
  { name: 'linear HC up shape', op: 'linear', tp: 1, inputs: [bf([T, R]), bf([N * H, R], 0.5)], attrs: {} },
  { name: 'add', op: 'add', tp: 1, inputs: [bf([T, 33]), bf([T, 33])], attrs: {} },
  { name: 'sliceCols', op: 'sliceCols', tp: 1, inputs: [bf([T, 40])], attrs: { start: 10, end: 30 } },
  { name: 'embed', op: 'embed', tp: 1, inputs: [{ dtype: 'i32', shape: [T], data: Int32Array.from([3, 0, 63, 17, 17, 42, 5]) }, bf([64, H])], attrs: {} },
  { name: 'hcExpand', op: 'hcExpand', tp: 1, inputs: [bf([T, H])], attrs: { streams: N } },
  ...(['atom', 'hf'] as const).flatMap((contract): OpCase[] => [
    {
      name: `hcCombineNorm pending ${contract}`,
      op: 'hcCombineNorm',
      tp: 1,
      inputs: [bf([T, N * H]), bf([T, H]), bf([T, N]), bf([N * H], 0.05)],
      attrs: { streams: N, eps: 1e-6, contract },
    },
    {
      name: `hcCombineNorm no pending ${contract}`,
      op: 'hcCombineNorm',
      tp: 1,
      inputs: [bf([T, N * H]), null, null, bf([N * H], 0.05)],
      attrs: { streams: N, eps: 1e-6, contract },
    },
    { name: `hcGatedMean ${contract}`, op: 'hcGatedMean', tp: 1, inputs: [bf([T, N * H], 1.5), bf([T, N * H])], attrs: { streams: N, contract } },
    { name: `hcCombine ${contract}`, op: 'hcCombine', tp: 1, inputs: [bf([T, N * H]), bf([T, H]), bf([T, N])], attrs: { streams: N, contract } },
  ]),
  { name: 'hcScaledSilu mix', op: 'hcScaledSilu', tp: 1, inputs: [bf([T, R + N], 2)], attrs: { streams: N, lowRank: R, contract: 'atom' } },
  { name: 'hcScaledSilu mixer', op: 'hcScaledSilu', tp: 1, inputs: [bf([T, R], 2)], attrs: { streams: N, lowRank: R, contract: 'atom' } },
  { name: 'shard last rank with padding', op: 'shard', tp: 1, inputs: [bf([T, 8])], attrs: { rank: 3, tp: 4, chunk: 2 } },
  { name: 'pad', op: 'pad', tp: 1, inputs: [bf([T, 8])], attrs: { rows: 12 } },
  { name: 'trim', op: 'trim', tp: 1, inputs: [bf([12, 8])], attrs: { rows: T } },
  ...(['ring', 'oneshot', 'ordered'] as const).flatMap((algorithm): OpCase[] => [
    collective('allReduce', 4, [T, 40], { algorithm, channels: 2, chunkElems: 64 }, `allReduce ${algorithm} tp4`),
    collective('reduceScatter', 4, [12, 40], { algorithm }, `reduceScatter ${algorithm} tp4`),
  ]),
  collective('allReduce', 3, [T, 40], { algorithm: 'ring', channels: 1, chunkElems: 1 << 20 }, 'allReduce ring tp3'),
  ...(['e4m3fn', 'e4m3fnuz'] as const).flatMap((format) =>
    (['divide', 'reciprocal'] as const).flatMap((style): OpCase[] => [
      { name: `quantFp8PerToken ${format} ${style}`, op: 'quantFp8PerToken', tp: 1, inputs: [bf([T, 77], 3)], attrs: { format, style } },
      {
        name: `hcGatedMeanQuant ${format} ${style}`,
        op: 'hcGatedMeanQuant',
        tp: 1,
        inputs: [bf([T, N * H], 1.5), bf([T, N * H])],
        attrs: { streams: N, format, style },
      },
    ]),
  ),
  collective('allGather', 4, [3, 40], {}, 'allGather tp4'),
  ...pleOpCases(),
  ...attentionOpCases(),
  ...headOpCases(),
  ...fp8OpCases(),
  ...canonicalOrderCases(),
  ...gdnPleCanonicalCases(),
  ...canonicalAttnMoeCases(),
  ...moeFp8OpCases(),
];

/**
 * The HC norm's sum of squares in canonical reduction order v1 (core numerics/canonicalSum.ts):
 * a row where the sequential order gives other bits (4096 then ones, with weights that put the
 * outputs on bf16 ties; core's combineNorm.test.ts has the bits by hand), and random rows of
 * whole 512-term steps and of a partial step (H 2560 and 1030) with the pending combine. Their
 * own seed, so the cases above keep their inputs.
 */
function canonicalOrderCases(): OpCase[] {
  const own = new Rng(2205);
  const rand = (shape: number[], std: number): Tensor => ({
    dtype: 'bf16',
    shape,
    data: own.fillBf16Normal(
      shape.reduce((a, d) => a * d, 1),
      std,
    ),
  });
  const bits = (shape: number[], value: (j: number) => number): Tensor => ({
    dtype: 'bf16',
    shape,
    data: Uint16Array.from({ length: shape.reduce((a, d) => a * d, 1) }, (_, j) => f32ToBf16(value(j))),
  });
  const attrs = { streams: 2, eps: 1e-6, contract: 'atom' };
  const h = 1024;
  return [
    {
      name: 'hcCombineNorm canonical order: 4096 then ones',
      op: 'hcCombineNorm',
      tp: 1,
      inputs: [bits([1, 2 * h], (j) => (j % h === 0 ? 4096 : 1)), null, null, bits([2 * h], (j) => (1 + 2 * (j % 4)) * 2 ** -8)],
      attrs,
    },
    ...[2560, 1030].map(
      (hh): OpCase => ({
        name: `hcCombineNorm canonical order: H ${hh}, pending combine`,
        op: 'hcCombineNorm',
        tp: 1,
        inputs: [rand([3, 2 * hh], 3), rand([3, hh], 3), rand([3, 2], 1), rand([2 * hh], 0.05)],
        attrs,
      }),
    ),
  ];
}

/** The PLE ops on the tiny config's layer-1 constants (ids through the host op, with an EOS). */
function pleOpCases(): OpCase[] {
  const ple = pleShape(TINY, 1);
  const heads = ple.vocabSizes.length;
  const tokens = Int32Array.from({ length: T }, (_, t) => (t === 3 ? TINY.eosTokenId : rng.int(0, TINY.vocabSize)));
  const ids = Int32Array.from({ length: T * heads }, () => rng.int(0, ple.tableRows));
  const gate: Tensor = { dtype: 'bf16', shape: [T, N], data: Uint16Array.from({ length: T * N }, () => f32ToBf16(rng.nextFloat())) };
  return [
    { name: 'pleNgramIds', op: 'pleNgramIds', tp: 1, inputs: [{ dtype: 'i32', shape: [T], data: tokens }], attrs: pleNgramIdsAttrs(ple) },
    {
      name: 'pleNgramEmbed',
      op: 'pleNgramEmbed',
      tp: 1,
      inputs: [{ dtype: 'i32', shape: [T, heads], data: ids }, bf([ple.tableRows, ple.embedDim / heads])],
      attrs: {},
    },
    // the middle third of the table: ids below, inside and above it
    {
      name: 'pleNgramEmbedShard',
      op: 'pleNgramEmbedShard',
      tp: 1,
      inputs: [{ dtype: 'i32', shape: [T, heads], data: ids }, bf([Math.floor(ple.tableRows / 3), ple.embedDim / heads])],
      attrs: { rowStart: Math.floor(ple.tableRows / 3), tableRows: ple.tableRows },
    },
    { name: 'pleRms1pNorm', op: 'pleRms1pNorm', tp: 1, inputs: [bf([T, N * H], 2), bf([N * H], 0.1)], attrs: { groups: N, eps: 1e-6 } },
    { name: 'pleGate', op: 'pleGate', tp: 1, inputs: [bf([T, N * H]), bf([T, N * H])], attrs: { streams: N } },
    { name: 'pleGatedValue', op: 'pleGatedValue', tp: 1, inputs: [gate, bf([T, H])], attrs: { streams: N } },
    // dilation 2 so that every tap of kernel 4 (t-6 .. t) falls inside T = 7 rows
    { name: 'pleConvSilu', op: 'pleConvSilu', tp: 1, inputs: [bf([T, N * H]), bf([T, N * H]), bf([N * H, 1, 4], 0.5)], attrs: { dilation: 2 } },
  ];
}

/** The FP8 PTPC weight quantization and GEMM, on operands quantized as the GDN projection does. */
function fp8OpCases(): OpCase[] {
  const K = 40;
  const O = 9;
  return (['e4m3fn', 'e4m3fnuz'] as const).flatMap((format): OpCase[] => {
    const dtype = fp8Info(format).dtype;
    const x = quantizeBf16RowsFp8(bf([T, K], 2).data as Uint16Array, T, K, format, 'reciprocal');
    const w = quantizeBf16RowsFp8(bf([O, K], 0.2).data as Uint16Array, O, K, format, 'reciprocal');
    const operands: Tensor[] = [
      { dtype, shape: [T, K], data: x.q },
      { dtype: 'f32', shape: [T], data: x.scale },
      { dtype, shape: [O, K], data: w.q },
      { dtype: 'f32', shape: [O], data: w.scale },
    ];
    return [
      { name: `fp8QuantWeightPerChannel ${format}`, op: 'fp8QuantWeightPerChannel', tp: 1, inputs: [bf([O, 77], 0.1)], attrs: { format } },
      ...(['weightFirst', 'tokenFirst'] as const).map(
        (scaleOrder): OpCase => ({
          name: `fp8LinearPtpc ${format} ${scaleOrder}`,
          op: 'fp8LinearPtpc',
          tp: 1,
          inputs: operands,
          attrs: { format, scaleOrder },
        }),
      ),
    ];
  });
}

/**
 * The attention and QSA ops on the tiny config's shapes (indexer: 4 heads of 8, blocks of
 * 4, 4 kept; rows from 19 on drop blocks), and the i32 row movement of the row-sharded
 * selection (all-gather, trim).
 */
function attentionOpCases(): OpCase[] {
  const TT = 30;
  const { headDim: hd, ropeDims, numHeads: qh, numKvHeads: kvh, indexer: ix } = TINY.attention;
  const width = ix.budget / ix.compressRatio;
  const { cos, sin } = ropeTablesBf16(TINY, TT);
  const eps = TINY.rmsNormEps;
  const ints = (shape: number[], f: (i: number) => number): Tensor => ({
    dtype: 'i32',
    shape,
    data: Int32Array.from({ length: shape[0] * shape[1] }, (_, i) => f(i)),
  });
  // a valid selection: each row keeps its latest min(width, nb) blocks, ascending, then -1
  const blocks = ints([TT, width], (i) => {
    const nb = Math.floor((Math.floor(i / width) + 1) / ix.compressRatio);
    const n = Math.min(width, nb);
    return i % width < n ? nb - n + (i % width) : -1;
  });
  const sel = { nHeads: ix.nHeads, headDim: ix.headDim, compressRatio: ix.compressRatio, width };
  return [
    {
      name: 'attnHeadNormRopeBf16 q with gate',
      op: 'attnHeadNormRopeBf16',
      tp: 1,
      inputs: [bf([TT, qh * 2 * hd], 1.5), bf([hd], 0.2), cos, sin],
      attrs: { heads: qh, headDim: hd, stride: 2 * hd, offset: 0, ropeDims, eps },
    },
    {
      name: 'qsaBlockKeys',
      op: 'qsaBlockKeys',
      tp: 1,
      inputs: [bf([TT, ix.headDim]), bf([ix.headDim], 0.1), cos, sin],
      attrs: { headDim: ix.headDim, compressRatio: ix.compressRatio, ropeDims, eps },
    },
    {
      name: 'qsaSelect row shard with padding rows',
      op: 'qsaSelect',
      tp: 1,
      inputs: [bf([16, ix.nHeads * ix.headDim]), bf([Math.floor(TT / ix.compressRatio), ix.headDim])],
      attrs: { ...sel, r0: 16, tokens: TT },
    },
    {
      name: 'attnCausalQsa',
      op: 'attnCausalQsa',
      tp: 1,
      inputs: [bf([TT, qh * hd]), bf([TT, kvh * hd]), bf([TT, kvh * hd]), blocks],
      attrs: { heads: qh, kvHeads: kvh, headDim: hd, scale: Math.fround(hd ** -0.5), compressRatio: ix.compressRatio, width },
    },
    { name: 'allGather i32 tp2', op: 'allGather', tp: 2, inputs: [ints([3, width], (i) => i - 5), ints([3, width], (i) => 100 + i)], attrs: {} },
    { name: 'trim i32', op: 'trim', tp: 1, inputs: [ints([12, width], (i) => i - 9)], attrs: { rows: 7 } },
  ];
}

/** The LM/MTP head ops (graph/ops/headOps.ts): row slices, views, the vocab gather layout, argmax, draft ids. */
function headOpCases(): OpCase[] {
  const ids = (v: number[]): Tensor => ({ dtype: 'i32', shape: [v.length], data: Int32Array.from(v) });
  // coarse logits: equal maxima in most rows
  const coarse: Tensor = { dtype: 'bf16', shape: [T, 67], data: Uint16Array.from({ length: T * 67 }, () => rng.fillBf16Normal(1, 1)[0] & 0xc000) };
  return [
    { name: 'sliceRows last row', op: 'sliceRows', tp: 1, inputs: [bf([T, 33])], attrs: { start: T - 1, end: T } },
    { name: 'reshape streams as rows', op: 'reshape', tp: 1, inputs: [bf([T, N * H])], attrs: { shape: [T * N, H] } },
    { name: 'rowBlocksToCols', op: 'rowBlocksToCols', tp: 1, inputs: [bf([4 * 3, 9])], attrs: { parts: 4 } },
    { name: 'argmax', op: 'argmax', tp: 1, inputs: [bf([T, 301])], attrs: {} },
    { name: 'argmax ties', op: 'argmax', tp: 1, inputs: [coarse], attrs: {} },
    { name: 'mtpDraftIds', op: 'mtpDraftIds', tp: 1, inputs: [ids([3, 0, 63, 17, 17, 42, 5]), ids([9])], attrs: {} },
  ];
}
