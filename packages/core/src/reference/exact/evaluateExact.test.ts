import { describe, expect, it } from 'vitest';
import { runOnce } from '../../backend/backend.ts';
import { SMALL, TINY } from '../../config/presets.ts';
import type { ModelConfig } from '../../config/modelConfig.ts';
import type { Graph } from '../../graph/graph.ts';
import type { OpName } from '../../graph/ops/registry.ts';
import { STAND_IN_SUB_LAYERS } from '../../layers/standIn/standInSubLayers.ts';
import { preparePrefill, type PreparedPrefill, type SpMode } from '../../model/prefill.ts';
import type { SubLayerBuilders } from '../../model/subLayerBuilders.ts';
import type { WeightSource } from '../../model/weightSource.ts';
import { MODEL_SUB_LAYERS } from '../../layers/modelSubLayers.ts';
import { bf16ToF32 } from '../../numerics/bf16.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { CpuBackend } from '../cpuBackend.ts';
import { routingDifferences } from '../../xcheck/routingDiff.ts';
import { evaluateExact, widenTensor } from './evaluateExact.ts';
import type { ExactTensor } from './exactTensor.ts';
import { EXACT_COLLECTIVE_KERNELS, EXACT_KERNELS } from './index.ts';
import { U_BF16, valuesOf } from '../../../../../test/support/exactChecks.ts';
import { layerCases } from '@hcsp/bench/cases';

// The float64 evaluation of whole graphs against the CPU reference's run of the same graph,
// feeds and weights, on the golden-dump values (DecoderOutputs.dumpValues).
const cpu = new CpuBackend();
const T = 19; // C = 10 at tp 2: rank 1 holds one padding row under SP

interface Run {
  p: PreparedPrefill;
  ref: Map<string, Tensor>;
  exact: Map<string, ExactTensor>;
  progress: number[];
}

/** The MoE routers of a graph: their logits input and ids output, kept for the flip analysis. */
const routeNodes = (g: Graph) => g.nodes.filter((n) => n.op === 'moeRoute');

async function runBoth(config: ModelConfig, subLayers: SubLayerBuilders, sp: SpMode, tokens = T, tp = 2): Promise<Run> {
  const p = preparePrefill({ config, tokens, tp, sp, reduce: 'ring', seed: 7, subLayers, dump: true });
  const keep = [...Object.values(p.outputs.dumpValues), ...routeNodes(p.graph).flatMap((n) => [n.inputs[0]!, n.outputs[0]!])];
  const { values } = await runOnce(cpu, p.graph, p.feeds, p.weights, { keep });
  const progress: number[] = [];
  const exact = await evaluateExact(p.graph, p.feeds, p.weights, {
    keep,
    onNode: (done, total) => (done === total || done % 50 === 0) && progress.push(done / total),
  });
  return { p, ref: values, exact, progress };
}

/** f(), computed on first use and shared (the runs are built when a test first needs them). */
function once<V>(f: () => Promise<V>): () => Promise<V> {
  let p: Promise<V> | null = null;
  return () => (p ??= f());
}

/** ||a - b|| / ||b|| over all elements (0 when both are zero). */
function relNorm(a: Float64Array, b: Float64Array): number {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] - b[i]) ** 2;
    n += b[i] ** 2;
  }
  return n === 0 ? Math.sqrt(d) : Math.sqrt(d / n);
}

/** Per dump name: the reference's relative distance from the exact value (floating values), or whether the ids agree. */
function compareDump(r: Run): { name: string; rel: number; ints?: boolean }[] {
  return Object.entries(r.p.outputs.dumpValues).map(([name, id]) => {
    const ref = r.ref.get(id)!;
    const ex = r.exact.get(id)!;
    expect(ex.dtype, name).toBe(ref.dtype);
    expect(ex.shape, name).toEqual(ref.shape);
    if (ref.dtype === 'i32') return { name, rel: 0, ints: Array.from(ref.data).every((v, i) => v === ex.data[i]) };
    return { name, rel: relNorm(valuesOf(ref), ex.data as Float64Array) };
  });
}

