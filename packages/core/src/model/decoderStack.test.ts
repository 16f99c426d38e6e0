import { describe, expect, it } from 'vitest';
import { SMALL } from '../config/presets.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { bf16ArrayToF32 } from '../numerics/bf16.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { runOnce } from '../backend/backend.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import type { Tensor } from '../tensor/tensor.ts';
import { preparePrefill, type SpMode } from './prefill.ts';

// The full decoder stack (issue 3) on the small config: 8 layers with the PLE at index 1,
// GatedDeltaNet on layers 0-2 and 4-6, attention on 3 and 7, MoE everywhere.
const backend = new CpuBackend();
const T = 41; // C = 21 at tp 2 (1 padding row), 11 at tp 4 (3 padding rows)
const H = SMALL.hiddenSize;
const WIDTH = SMALL.hc.count * H;

async function run(
  tp: number,
  sp: SpMode,
  reduce: ReduceAlgorithm,
  opts: { keepAll?: boolean; ids?: Int32Array; mtpDrafter?: 'gathered' | 'sharded'; tokens?: number } = {},
) {
  const tokens = opts.tokens ?? T;
  const p = preparePrefill({ config: SMALL, tokens, tp, sp, reduce, seed: 3, subLayers: MODEL_SUB_LAYERS, logits: 'all', mtpDrafter: opts.mtpDrafter });
  if (opts.ids) p.feeds.set('ids', { dtype: 'i32', shape: [tokens], data: opts.ids });
  const result = await runOnce(backend, p.graph, p.feeds, p.weights, opts.keepAll ? { keep: 'all' } : {});
  const get = (id: string): Tensor => result.values.get(id)!;
  const bytes = (id: string) => Buffer.from(get(id).data.buffer);
  const heads = {
    logits: bytes(p.outputs.logits),
    next: bytes(p.outputs.nextTokens),
    mtpLogits: bytes(p.outputs.mtp!.logits),
    draft: bytes(p.outputs.mtp!.draftTokens),
  };
  return { p, result, get, h: get(p.outputs.h).data as Uint16Array, mtp: p.outputs.mtpState ? (get(p.outputs.mtpState).data as Uint16Array) : null, heads };
}

function expectSameHeads(a: Awaited<ReturnType<typeof run>>['heads'], b: Awaited<ReturnType<typeof run>>['heads']): void {
  for (const k of ['logits', 'next', 'mtpLogits', 'draft'] as const) expect(a[k].equals(b[k]), k).toBe(true);
}

const offTp2 = await run(2, 'off', 'ring');

