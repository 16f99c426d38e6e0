import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import type { ValueId } from '../../graph/graph.ts';
import { GraphBuilder } from '../../graph/graphBuilder.ts';
import { SyntheticWeightSource } from '../../model/syntheticWeights.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { Rng } from '../../numerics/rng.ts';
import { runOnce } from '../../backend/backend.ts';
import { CpuBackend } from '../../reference/cpuBackend.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { buildPle, type PleTable } from './pleGraph.ts';
import { pleForward, type PleResult, type PleWeightData } from './pleMath.ts';
import { pleRankWeights, pleShape, pleTableShards, pleWeightSpecs } from './pleWeights.ts';

const config = getConfig('small');
const LAYER = config.ple.layerIds[0];
const H = config.hiddenSize;
const n = config.hc.count;
const W = n * H;
const HEADS = 16;
const shape = pleShape(config, LAYER);
const source = new SyntheticWeightSource(pleWeightSpecs(config, LAYER), 5);
const weights = Object.fromEntries(
  Object.entries(pleRankWeights(config, LAYER, 0, 1)).map(([k, ref]) => [k, source.resolve(ref).data]),
) as unknown as PleWeightData;

const T = 64;
const rng = new Rng(12);
const x = rng.fillBf16Normal(T * W, 1);
/** a token other than EOS */
const word = () => {
  const id = rng.int(0, config.vocabSize - 1);
  return id >= config.eosTokenId ? id + 1 : id;
};
/** a different token, not EOS */
const otherWord = (id: number) => {
  const v = (id + 1) % config.vocabSize;
  return v === config.eosTokenId ? (v + 1) % config.vocabSize : v;
};
const tokens = Int32Array.from({ length: T }, word);
// one EOS in the middle: the history resets there
const EOS_AT = 37;
tokens[EOS_AT] = config.eosTokenId;
const full = pleForward(x, tokens, shape, weights);
const row = (a: Uint16Array, t: number) => a.subarray(t * W, (t + 1) * W);

/** The graph's values named after the PleResult field they must equal. */
const PLE_VALUES: [string, keyof PleResult][] = [
  ['ngram_ids', 'ids'],
  ['embedding', 'embedding'],
  ['key_proj', 'key'],
  ['value_proj', 'value'],
  ['norm_key', 'keyNormed'],
  ['norm_query', 'queryNormed'],
  ['gate', 'gate'],
  ['gated', 'gated'],
  ['norm_conv', 'gatedNormed'],
  ['out', 'out'],
];

const ctxs = (tp: number, rows: number) => Array.from({ length: tp }, (_, rank) => ({ config, layer: LAYER, rank, tp, tokens: rows, scope: `L${LAYER}.ple` }));
const VOCAB_PARALLEL: PleTable = { kind: 'vocabParallel', reduce: { algorithm: 'ring', channels: 2, chunkElems: 64 } };

/** The PLE graph of every rank of tp on the CPU backend; every value of every rank kept. */
async function runGraph(tk: Int32Array, xs: Uint16Array, tp: number, table?: PleTable) {
  const rows = tk.length;
  const b = new GraphBuilder(tp);
  const xIn = b.input('x', [rows, W], 'bf16');
  const idsIn = b.input('ids', [rows], 'i32');
  const outs = buildPle(b, ctxs(tp, rows), Array(tp).fill(xIn), idsIn, table);
  const graph = b.build();
  // CpuBackend checks every fed input, resolved weight and produced value against its
  // declared dtype and shape, and throws on a mismatch.
  const feeds = new Map<ValueId, Tensor>([
    [xIn, { dtype: 'bf16', shape: [rows, W], data: xs }],
    [idsIn, { dtype: 'i32', shape: [rows], data: tk }],
  ]);
  const { values } = await runOnce(new CpuBackend(), graph, feeds, source, { keep: 'all' });
  const get = (rank: number, name: string) => values.get(`r${rank}/L${LAYER}.ple/${name}`)!.data as Uint16Array | Int32Array;
  return { graph, outs, get, out: (rank = 0) => values.get(outs[rank])!.data as Uint16Array };
}