/**
 * The bound on a dump value's relative distance from the exact value: 4 U_BF16 (depth + 1), depth
 * the decoder layer the value belongs to (the heads: the number of layers). Each sub-layer
 * stores a handful of bf16-rounded values in series (the HC mix's norm, projections and gated
 * mean, the block's projections and activations, the partial sums and the collective), each
 * within U_BF16 relative of the exact function of its rounded inputs (the op tests bound each op);
 * their errors are independent roundings, so they add roughly in quadrature (about 3 U_BF16 for a
 * layer's ~8 stages in series), and every HC mix re-normalizes the streams, so the distance
 * grows about linearly with depth rather than compounding. This bound is that model with
 * margin, not a proof; the op tests hold the proven per-op bounds. A copy of an exact value
 * (the embedding, the expanded streams) has distance 0.
 */
function dumpBound(name: string, config: ModelConfig): number {
  const m = /^layers\.(\d+)\./.exec(name);
  const depth = m ? Number(m[1]) : name === 'embed' ? 0 : config.numLayers;
  return 4 * U_BF16 * (depth + 1);
}

function expectDumpClose(r: Run, config: ModelConfig, label: string): void {
  const rows = compareDump(r);
  console.log(`${label}: ${rows.map((x) => `${x.name} ${x.ints === undefined ? x.rel.toExponential(2) : x.ints ? 'ids equal' : 'ids differ'}`).join(', ')}`);
  for (const x of rows) {
    if (x.ints !== undefined) expect(x.ints, `${x.name}: integer values must equal the reference's`).toBe(true);
    else expect(x.rel, x.name).toBeLessThanOrEqual(dumpBound(x.name, config));
  }
  // the comparison is not vacuous: past the first mix, the reference differs from the exact value
  expect(rows.filter((x) => x.ints === undefined && x.rel > 0).length).toBeGreaterThan(rows.length / 2);
}

function expectSameExact(on: Run, off: Run): void {
  for (const [name, id] of Object.entries(off.p.outputs.dumpValues)) {
    const a = on.exact.get(on.p.outputs.dumpValues[name])!;
    const b = off.exact.get(id)!;
    expect(a.shape, name).toEqual(b.shape);
    // the same math: the sharded path at most reorders float64 sums (a few 2^-53 of the terms)
    if (b.dtype === 'i32') expect(Array.from(a.data), name).toEqual(Array.from(b.data));
    else expect(relNorm(a.data as Float64Array, b.data as Float64Array), name).toBeLessThan(1e-13);
  }
}

