import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import { Rng } from '../../numerics/rng.ts';
import { runOnce } from '../../backend/backend.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { buildPle } from './pleGraph.ts';
import { pleForward, type PleWeightData } from './pleMath.ts';
import { pleRankWeights, pleShape, pleWeightSpecs } from './pleWeights.ts';

const config = getConfig('small');
const LAYER = config.ple.layerIds[0];
const H = config.hiddenSize;
const W = config.hc.count * H;
const shape = pleShape(config);
const source = new SyntheticWeightSource(pleWeightSpecs(config, LAYER), 5);
const weights = Object.fromEntries(
  Object.entries(pleRankWeights(config, LAYER, 0, 1)).map(([k, ref]) => [k, source.resolve(ref).data]),
) as unknown as PleWeightData;

const T = 64;
const rng = new Rng(12);
const x = rng.fillBf16Normal(T * W, 1);
// no EOS in the random tokens, so the n-gram history runs through the whole sequence
const tokens = Int32Array.from({ length: T }, () => rng.int(0, config.eosTokenId));
const full = pleForward(x, tokens, shape, weights).out;
const row = (a: Uint16Array, t: number) => a.subarray(t * W, (t + 1) * W);

describe('PLE graph', () => {
  it('is replicated: at tp=2 every rank builds the same nodes and gets exactly the math output', async () => {
    const tp = 2;
    const b = new GraphBuilder(tp);
    const xIn = b.input('x', [T, W], 'bf16');
    const idsIn = b.input('ids', [T], 'i32');
    const outs = Array.from({ length: tp }, (_, rank) => buildPle(b, { config, layer: LAYER, rank, tp, tokens: T, scope: `L${LAYER}.ple` }, xIn, idsIn));
    const graph = b.build();
    expect(graph.nodes.filter((n) => n.rank === 0).map((n) => n.op)).toEqual([
      'pleNgramIds', 'pleNgramEmbed', 'linear', 'linear', 'pleRmsNorm', 'pleRmsNorm', 'pleGate', 'pleGatedValue', 'pleRmsNorm', 'pleConvSilu',
    ]);
    // replicated weights: both ranks read the same (unsliced) weight values
    const weightIds = new Set(graph.nodes.flatMap((n) => n.inputs).filter((id) => id !== null && graph.values[id].kind === 'weight'));
    expect(weightIds.size).toBe(7);
    // CpuBackend checks every fed input, resolved weight and produced value against its
    // declared dtype and shape, and throws on a mismatch.
    const { values } = await runOnce(
      new CpuBackend(),
      graph,
      new Map<ValueId, Tensor>([
        [xIn, { dtype: 'bf16', shape: [T, W], data: x }],
        [idsIn, { dtype: 'i32', shape: [T], data: tokens }],
      ]),
      source,
      { keep: outs },
    );
    for (const id of outs) expect(values.get(id)!.data).toEqual(full);
  });

  it('sees across a row-shard boundary: PLE on a shard alone differs from PLE on all rows, sliced', () => {
    // rank 1 of tp=4: rows [16, 32)
    const C = T / 4;
    const start = C;
    const shard = pleForward(x.subarray(start * W, (start + C) * W), tokens.subarray(start, start + C), shape, weights).out;
    let differing = 0;
    for (let t = 0; t < C; t++) if (!row(shard, t).every((v, j) => v === row(full, start + t)[j])) differing++;
    // Rows near the start lose their trigram context (t-2, t-1) and their conv taps (t-9,
    // t-6, t-3): all differ. Row t depends on rows back to t-9-2 (a tap's trigram), so the
    // rows from start+11 on see only shard rows and are bit-identical.
    for (let t = 0; t < 11; t++) expect(row(shard, t)).not.toEqual(row(full, start + t));
    for (let t = 11; t < C; t++) expect(row(shard, t)).toEqual(row(full, start + t));
    expect(differing).toBe(11);
  });

  it('depends on exactly the conv taps (t-9, t-6, t-3, t) and the trigram (t-2, t-1)', () => {
    const t = 40;
    const withToken = (pos: number) => {
      const tk = tokens.slice();
      tk[pos] = (tk[pos] + 1) % config.eosTokenId;
      return pleForward(x, tk, shape, weights).out;
    };
    const withStream = (pos: number) => {
      const xs = x.slice();
      xs.set(new Rng(pos).fillBf16Normal(W, 1), pos * W);
      return pleForward(xs, tokens, shape, weights).out;
    };
    // token t-9 reaches row t only through the conv tap at t-9; token t-2 through row t's trigram
    expect(row(withToken(t - 9), t)).not.toEqual(row(full, t));
    expect(row(withToken(t - 2), t)).not.toEqual(row(full, t));
    // token t-12 is in no n-gram of the taps (the tap at t-9 sees t-11..t-9)
    expect(row(withToken(t - 12), t)).toEqual(row(full, t));
    // the streams enter only through the gates of the tap rows
    expect(row(withStream(t - 9), t)).not.toEqual(row(full, t));
    expect(row(withStream(t - 1), t)).toEqual(row(full, t));
  });

  it('is causal: changing tokens and streams after t leaves rows up to t unchanged', () => {
    const t = 30;
    const xs = x.slice();
    xs.set(new Rng(77).fillBf16Normal((T - t - 1) * W, 1), (t + 1) * W);
    const tk = tokens.slice();
    for (let i = t + 1; i < T; i++) tk[i] = (tk[i] + 7) % config.eosTokenId;
    const out = pleForward(xs, tk, shape, weights).out;
    expect(out.subarray(0, (t + 1) * W)).toEqual(full.subarray(0, (t + 1) * W));
    expect(out.subarray((t + 1) * W)).not.toEqual(full.subarray((t + 1) * W));
  });

  it('resets the n-gram history at EOS (the conv, per model.md, still reaches back)', () => {
    const eos = 20;
    const tk = tokens.slice();
    tk[eos] = config.eosTokenId;
    const base = pleForward(x, tk, shape, weights);
    const other = tokens.slice();
    other[eos] = config.eosTokenId;
    other[eos - 1] = (other[eos - 1] + 1) % config.eosTokenId;
    const changed = pleForward(x, other, shape, weights);
    const D = config.ple.embedDim;
    // embeddings after the EOS do not see the token before it (they would through the trigram)
    expect(changed.embedding.subarray((eos + 1) * D, (eos + 3) * D)).toEqual(base.embedding.subarray((eos + 1) * D, (eos + 3) * D));
    // the EOS row itself still sees it
    expect(changed.embedding.subarray(eos * D, (eos + 1) * D)).not.toEqual(base.embedding.subarray(eos * D, (eos + 1) * D));
    // the output 9 rows later still depends on it through the conv tap at eos-1+9
    expect(row(changed.out, eos - 1 + 9)).not.toEqual(row(base.out, eos - 1 + 9));
  });
});
