import { describe, expect, it } from 'vitest';
import { TINY } from '../config/presets.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { MOE_TOPK_IDS } from '../layers/moe/moeGraph.ts';
import { moeRoute } from '../layers/moe/moeMath.ts';
import { mtpLayerInput } from '../layers/mtp/mtpMath.ts';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { runOnce } from '../backend/backend.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { preparePrefill, type PrefillOptions } from './prefill.ts';
import type { SyntheticWeightSource } from './syntheticWeights.ts';

// The LM head, the MTP head and the golden-dump values of the decoder graph on the tiny
// config (4 layers: PLE at 1, attention with the QSA indexer at 3), checked against
// computations written here from the definitions (model.md "LM head and MTP").
const backend = new CpuBackend();
const { hiddenSize: H, vocabSize: V } = TINY;
const WIDTH = TINY.hc.count * H;
const T = 21; // the indexer drops tokens from 20 visible on; C = 11 at tp 2 (1 padding row)

async function run(o: Partial<PrefillOptions> & { tp: number }, keep: string[] = []) {
  const p = preparePrefill({ config: TINY, tokens: T, sp: 'off', reduce: 'ring', seed: 8, subLayers: MODEL_SUB_LAYERS, ...o });
  const r = await runOnce(backend, p.graph, p.feeds, p.weights, { keep });
  const get = (id: string): Tensor => {
    const t = r.values.get(id);
    if (!t) throw new Error(`no value '${id}'`);
    return t;
  };
  return { p, get, weights: p.weights as SyntheticWeightSource };
}

/** logits[t, v] = bf(sum_k h[t,k] W[v,k]), fp32 accumulation in k order (each bf16 product is exact). */
function referenceLogits(h: Uint16Array, w: Uint16Array, rows: number): Uint16Array {
  const out = new Uint16Array(rows * V);
  for (let t = 0; t < rows; t++) {
    for (let v = 0; v < V; v++) {
      let acc = 0;
      for (let k = 0; k < H; k++) acc = Math.fround(acc + bf16ToF32(h[t * H + k]) * bf16ToF32(w[v * H + k]));
      out[t * V + v] = f32ToBf16(acc);
    }
  }
  return out;
}

function firstMax(row: Uint16Array): number {
  let best = 0;
  for (let v = 1; v < row.length; v++) if (bf16ToF32(row[v]) > bf16ToF32(row[best])) best = v;
  return best;
}

const same = (a: Tensor, b: Tensor) =>
  a.dtype === b.dtype &&
  a.shape.join() === b.shape.join() &&
  Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength).equals(Buffer.from(b.data.buffer, b.data.byteOffset, b.data.byteLength));

describe('LM head', () => {
  it.each([
    1, 2,
  ])('tp %i (vocab rows split over the ranks): logits of every row and their argmax equal a direct computation from h and lm_head.weight', async (tp) => {
    const { p, get, weights } = await run({ tp, logits: 'all' });
    const h = get(p.outputs.h).data as Uint16Array;
    const logits = get(p.outputs.logits);
    expect(logits.shape).toEqual([T, V]);
    const want = referenceLogits(h, weights.tensor('lm_head.weight').data as Uint16Array, T);
    expect(Buffer.from((logits.data as Uint16Array).buffer).equals(Buffer.from(want.buffer))).toBe(true);
    const ids = get(p.outputs.nextTokens);
    expect(ids.shape).toEqual([T]);
    expect(Array.from(ids.data)).toEqual(Array.from({ length: T }, (_, t) => firstMax(want.subarray(t * V, (t + 1) * V))));
  });

  it('by default only the last position: the last row of the all-rows logits', async () => {
    const all = await run({ tp: 2, logits: 'all' });
    const last = await run({ tp: 2 });
    const l = last.get(last.p.outputs.logits);
    expect(l.shape).toEqual([1, V]);
    expect(Array.from(l.data)).toEqual(Array.from((all.get(all.p.outputs.logits).data as Uint16Array).subarray((T - 1) * V)));
    expect(Array.from(last.get(last.p.outputs.nextTokens).data)).toEqual([all.get(all.p.outputs.nextTokens).data[T - 1]]);
  });
});