describe('PLE graph', () => {
  it.each([1, 2])('at tp=%i every rank computes exactly pleForward, value by value', async (tp) => {
    const { graph, outs, get, out } = await runGraph(tokens, x, tp);
    expect(graph.nodes.filter((nd) => nd.rank === 0).map((nd) => nd.op)).toEqual([
      'pleNgramIds',
      'pleNgramEmbed',
      'linear',
      'linear',
      'pleRms1pNorm',
      'pleRms1pNorm',
      'pleGate',
      'pleGatedValue',
      'pleRms1pNorm',
      'pleConvSilu',
    ]);
    // replicated: every rank reads the same unsliced weights, the table as one concat of its shards
    const weightIds = new Set(graph.nodes.flatMap((nd) => nd.inputs).filter((id) => id !== null && graph.values[id].kind === 'weight'));
    expect(weightIds.size).toBe(7);
    const table = [...weightIds].map((id) => graph.values[id!]).find((v) => v.weight!.concat);
    expect(table!.weight!.concat).toEqual(pleTableShards(config, LAYER).map((s) => s.name));
    expect(table!.shape).toEqual([shape.tableRows, config.ple.embedDim / HEADS]);
    for (let rank = 0; rank < tp; rank++) {
      for (const [name, field] of PLE_VALUES) expect(get(rank, name), `rank ${rank} ${name}`).toEqual(full[field]);
    }
    expect(out(tp - 1)).toEqual(full.out);
    expect(outs.length).toBe(tp);
  });

  it.each([
    1, 2, 4,
  ])('with the table vocab-parallel at tp=%i: each rank holds 1/tp of the rows, the all-reduced lookups are pleForward bit for bit', async (tp) => {
    const { graph, get, out } = await runGraph(tokens, x, tp, VOCAB_PARALLEL);
    const tables = Object.values(graph.values).filter((v) => v.kind === 'weight' && v.weight!.concat);
    expect(tables.map((v) => v.shape)).toEqual(Array(tp).fill([shape.tableRows / tp, config.ple.embedDim / HEADS]));
    expect(tables.every((v) => v.weight!.gather === undefined)).toBe(true);
    expect(graph.nodes.filter((nd) => nd.op === 'allReduce').length).toBe(tp > 1 ? 1 : 0);
    expect(graph.nodes.some((nd) => nd.op === 'pleNgramEmbed')).toBe(false);
    for (let rank = 0; rank < tp; rank++) {
      for (const [name, field] of PLE_VALUES) expect(get(rank, name), `rank ${rank} ${name}`).toEqual(full[field]);
      expect(out(rank)).toEqual(full.out);
    }
    if (tp > 1) {
      // a rank's own lookup: its rows where its slice holds the id, -0.0 (0x8000) elsewhere
      const slice = get(1, 'embedding_slice') as Uint16Array;
      const d = config.ple.embedDim / HEADS;
      const lo = shape.tableRows / tp;
      full.ids.forEach((id, i) => {
        const mine = id >= lo && id < 2 * lo;
        const got = slice.subarray(i * d, (i + 1) * d);
        expect(Array.from(got), `id ${id}`).toEqual(mine ? Array.from(full.embedding.subarray(i * d, (i + 1) * d)) : Array(d).fill(0x8000));
      });
    }
  });

  it('a vocab-parallel table that tp does not divide is refused naming both', () => {
    const b = new GraphBuilder(5);
    const xIn = b.input('x', [T, W], 'bf16');
    const idsIn = b.input('ids', [T], 'i32');
    expect(() => buildPle(b, ctxs(5, T), Array(5).fill(xIn), idsIn, VOCAB_PARALLEL)).toThrow(
      `ple: the n-gram table's ${shape.tableRows} rows do not split into tp 5 vocab slices`,
    );
  });

  it('the graph ids index the padded table: each head within its offset range', async () => {
    const ids = (await runGraph(tokens, x, 1)).get(0, 'ngram_ids') as Int32Array;
    for (let i = 0; i < ids.length; i++) {
      const h = i % HEADS;
      expect(ids[i]).toBeGreaterThanOrEqual(shape.offsets[h]);
      expect(ids[i]).toBeLessThan(shape.offsets[h] + shape.vocabSizes[h]);
    }
  });

  it('sees across a row-shard boundary: PLE on a shard alone differs from PLE on all rows, sliced', () => {
    // rank 1 of tp=4: rows [16, 32)
    const C = T / 4;
    const start = C;
    const shard = pleForward(x.subarray(start * W, (start + C) * W), tokens.subarray(start, start + C), shape, weights).out;
    // Rows near the start lose their trigram context (t-2, t-1: EOS for a fresh sequence)
    // and their conv taps (t-9, t-6, t-3): all differ. Row t depends on rows back to t-9-2
    // (a tap's trigram), so the rows from start+11 on see only shard rows and are identical.
    for (let t = 0; t < 11; t++) expect(row(shard, t)).not.toEqual(row(full.out, start + t));
    for (let t = 11; t < C; t++) expect(row(shard, t)).toEqual(row(full.out, start + t));
  });

  it('depends on exactly the conv taps (t-9, t-6, t-3, t) and the trigram (t-2, t-1)', () => {
    const t = 30;
    const withToken = (pos: number) => {
      const tk = tokens.slice();
      tk[pos] = otherWord(tk[pos]);
      return pleForward(x, tk, shape, weights).out;
    };
    const withStream = (pos: number) => {
      const xs = x.slice();
      xs.set(new Rng(pos).fillBf16Normal(W, 1), pos * W);
      return pleForward(xs, tokens, shape, weights).out;
    };
    // token t-9 reaches row t only through the conv tap at t-9; token t-2 through row t's trigram
    expect(row(withToken(t - 9), t)).not.toEqual(row(full.out, t));
    expect(row(withToken(t - 2), t)).not.toEqual(row(full.out, t));
    // token t-12 is in no n-gram of the taps (the tap at t-9 sees t-11..t-9)
    expect(row(withToken(t - 12), t)).toEqual(row(full.out, t));
    // the streams enter only through the gates of the tap rows
    expect(row(withStream(t - 9), t)).not.toEqual(row(full.out, t));
    expect(row(withStream(t - 1), t)).toEqual(row(full.out, t));
  });

  it('is causal: changing tokens and streams after t leaves rows up to t unchanged (graph)', async () => {
    const t = 30;
    const xs = x.slice();
    xs.set(new Rng(77).fillBf16Normal((T - t - 1) * W, 1), (t + 1) * W);
    const tk = tokens.slice();
    for (let i = t + 1; i < T; i++) tk[i] = i === EOS_AT ? tk[i] : word();
    tk[t + 5] = config.eosTokenId;
    const out = (await runGraph(tk, xs, 1)).out();
    expect(out.subarray(0, (t + 1) * W)).toEqual(full.out.subarray(0, (t + 1) * W));
    expect(out.subarray((t + 1) * W)).not.toEqual(full.out.subarray((t + 1) * W));
  });

  it('resets the n-gram history at EOS to a fresh sequence; the EOS row and the conv still reach back (graph)', async () => {
    const base = await runGraph(tokens, x, 1);
    const other = tokens.slice();
    other[EOS_AT - 1] = otherWord(other[EOS_AT - 1]);
    const changed = await runGraph(other, x, 1);
    const D = config.ple.embedDim;
    const ids = (r: Awaited<ReturnType<typeof runGraph>>) => r.get(0, 'ngram_ids') as Int32Array;
    // the ids after the EOS are those of a fresh sequence starting after it (EOS history, as
    // before the first token), so they do not see the token before the EOS
    const suffix = tokens.subarray(EOS_AT + 1);
    const fresh = await runGraph(suffix, x.subarray((EOS_AT + 1) * W), 1);
    expect(ids(base).subarray((EOS_AT + 1) * HEADS)).toEqual(ids(fresh));
    expect(ids(changed).subarray((EOS_AT + 1) * HEADS)).toEqual(ids(fresh));
    const emb = (r: Awaited<ReturnType<typeof runGraph>>, t: number) => r.get(0, 'embedding').subarray(t * D, (t + 1) * D);
    expect(emb(changed, EOS_AT + 1)).toEqual(emb(base, EOS_AT + 1));
    expect(emb(changed, EOS_AT + 2)).toEqual(emb(base, EOS_AT + 2));
    // the EOS row itself still sees the tokens it ends (only the history before it is replaced)
    expect(emb(changed, EOS_AT)).not.toEqual(emb(base, EOS_AT));
    // the output 9 rows after the changed token still depends on it through the conv tap
    expect(row(changed.out(), EOS_AT - 1 + 9)).not.toEqual(row(base.out(), EOS_AT - 1 + 9));
  });
});

