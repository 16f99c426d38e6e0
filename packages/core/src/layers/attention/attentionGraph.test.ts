import { beforeAll, describe, expect, it } from 'vitest';
import { runOnce } from '../../backend/backend.ts';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { bf16ArrayToF32 } from '../../numerics/bf16.ts';
import { Rng } from '../../numerics/rng.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { linearBf16 } from '../linearMath.ts';
import type { SubLayerContext } from '../subLayerContext.ts';
import { tpLayerChecks } from '../../../../../test/support/tpLayerChecks.ts';
import { attnCausalQsa, attnHeadNormRopeBf16, attnOutputGate } from './attentionMath.ts';
import { buildAttention, buildAttentionRanks } from './attentionGraph.ts';
import { attentionRankHeads, attentionRankWeights, attentionWeightSpecs } from './attentionWeights.ts';
import { QSA_BLOCKS } from './qsaGraph.ts';
import { qsaIndexerDims, qsaIndexerSelect } from './qsaIndexer.ts';
import { qsaKeptCount } from './qsaSelection.ts';
import { ropeTablesBf16 } from './ropeTables.ts';

const config = getConfig('small');
const LAYER = 3;
const H = config.hiddenSize;
const { numHeads: QH, headDim: HD, ropeDims } = config.attention;
const half = ropeDims / 2;
const weights = new SyntheticWeightSource(attentionWeightSpecs(config, LAYER), 8);
const ctxOf = (rank: number, tp: number, tokens: number, qsaRowChunk?: number): SubLayerContext => ({
  config,
  layer: LAYER,
  rank,
  tp,
  tokens,
  scope: 'L3.attn',
  qsaRowChunk,
});

/** The graph's inputs x and the bf16 RoPE tables for T tokens, with their feeds. */
function inputs(b: GraphBuilder, T: number, x: Uint16Array) {
  const rope = { cos: b.input('rope_cos', [T, half], 'bf16'), sin: b.input('rope_sin', [T, half], 'bf16') };
  const xIn = b.input('x', [T, H], 'bf16');
  const tables = ropeTablesBf16(config, T);
  const feeds = new Map<ValueId, Tensor>([
    [xIn, { dtype: 'bf16', shape: [T, H], data: x }],
    [rope.cos, tables.cos],
    [rope.sin, tables.sin],
  ]);
  return { xIn, rope, feeds };
}

describe('full-attention graph under tensor parallelism', () => {
  // T = 80 on 'small': rows from 67 on drop blocks, so the selection is active. tp = 2 splits
  // the 2 KV heads; tp = 4 replicates each KV head on 2 ranks; the indexer is replicated.
  const T = 80;
  const tables = ropeTablesBf16(config, T);
  tpLayerChecks(
    {
      label: 'attention',
      tokens: T,
      hidden: H,
      headsValue: 'L3.attn/gated',
      heads: QH,
      headDim: HD,
      projectionWeight: `model.layers.${LAYER}.self_attn.o_proj.weight`,
      weights,
      build(b, xIn) {
        const rope = { cos: b.input('rope_cos', [T, half], 'bf16'), sin: b.input('rope_sin', [T, half], 'bf16') };
        return {
          feeds: [
            [rope.cos, tables.cos],
            [rope.sin, tables.sin],
          ],
          partial: (rank, tp) => buildAttention(b, ctxOf(rank, tp, T), xIn, rope),
        };
      },
    },
    new Rng(4).fillBf16Normal(T * H, 1),
    [2, 4],
  );

  it('maps query heads to KV heads: split when tp divides them, replicated otherwise', () => {
    expect(attentionRankHeads(config, 1, 2)).toEqual({ h0: 4, h1: 8, kv0: 1, kv1: 2 });
    expect(attentionRankHeads(config, 1, 4)).toEqual({ h0: 2, h1: 4, kv0: 0, kv1: 1 });
    expect(attentionRankHeads(config, 2, 4)).toEqual({ h0: 4, h1: 6, kv0: 1, kv1: 2 });
    const w = attentionRankWeights(config, LAYER, 3, 4);
    expect(w.q.slice).toEqual({ axis: 0, ranges: [[6 * 2 * HD, 8 * 2 * HD]] });
    expect(w.k.slice).toEqual({ axis: 0, ranges: [[HD, 2 * HD]] });
    expect(w.o.slice).toEqual({ axis: 1, ranges: [[6 * HD, 8 * HD]] });
  });

  it('rejects a linear-attention layer, RoPE tables of the wrong shape, and a row-sharded selection built per rank', () => {
    const b = new GraphBuilder(2);
    const xIn = b.input('x', [T, H], 'bf16');
    const bad = { cos: b.input('c', [T, 3], 'bf16'), sin: b.input('s', [T, 3], 'bf16') };
    expect(() => buildAttention(b, ctxOf(0, 1, T), xIn, bad)).toThrow(/RoPE cos table 'c' is \[80,3\], expected \[80,4\]/);
    expect(() => attentionWeightSpecs(config, 0)).toThrow(/layer 0 .* linear-attention/);
    const rope = { cos: b.input('c2', [T, half], 'bf16'), sin: b.input('s2', [T, half], 'bf16') };
    expect(() => buildAttention(b, ctxOf(0, 2, T, 40), xIn, rope)).toThrow(/row-sharded QSA selection .* buildAttentionRanks/);
    expect(() => buildAttentionRanks(b, [ctxOf(0, 2, T, 39), ctxOf(1, 2, T, 39)], [xIn, xIn], rope)).toThrow(/chunk 39 x tp 2 does not cover 80 rows/);
  });
});