describe('MTP head', () => {
  it('draft ids = ids shifted by one + the greedy token; X0 = the input stage over the gathered pre-mixer state; draft logits = the shared lm_head over the MTP mixer', async () => {
    const { p, get, weights } = await run({ tp: 2, sp: 'on' }, ['r0/mtp/x0', 'r0/mtp.mixer/x']);
    expect(p.plan.gather).toBe('hc_state');
    const mtp = p.outputs.mtp!;
    const next = get(p.outputs.nextTokens).data[0];
    const draftIds = Array.from(get(mtp.draftIds).data);
    expect(draftIds).toEqual([...Array.from(p.tokenIds).slice(1), next]);

    const table = weights.tensor('model.embed_tokens.weight').data as Uint16Array;
    const embedded = new Uint16Array(T * H);
    draftIds.forEach((id, t) => {
      embedded.set(table.subarray(id * H, (id + 1) * H), t * H);
    });
    const w = (name: string) => weights.tensor(`mtp.${name}.weight`).data as Uint16Array;
    const x0 = mtpLayerInput(
      embedded,
      get(p.outputs.mtpState!).data as Uint16Array,
      {
        normEmbedding: w('pre_fc_norm_embedding'),
        normHidden: w('pre_fc_norm_hidden'),
        fcEmbedding: w('fc_embedding'),
        fcHidden: w('fc_hidden'),
      },
      T,
      H,
      TINY.hc.count,
      TINY.rmsNormEps,
    );
    expect(Buffer.from((get('r0/mtp/x0').data as Uint16Array).buffer).equals(Buffer.from(x0.buffer))).toBe(true);

    const hm = get('r0/mtp.mixer/x').data as Uint16Array;
    const want = referenceLogits(hm.subarray((T - 1) * H), weights.tensor('lm_head.weight').data as Uint16Array, 1);
    expect(Array.from(get(mtp.logits).data)).toEqual(Array.from(want));
    expect(Array.from(get(mtp.draftTokens).data)).toEqual([firstMax(want)]);
  });

  it('the draft layer reads only its own tensors (mtp.layers.0.*, its HCs and mixer) besides the shared embedding and lm_head', async () => {
    const { p } = await run({ tp: 2 });
    const { graph } = p;
    const read = new Set<string>();
    for (const nd of graph.nodes.filter((x) => x.scope.startsWith('mtp'))) {
      for (const id of nd.inputs) {
        const v = id === null ? null : graph.values[id];
        if (v?.kind === 'weight') read.add(v.weight!.name);
      }
    }
    const names = [...read];
    expect(names.filter((n) => !n.startsWith('mtp.') && n !== 'model.embed_tokens.weight' && n !== 'lm_head.weight')).toEqual([]);
    for (const n of [
      'mtp.layers.0.self_attn.q_proj.weight',
      'mtp.layers.0.self_attn.indexer.index_qk_proj.weight',
      'mtp.layers.0.mlp.gate.weight',
      'mtp.layers.0.attn_hyper_connection.W_cat',
      'mtp.hyper_connection_mixer.input_mix_weight_up.weight',
      'mtp.fc_hidden.weight',
    ]) {
      expect(names).toContain(n);
    }
    // the draft layer's nodes carry ATOM's layer_num = num_hidden_layers
    expect(new Set(graph.nodes.filter((x) => x.scope.startsWith('mtp.attn.')).map((x) => x.layer))).toEqual(new Set([TINY.numLayers]));
    // its RoPE tables are those of positions 1..T
    const cos = p.feeds.get('mtp/rope_cos')!;
    const main = p.feeds.get('rope_cos')!;
    const half = TINY.attention.ropeDims / 2;
    expect(cos.shape).toEqual([T, half]);
    expect(Array.from(cos.data.subarray(0, (T - 1) * half))).toEqual(Array.from(main.data.subarray(half)));
  });
});