describe('PLE table reads', () => {
  it('read only the rows the n-gram ids name, from the shards they fall in, with the same output', async () => {
    // counts the table rows the session asks the source for (the table is a concat of shards)
    const shardNames = new Set(pleTableShards(config, LAYER).map((s) => s.name));
    let rowsRead = 0;
    let wholeReads = 0;
    const counting: WeightSource = {
      has: (name) => source.has(name),
      info: (name) => source.info(name),
      read: async (name, slice) => {
        if (shardNames.has(name)) {
          if (!slice) wholeReads++;
          else rowsRead += slice.ranges.reduce((acc, [a, b]) => acc + b - a, 0);
        }
        return source.read(name, slice);
      },
    };
    const b = new GraphBuilder(1);
    const xIn = b.input('x', [T, W], 'bf16');
    const idsIn = b.input('ids', [T], 'i32');
    const [out] = buildPle(b, ctxs(1, T), [xIn], idsIn);
    const feeds = new Map<ValueId, Tensor>([
      [xIn, { dtype: 'bf16', shape: [T, W], data: x }],
      [idsIn, { dtype: 'i32', shape: [T], data: tokens }],
    ]);
    const { values } = await runOnce(new CpuBackend(), b.build(), feeds, counting, { keep: [out] });
    expect(values.get(out)!.data).toEqual(full.out);
    expect(wholeReads).toBe(0);
    // at most one row per (token, head), far fewer than the padded table's rows
    const distinct = new Set(full.ids).size;
    expect(rowsRead).toBe(distinct);
    expect(rowsRead).toBeLessThanOrEqual(T * HEADS);
    expect(rowsRead * 10).toBeLessThan(shape.tableRows);
  });
});
