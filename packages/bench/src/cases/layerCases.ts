import {
  buildAttention,
  buildAttentionRanks,
  buildGdn,
  buildMoe,
  buildPle,
  GraphBuilder,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  ropeTablesBf16,
  Rng,
  SyntheticWeightSource,
  TINY,
  type Graph,
  type Tensor,
} from '@hcsp/core';

// One sub-layer per graph, every rank of tp 2, on the tiny config: the per-layer half of
// the cross-backend suite (every intermediate of the sub-layer is compared, op by op).
export interface LayerCase {
  name: string;
  graph: Graph;
  feeds: Map<string, Tensor>;
  weights: SyntheticWeightSource;
}

const TP = 2;
const T = 19;

export function layerCases(): LayerCase[] {
  const config = TINY;
  const weights = new SyntheticWeightSource(modelWeightSpecs(config, MODEL_SUB_LAYERS), 9);
  const rng = new Rng(31);
  const h = config.hiddenSize;
  const width = config.hc.count * h;
  const x: Tensor = { dtype: 'bf16', shape: [T, h], data: rng.fillBf16Normal(T * h, 1) };
  const streams: Tensor = { dtype: 'bf16', shape: [T, width], data: rng.fillBf16Normal(T * width, 1) };
  const ids: Tensor = {
    dtype: 'i32',
    shape: [T],
    data: Int32Array.from({ length: T }, (_, t) => (t === 9 ? config.eosTokenId : rng.int(0, config.vocabSize))),
  };
  const rope = ropeTablesBf16(config, T);
  const make = (name: string, build: (b: GraphBuilder, rank: number, inputs: Record<string, string>) => string): LayerCase =>
    makeRanks(name, (b, inputs) => Array.from({ length: TP }, (_, rank) => build(b, rank, inputs)));
  /** A case whose ranks are built together (a sub-layer with a collective inside). */
  const makeRanks = (name: string, build: (b: GraphBuilder, inputs: Record<string, string>) => string[]): LayerCase => {
    const b = new GraphBuilder(TP, { case: name });
    const inputs = {
      x: b.input('x', [T, h], 'bf16'),
      streams: b.input('streams', [T, width], 'bf16'),
      ids: b.input('ids', [T], 'i32'),
      cos: b.input('rope_cos', [...rope.cos.shape], 'bf16'),
      sin: b.input('rope_sin', [...rope.sin.shape], 'bf16'),
    };
    for (const out of build(b, inputs)) b.markOutput(out);
    const feeds = new Map<string, Tensor>([
      [inputs.x, x],
      [inputs.streams, streams],
      [inputs.ids, ids],
      [inputs.cos, rope.cos],
      [inputs.sin, rope.sin],
    ]);
    return { name, graph: b.build(), feeds, weights };
  };
  const ctx = (layer: number, rank: number, scope: string) => ({ config, layer, rank, tp: TP, tokens: T, scope });
  const ranksCtx = (layer: number, scope: string) => Array.from({ length: TP }, (_, rank) => ctx(layer, rank, scope));
  return [
    make('GatedDeltaNet (layer 0)', (b, rank, i) => buildGdn(b, ctx(0, rank, 'L0.attn'), i.x)),
    make('attention (layer 3)', (b, rank, i) => buildAttention(b, ctx(3, rank, 'L3.attn'), i.x, { cos: i.cos, sin: i.sin })),
    // each rank selects for its 10 rows (rank 1's last one is padding), all-gathered
    makeRanks('attention, row-sharded QSA selection (layer 3)', (b, i) => {
      const ctxs = Array.from({ length: TP }, (_, rank) => ({ ...ctx(3, rank, 'L3.attn'), qsaRowChunk: Math.ceil(T / TP) }));
      return buildAttentionRanks(
        b,
        ctxs,
        ctxs.map(() => i.x),
        { cos: i.cos, sin: i.sin },
      );
    }),
    make('MoE (layer 2)', (b, rank, i) => buildMoe(b, ctx(2, rank, 'L2.mlp'), i.x)),
    makeRanks('PLE (layer 1)', (b, i) => buildPle(b, ranksCtx(1, 'L1.ple'), [i.streams, i.streams], i.ids)),
    // each rank looks up its half of the table; the lookups all-reduced (ring, 2 channels of 8)
    makeRanks('PLE, vocab-parallel table (layer 1)', (b, i) =>
      buildPle(b, ranksCtx(1, 'L1.ple'), [i.streams, i.streams], i.ids, { kind: 'vocabParallel', reduce: { algorithm: 'ring', channels: 2, chunkElems: 8 } }),
    ),
  ];
}