describe('full-attention graph against the math (tp = 1)', () => {
  // The graph's nodes (two index linears, block keys, selection, attention over the kept
  // keys) against the attention math called directly on the whole index_qk_proj GEMM.
  const T = 100;
  const x = new Rng(5).fillBf16Normal(T * H, 1);
  const p = `model.layers.${LAYER}.self_attn.`;
  const wt = (name: string) => weights.tensor(p + name).data as Uint16Array;
  const lin = (input: Uint16Array, name: string, rows: number, inF: number, outF: number) =>
    linearBf16(bf16ArrayToF32(input), bf16ArrayToF32(wt(name)), rows, inF, outF);

  it('selects the blocks qsaIndexerSelect selects and gives the same output, bit for bit', async () => {
    const b = new GraphBuilder(1);
    const { xIn, rope, feeds } = inputs(b, T, x);
    const out = buildAttention(b, ctxOf(0, 1, T), xIn, rope);
    const blocksId = `r0/L3.attn/${QSA_BLOCKS}`;
    const { values } = await runOnce(new CpuBackend(), b.build(), feeds, weights, { keep: [out, blocksId] });

    const d = qsaIndexerDims(config);
    const t16 = ropeTablesBf16(config, T);
    const [cos, sin] = [t16.cos.data as Uint16Array, t16.sin.data as Uint16Array];
    const qk = lin(x, 'indexer.index_qk_proj.weight', T, H, (d.nHeads + 1) * d.headDim);
    const sel = qsaIndexerSelect(qk, wt('indexer.q_layernorm.weight'), wt('indexer.k_layernorm.weight'), cos, sin, T, 0, T, d);
    expect(values.get(blocksId)!.data).toEqual(sel.blocks);
    // rows from 67 on drop blocks: row 99 sees 25 whole blocks and no tail, keeps 16 of them
    expect(qsaKeptCount(sel, T - 1)).toBe(16 * 4);

    const qg = lin(x, 'q_proj.weight', T, H, QH * 2 * HD);
    const kvh = config.attention.numKvHeads;
    const at0 = { start: 0, step: 1 };
    const q = attnHeadNormRopeBf16(
      qg,
      wt('q_norm.weight'),
      cos,
      sin,
      T,
      { heads: QH, headDim: HD, stride: 2 * HD, offset: 0 },
      ropeDims,
      config.rmsNormEps,
      at0,
    );
    const k = attnHeadNormRopeBf16(
      lin(x, 'k_proj.weight', T, H, kvh * HD),
      wt('k_norm.weight'),
      cos,
      sin,
      T,
      { heads: kvh, headDim: HD, stride: HD, offset: 0 },
      ropeDims,
      config.rmsNormEps,
      at0,
    );
    const v = lin(x, 'v_proj.weight', T, H, kvh * HD);
    const o = attnCausalQsa(q, k, v, T, QH, kvh, HD, Math.fround(HD ** -0.5), sel);
    const y = lin(attnOutputGate(o, qg, T, QH, HD), 'o_proj.weight', T, QH * HD, H);
    expect(values.get(out)!.data).toEqual(y);
  });
});

describe('row-sharded QSA selection (graph option qsaRowChunk)', () => {
  // T = 150 on 'small': every row from 67 on drops blocks. Each rank selects for its own C
  // rows (padding rows past T select nothing), the selections are all-gathered and trimmed.
  const T = 150;
  const x = new Rng(6).fillBf16Normal(T * H, 1);

  async function run(tp: number, chunk?: number): Promise<{ blocks: Int32Array[]; partials: Uint16Array[] }> {
    const b = new GraphBuilder(tp);
    const { xIn, rope, feeds } = inputs(b, T, x);
    const ctxs = Array.from({ length: tp }, (_, r) => ctxOf(r, tp, T, chunk));
    const partials = buildAttentionRanks(
      b,
      ctxs,
      ctxs.map(() => xIn),
      rope,
    );
    const blocks = ctxs.map((_, r) => `r${r}/L3.attn/${QSA_BLOCKS}`);
    const { values } = await runOnce(new CpuBackend(), b.build(), feeds, weights, { keep: [...partials, ...blocks] });
    return { blocks: blocks.map((id) => values.get(id)!.data as Int32Array), partials: partials.map((id) => values.get(id)!.data as Uint16Array) };
  }

  let replicated: { blocks: Int32Array[]; partials: Uint16Array[] };
  let kept: number[];
  beforeAll(async () => {
    replicated = await run(1);
    const sel = { r0: 0, rows: T, width: qsaIndexerDims(config).width, compressRatio: 4, blocks: replicated.blocks[0] };
    kept = Array.from({ length: T }, (_, r) => qsaKeptCount(sel, r));
  });

  it('drops tokens at T = 150', () => {
    expect(kept.filter((n, r) => n < r + 1).length).toBe(T - 67);
    expect(kept[T - 1]).toBe(16 * 4 + 2);
  });

  // tp 4 with chunk 38: the last rank has 36 real rows and 2 padding rows; chunk 50: the
  // last rank's rows are all padding
  for (const [tp, chunk] of [
    [2, 75],
    [4, 38],
    [4, 50],
  ] as const) {
    it(`tp ${tp}, chunk ${chunk}: every rank's gathered selection and partial output equal the replicated ones`, async () => {
      const sharded = await run(tp, chunk);
      const perRank = await run(tp);
      for (let r = 0; r < tp; r++) {
        expect(sharded.blocks[r]).toEqual(replicated.blocks[0]);
        expect(perRank.blocks[r]).toEqual(replicated.blocks[0]);
        expect(sharded.partials[r]).toEqual(perRank.partials[r]);
      }
    });
  }
});