describe('golden dump values', () => {
  const names = (ple: boolean, layer: number) => [
    `layers.${layer}.in`,
    ...(ple ? [`layers.${layer}.ple.ngram_ids`, `layers.${layer}.ple.out`] : []),
    `layers.${layer}.attn_hc.mixed`,
    `layers.${layer}.attn.out`,
    `layers.${layer}.mlp_hc.mixed`,
    `layers.${layer}.mlp.out`,
    `layers.${layer}.mlp.topk_ids`,
  ];

  it('are all there with issue 8 shapes, gathered under SP, and bit-identical to the unsharded run at tp 2', async () => {
    const on = await run({ tp: 2, sp: 'on', dump: true });
    const off = await run({ tp: 2, sp: 'off', dump: true });
    expect(on.p.plan.sp).toBe(true);
    const d = on.p.outputs.dumpValues;
    const heads = TINY.ple.headsPerNgram * (TINY.ple.ngramSize - 1);
    const want: Record<string, number[]> = {
      embed: [T, H],
      'final.in': [T, WIDTH],
      'final.mixed': [T, H],
      logits: [1, V],
      'mtp.logits': [1, V],
      'mtp.mlp.topk_ids': [T, TINY.moe.topK],
    };
    for (let l = 0; l < TINY.numLayers; l++) {
      for (const n of names(TINY.ple.layerIds.includes(l), l))
        want[n] =
          n.endsWith('.in') || n.endsWith('ple.out') ? [T, WIDTH] : n.endsWith('ngram_ids') ? [T, heads] : n.endsWith('topk_ids') ? [T, TINY.moe.topK] : [T, H];
    }
    // attn.kept is dumped when the attention emits a per-row 'kept' count
    const kept = Object.keys(d).filter((n) => n.endsWith('.attn.kept'));
    expect(
      Object.keys(d)
        .filter((n) => !n.endsWith('.attn.kept'))
        .sort(),
    ).toEqual(Object.keys(want).sort());
    for (const [n, shape] of Object.entries(want)) expect(on.get(d[n]).shape, n).toEqual(shape);
    for (const n of kept) expect(on.get(d[n]).shape[0], n).toBe(T);
    for (const n of Object.keys(d)) expect(same(on.get(d[n]), off.get(off.p.outputs.dumpValues[n])), n).toBe(true);
    // consistency with the run's own outputs and with the definitions
    expect(same(on.get(d['final.mixed']), on.get(on.p.outputs.h))).toBe(true);
    expect(same(on.get(d.logits), on.get(on.p.outputs.logits))).toBe(true);
    expect(same(on.get(d['final.in']), on.get(on.p.outputs.mtpState!))).toBe(true);
    const e = on.get(d.embed).data as Uint16Array;
    const x0 = on.get(d['layers.0.in']).data as Uint16Array;
    for (let t = 0; t < T; t++)
      for (let s = 0; s < TINY.hc.count; s++)
        expect(Array.from(x0.subarray(t * WIDTH + s * H, t * WIDTH + (s + 1) * H))).toEqual(Array.from(e.subarray(t * H, (t + 1) * H)));
  });

  it("mlp.topk_ids is each layer's router choice: rank 0's moeRoute ids of its router logits, the same on every rank, under SP too", async () => {
    const layers = Array.from({ length: TINY.numLayers }, (_, l) => l);
    const keep = layers.flatMap((l) => [`r0/L${l}.mlp/router`, `r1/L${l}.mlp/${MOE_TOPK_IDS}`]);
    const { p, get } = await run({ tp: 2, sp: 'on', dump: true }, keep);
    for (const l of layers) {
      const ids = get(p.outputs.dumpValues[`layers.${l}.mlp.topk_ids`]);
      expect(ids.dtype).toBe('i32');
      const logits = get(`r0/L${l}.mlp/router`).data as Uint16Array;
      const want = moeRoute(logits, T, TINY.moe.numExperts, TINY.moe.topK, TINY.moe.normTopkProb).ids;
      expect(Array.from(ids.data), `layer ${l}`).toEqual(Array.from(want));
      expect(Array.from(get(`r1/L${l}.mlp/${MOE_TOPK_IDS}`).data), `layer ${l}`).toEqual(Array.from(want));
    }
  });

  it("mtp.mlp.topk_ids is the MTP head's router choice, named as the layers' (HF has no MTP head: a golden without it lists it as not compared)", async () => {
    const { p, get } = await run({ tp: 2, sp: 'on', dump: true }, ['r0/mtp.mlp/router', `r1/mtp.mlp/${MOE_TOPK_IDS}`]);
    const ids = get(p.outputs.dumpValues['mtp.mlp.topk_ids']);
    expect(ids.dtype).toBe('i32');
    const want = moeRoute(get('r0/mtp.mlp/router').data as Uint16Array, T, TINY.moe.numExperts, TINY.moe.topK, TINY.moe.normTopkProb).ids;
    expect(Array.from(ids.data)).toEqual(Array.from(want));
    expect(Array.from(get(`r1/mtp.mlp/${MOE_TOPK_IDS}`).data)).toEqual(Array.from(want));
  });

  it('cost nothing when not requested: no dump gathers, no extra outputs', async () => {
    const plain = preparePrefill({ config: TINY, tokens: T, tp: 2, sp: 'on', reduce: 'ring', seed: 8, subLayers: MODEL_SUB_LAYERS });
    expect(plain.outputs.dumpValues).toEqual({});
    expect(plain.graph.nodes.some((nd) => nd.scope.startsWith('dump.'))).toBe(false);
    const dumped = preparePrefill({ config: TINY, tokens: T, tp: 2, sp: 'on', reduce: 'ring', seed: 8, subLayers: MODEL_SUB_LAYERS, dump: true });
    expect(dumped.graph.nodes.some((nd) => nd.scope.startsWith('dump.'))).toBe(true);
  });
});