describe('evaluateExact', () => {
  it('widens bf16, f32, i32 and fp8 exactly', () => {
    const bits = Uint16Array.from([0x3f80, 0xbf81, 0x0001, 0x7f7f]);
    expect(Array.from(widenTensor({ dtype: 'bf16', shape: [4], data: bits }).data)).toEqual(Array.from(bits, (b) => bf16ToF32(b)));
    expect(Array.from(widenTensor({ dtype: 'f32', shape: [1], data: Float32Array.from([0.1]) }).data)).toEqual([Math.fround(0.1)]);
    expect(widenTensor({ dtype: 'i32', shape: [2], data: Int32Array.from([-3, 7]) }).data).toEqual(Int32Array.from([-3, 7]));
    // e4m3fn 0x7e = 448 (max), 0x01 = 2^-9 (smallest subnormal), 0xc0 = -2; e4m3fnuz 0x80 = NaN
    expect(Array.from(widenTensor({ dtype: 'fp8e4m3fn', shape: [3], data: Uint8Array.from([0x7e, 0x01, 0xc0]) }).data)).toEqual([448, 2 ** -9, -2]);
    expect(Number.isNaN(widenTensor({ dtype: 'fp8e4m3fnuz', shape: [1], data: Uint8Array.from([0x80]) }).data[0])).toBe(true);
  });

  it('refuses a rank part of a graph and names an op without a float64 kernel', async () => {
    const p = preparePrefill({ config: TINY, tokens: T, tp: 2, sp: 'on', reduce: 'ring', seed: 7, subLayers: STAND_IN_SUB_LAYERS });
    await expect(evaluateExact({ ...p.graph, rank: 1 }, p.feeds, p.weights)).rejects.toThrow(/rank 1's part; only a whole graph/);
    const bogus: Graph = { ...p.graph, nodes: [{ ...p.graph.nodes[0], op: 'noSuchOp' as OpName }] }; // a graph read from JSON can name anything
    await expect(evaluateExact(bogus, p.feeds, p.weights)).rejects.toThrow(/no float64 kernel for op 'noSuchOp'/);
  });

  it('the kernel tables cover every declared op', () => {
    expect(EXACT_KERNELS.missing((d) => !d.collective)).toEqual([]);
    expect(EXACT_COLLECTIVE_KERNELS.missing((d) => Boolean(d.collective))).toEqual([]);
  });

  it('keeps only what is asked, frees the rest, and returns every computed value by default', async () => {
    const p = preparePrefill({ config: TINY, tokens: T, tp: 2, sp: 'on', reduce: 'ring', seed: 7, subLayers: STAND_IN_SUB_LAYERS });
    const some = await evaluateExact(p.graph, p.feeds, p.weights, { keep: [p.outputs.h] });
    expect([...some.keys()]).toEqual([p.outputs.h]);
    const all = await evaluateExact(p.graph, p.feeds, p.weights);
    const computed = p.graph.nodes.flatMap((n) => n.outputs).filter((id): id is string => id !== null);
    expect(all.size).toBe(computed.length + p.graph.inputs.length);
    expect(all.get(p.outputs.h)!.data).toEqual(some.get(p.outputs.h)!.data);
  });
});

describe('evaluateExact on the tiny HC-only stack, tp 2', () => {
  const runs = { on: once(() => runBoth(TINY, STAND_IN_SUB_LAYERS, 'on')), off: once(() => runBoth(TINY, STAND_IN_SUB_LAYERS, 'off')) };

  it('reports progress over every node', async () => {
    const on = await runs.on();
    expect(on.p.plan.sp).toBe(true);
    expect(on.progress[on.progress.length - 1]).toBe(1);
  });

  for (const sp of ['on', 'off'] as const) {
    it(`SP ${sp}: the reference's dump values are close to the exact ones`, async () => expectDumpClose(await runs[sp](), TINY, `tiny HC-only SP ${sp}`));
  }

  it('SP on and SP off evaluate to the same float64 values (the same math)', async () => expectSameExact(await runs.on(), await runs.off()));
});

describe('evaluateExact on the small HC-only stack (8 layers), tp 2, SP on', () => {
  it("the reference's dump values are close to the exact ones", async () => {
    const r = await runBoth(SMALL, STAND_IN_SUB_LAYERS, 'on', 37);
    expect(r.p.plan.sp).toBe(true);
    expectDumpClose(r, SMALL, 'small HC-only SP on');
  });
});

/** ||a - b|| / ||b|| over the rows of [rows, cols] values not in `skip`. */
function relNormRows(a: Float64Array, b: Float64Array, cols: number, skip: ReadonlySet<number>): number {
  const keepRows = (v: Float64Array) => v.filter((_, i) => !skip.has(Math.floor(i / cols)));
  return relNorm(keepRows(a), keepRows(b));
}

/**
 * Where the exact routing picks another expert set than the reference: per layer, the token
 * rows whose top-k sets differ. Each such row must be a genuine near-tie: the reference ranks
 * expert e (picked only by it) above e' (picked only by the exact side) on its bf16 logits,
 * so the exact logits of e' and e are at most 2 err apart, err the row's largest distance
 * between the reference's logits and the exact ones (plus the reference's fp32 softmax, a
 * few fp32 ulps of a probability, 1e-6 in logit).
 */
function routingFlips(r: Run): Map<number, Set<number>> {
  const flips = new Map<number, Set<number>>();
  const chunk = r.p.plan.chunk;
  for (const n of routeNodes(r.p.graph)) {
    const ids = [r.ref.get(n.outputs[0]!)!.data as Int32Array, r.exact.get(n.outputs[0]!)!.data as Int32Array];
    const logitsRef = valuesOf(r.ref.get(n.inputs[0]!)!);
    const logitsExact = r.exact.get(n.inputs[0]!)!.data as Float64Array;
    const [rows, k] = r.ref.get(n.outputs[0]!)!.shape;
    const experts = logitsRef.length / rows;
    for (let t = 0; t < rows; t++) {
      const a = new Set(ids[0].subarray(t * k, (t + 1) * k));
      const b = new Set(ids[1].subarray(t * k, (t + 1) * k));
      const onlyRef = [...a].filter((e) => !b.has(e));
      const onlyExact = [...b].filter((e) => !a.has(e));
      if (onlyRef.length === 0) continue;
      let err = 0;
      for (let e = 0; e < experts; e++) err = Math.max(err, Math.abs(logitsRef[t * experts + e] - logitsExact[t * experts + e]));
      for (const e of onlyRef) {
        for (const e2 of onlyExact) {
          const gap = logitsExact[t * experts + e2] - logitsExact[t * experts + e];
          expect(gap, `${n.scope} rank ${n.rank} row ${t}: expert ${e2} over ${e} must be a near-tie`).toBeLessThanOrEqual(2 * err + 1e-6);
        }
      }
      const token = rows === r.p.graph.values[r.p.outputs.h].shape[0] ? t : n.rank! * chunk + t;
      if (!flips.has(n.layer)) flips.set(n.layer, new Set());
      flips.get(n.layer)!.add(token);
    }
  }
  return flips;
}

/**
 * The model stack has discrete decisions on float values: MoE top-k routing (and QSA block
 * selection). Where the float64 router logits rank two experts the other way round from the
 * reference's bf16 ones (a near-tie, checked), the two runs compute different functions from
 * then on: that token's routed output takes another expert, and attention and the GDN
 * recurrence carry it into later rows and layers. So the dump bound applies to every value
 * before the first layer that routes differently, and to that layer's MoE output on the rows
 * that route alike; past it only a sanity bound (same model, a few rows apart: 0.5) and
 * finiteness are checked. Integer dump values (n-gram ids, QSA kept counts) depend on token
 * ids and positions only and must equal the reference's everywhere.
 */
function expectModelDumpClose(r: Run, label: string): void {
  const flips = routingFlips(r);
  const first = flips.size ? Math.min(...flips.keys()) : Infinity;
  const out: string[] = [`flips ${[...flips].map(([l, rows]) => `L${l}: rows ${[...rows].join(' ')}`).join('; ') || 'none'}`];
  let bounded = 0;
  for (const [name, id] of Object.entries(r.p.outputs.dumpValues)) {
    const ref = r.ref.get(id)!;
    const ex = r.exact.get(id)!;
    expect(ex.dtype, name).toBe(ref.dtype);
    expect(ex.shape, name).toEqual(ref.shape);
    if (name.endsWith('.mlp.topk_ids')) {
      // the router's choice differs from the float64 one exactly on the rows found flipped (near-ties)
      const rows =
        routingDifferences(new Map([[name, { tensor: ex as unknown as Tensor, rowStart: 0 }]]), new Map([[name, { tensor: ref, rowStart: 0 }]]))[0]?.rows ?? [];
      // the MTP head's router (mtp.mlp.topk_ids) is the graph's layer after the last decoder layer
      const layer = Number(/^layers\.(\d+)\./.exec(name)?.[1] ?? TINY.numLayers);
      expect(rows, name).toEqual([...(flips.get(layer) ?? [])].sort((a, b) => a - b));
      continue;
    }
    if (ref.dtype === 'i32') {
      expect(Array.from(ex.data), name).toEqual(Array.from(ref.data));
      continue;
    }
    const exv = ex.data as Float64Array;
    expect(exv.every(Number.isFinite), name).toBe(true);
    const m = /^layers\.(\d+)\.(.*)$/.exec(name);
    const layer = m ? Number(m[1]) : name === 'embed' ? -1 : TINY.numLayers;
    const cols = ref.shape[ref.shape.length - 1];
    if (layer < first || (layer === first && m![2] !== 'mlp.out')) {
      const rel = relNorm(valuesOf(ref), exv);
      out.push(`${name} ${rel.toExponential(2)}`);
      expect(rel, name).toBeLessThanOrEqual(dumpBound(name, TINY));
      bounded++;
    } else if (layer === first && ref.shape[0] === r.p.tokenIds.length) {
      const rel = relNormRows(valuesOf(ref), exv, cols, flips.get(first)!);
      out.push(`${name} ${rel.toExponential(2)} (rows routed alike)`);
      expect(rel, name).toBeLessThanOrEqual(dumpBound(name, TINY));
      bounded++;
    } else {
      const rel = relNorm(valuesOf(ref), exv);
      out.push(`${name} ${rel.toExponential(2)} (after a routing flip)`);
      expect(rel, name).toBeLessThan(0.5);
    }
  }
  console.log(`${label}: ${out.join(', ')}`);
  expect(bounded).toBeGreaterThan(3);
}

describe('evaluateExact on the tiny model stack (PLE, GatedDeltaNet, attention with QSA, MoE, heads), tp 2', () => {
  const runs = { on: once(() => runBoth(TINY, MODEL_SUB_LAYERS, 'on')), off: once(() => runBoth(TINY, MODEL_SUB_LAYERS, 'off')) };

  for (const sp of ['on', 'off'] as const) {
    it(`SP ${sp}: the reference's dump values are close to the exact ones up to the first routing flip`, async () => {
      const r = await runs[sp]();
      expect(r.p.plan.sp).toBe(sp === 'on');
      expectModelDumpClose(r, `tiny model SP ${sp}`);
    });
  }

  it('SP on and SP off evaluate to the same float64 values (the same math)', async () => expectSameExact(await runs.on(), await runs.off()));
});

describe('evaluateExact on the tiny model stack: weights and the FP8 path', () => {
  it('reads a row-gathered table only at the rows its ids name', async () => {
    const p = preparePrefill({ config: TINY, tokens: T, tp: 2, sp: 'on', reduce: 'ring', seed: 7, subLayers: MODEL_SUB_LAYERS });
    const gathered = Object.values(p.graph.values).filter((d) => d.weight?.gather === 'rows');
    expect(gathered.length).toBeGreaterThan(0);
    const reads: { name: string; rows: number | null }[] = [];
    const src = p.weights;
    const counting: WeightSource = {
      has: (n) => src.has(n),
      info: (n) => src.info(n),
      read: (n, slice) => {
        reads.push({ name: n, rows: slice && slice.axis === 0 ? slice.ranges.reduce((a, [lo, hi]) => a + hi - lo, 0) : null });
        return src.read(n, slice);
      },
    };
    await evaluateExact(p.graph, p.feeds, counting, { keep: [p.outputs.h] });
    for (const d of gathered) {
      const parts = d.weight!.concat ?? [d.weight!.name];
      const mine = reads.filter((r) => parts.includes(r.name));
      expect(mine.length, d.weight!.name).toBeGreaterThan(0);
      // only row slices, never a whole part, and far fewer rows than the table has
      for (const r of mine) expect(r.rows, r.name).not.toBeNull();
      expect(
        mine.reduce((a, r) => a + r.rows!, 0),
        d.weight!.name,
      ).toBeLessThan(d.shape[0] / 4);
    }
  });

  it("does not quantize: the FP8 graph (fused and separate quantization) evaluates to the bf16 graph's values", async () => {
    for (const sp of ['off', 'on'] as const) {
      const evaluate = async (fp8: 'e4m3fnuz' | null) => {
        const p = preparePrefill({ config: TINY, tokens: T, tp: 2, sp, reduce: 'ring', seed: 7, subLayers: MODEL_SUB_LAYERS, dump: true, fp8 });
        return { p, values: await evaluateExact(p.graph, p.feeds, p.weights, { keep: Object.values(p.outputs.dumpValues) }) };
      };
      const bf = await evaluate(null);
      const q = await evaluate('e4m3fnuz');
      expect(q.p.graph.nodes.some((n) => n.op === 'fp8LinearPtpc')).toBe(true);
      expect(q.p.plan.quant).toBe(sp === 'off' ? 'fused' : 'separate');
      for (const [name, id] of Object.entries(bf.p.outputs.dumpValues)) {
        const a = q.values.get(q.p.outputs.dumpValues[name])!.data;
        const b = bf.values.get(id)!.data;
        // q = x with scale 1 and sum_k (x * 1)(w * 1) = sum_k x w: the same doubles in the same order
        expect(Array.from(a), `${sp} ${name}`).toEqual(Array.from(b));
      }
    }
  });
});

describe('evaluateExact on the sub-layer cases (packages/bench/src/cases/layerCases.ts: tiny config, tp 2)', () => {
  for (const c of layerCases()) {
    it(c.name, async () => {
      const { values } = await runOnce(cpu, c.graph, c.feeds, c.weights, { keep: 'all' });
      const exact = await evaluateExact(c.graph, c.feeds, c.weights);
      let compared = 0;
      for (const [id, ref] of values) {
        const ex = exact.get(id)!;
        expect(ex.shape, id).toEqual(ref.shape);
        if (ref.dtype === 'i32') {
          // ids of this case (routes, selections, n-gram ids) decide alike on these inputs
          expect(Array.from(ex.data), id).toEqual(Array.from(ref.data));
          continue;
        }
        // one sub-layer: the per-layer budget of dumpBound, 4 U_BF16 (on top of its exact inputs)
        expect(relNorm(valuesOf(ref), ex.data as Float64Array), id).toBeLessThanOrEqual(4 * U_BF16);
        compared++;
      }
      expect(compared).toBeGreaterThan(c.graph.outputs.length);
    });
  }
});