describe('decoder stack (PLE, GatedDeltaNet, attention, MoE) on the CPU reference', () => {
  it('keeps activations in a realistic range through every layer (no overflow, no collapse)', async () => {
    const { p, get } = await run(1, 'off', 'ring', { keepAll: true });
    for (const [r0] of p.outputs.streamsPerStep) {
      const v = bf16ArrayToF32(get(r0).data as Uint16Array);
      let sumsq = 0;
      for (const x of v) {
        expect(Number.isFinite(x)).toBe(true);
        sumsq += x * x;
      }
      const rms = Math.sqrt(sumsq / v.length);
      expect(rms).toBeGreaterThan(0.3);
      expect(rms).toBeLessThan(30);
    }
    const h = bf16ArrayToF32(get(p.outputs.h).data as Uint16Array);
    const rms = Math.sqrt(h.reduce((a, x) => a + x * x, 0) / h.length);
    expect(rms).toBeGreaterThan(0.05);
    expect(rms).toBeLessThan(10);
  });

  it('SP on and off are bit-identical at tp 2, for the mixer output, the MTP state, the logits and the MTP head', async () => {
    const on = await run(2, 'on', 'ring');
    expect(on.p.plan.sp).toBe(true);
    expect(on.p.plan.spStartLayer).toBe(2);
    expect(Buffer.from(on.h.buffer).equals(Buffer.from(offTp2.h.buffer))).toBe(true);
    expect(Buffer.from(on.mtp!.buffer).equals(Buffer.from(offTp2.mtp!.buffer))).toBe(true);
    expectSameHeads(on.heads, offTp2.heads);
  });

  it('the sharded MTP drafter (HC work on row shards) equals the gathered one bit for bit at tp 2', async () => {
    const sharded = await run(2, 'on', 'ring', { mtpDrafter: 'sharded' });
    const scopes = sharded.p.graph.nodes.map((nd) => nd.scope);
    // no gathered pre-mixer state: the mixer output is gathered, the draft layer reduce-scatters
    expect(sharded.p.graph.meta.gather).toBe('mixer');
    expect(sharded.p.outputs.mtpState).toBeNull();
    expect(scopes).toContain('mtp.attn.reduce_scatter');
    expect(scopes).toContain('mtp.mlp.reduce_scatter');
    expect(scopes.some((sc) => sc.startsWith('mtp_state'))).toBe(false);
    expect(Buffer.from(sharded.h.buffer).equals(Buffer.from(offTp2.h.buffer))).toBe(true);
    expectSameHeads(sharded.heads, offTp2.heads);
  });

  it('with the QSA indexer dropping tokens (T = 75 > 67 visible): SP on, off and the sharded drafter agree bit for bit at tp 2', async () => {
    const tokens = 75;
    const off = await run(2, 'off', 'ring', { tokens });
    for (const o of [{}, { mtpDrafter: 'sharded' as const }]) {
      const on = await run(2, 'on', 'ring', { tokens, ...o });
      expect(Buffer.from(on.h.buffer).equals(Buffer.from(off.h.buffer))).toBe(true);
      expectSameHeads(on.heads, off.heads);
    }
  });

  it('at tp 4 with the ring order, SP on vs off differs within a bounded row-scale error', async () => {
    const on = await run(4, 'on', 'ring');
    const off = await run(4, 'off', 'ring');
    const e = rowScaledError(on.h, off.h, T, H);
    console.log(`tp 4 ring SP on vs off, small model stack T=${T}: ${e.differing}/${e.count} differ, max ${e.maxRowUlp.toFixed(3)} row-scale ulps`);
    expect(e.differing).toBeGreaterThan(0);
    // Reordered bf16 sums move each sub-layer output by ~1 ulp; the streams carry those
    // through 12 sharded sub-layers (and GDN/attention mix them across rows). Measured on
    // the model as the reference rounds it (bf16 RoPE products, the PLE gate's rounding
    // points, QSA): seeds 1-8 give 5.0, 6.75, 9.5, 5.25, 4.63, 4.5, 7.39, 5.5 row-scale
    // ulps (this test's seed 3 is the largest; it was 5 before those rounding points).
    // Allowance: 12, one ulp per sharded sub-layer; a wrong order or a lost row would be
    // thousands.
    expect(e.maxRowUlp).toBeLessThanOrEqual(12);
    // one-shot (fp32, rank order) adds the same way in all-reduce and reduce-scatter
    const a = await run(4, 'on', 'oneshot');
    const b = await run(4, 'off', 'oneshot');
    expect(Buffer.from(a.h.buffer).equals(Buffer.from(b.h.buffer))).toBe(true);
    expectSameHeads(a.heads, b.heads);
  });

  it('keeps padding rows zero at every sharded step and gathers the MTP state to all T rows', async () => {
    const { p, get } = await run(4, 'on', 'ring', { keepAll: true });
    const C = p.plan.chunk;
    const lastReal = p.plan.shards[3].realRows;
    expect(lastReal).toBe(T - 3 * C);
    let checked = 0;
    for (const perRank of p.outputs.streamsPerStep) {
      const s = get(perRank[3]);
      if (s.shape[0] !== C) continue;
      expect((s.data as Uint16Array).subarray(lastReal * WIDTH).every((v) => v === 0)).toBe(true);
      checked++;
    }
    expect(checked).toBe((SMALL.numLayers - 2) * 2);
    expect(get(p.outputs.mtpState!).shape).toEqual([T, WIDTH]);
  });

  it('is causal: outputs before t do not change when tokens from t on change', async () => {
    const t0 = 25;
    const ids = Int32Array.from(offTp2.p.tokenIds);
    for (let t = t0; t < T; t++) ids[t] = (ids[t] + 17) % SMALL.vocabSize;
    const changed = await run(2, 'on', 'ring', { ids });
    expect(Buffer.from(changed.h.buffer, 0, t0 * H * 2).equals(Buffer.from(offTp2.h.buffer, 0, t0 * H * 2))).toBe(true);
    expect(Buffer.from(changed.h.buffer, t0 * H * 2).equals(Buffer.from(offTp2.h.buffer, t0 * H * 2))).toBe(false);
  });
});
