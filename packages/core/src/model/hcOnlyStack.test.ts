import { describe, expect, it } from 'vitest';
import { SMALL } from '../config/presets.ts';
import type { ReduceAlgorithm } from '../graph/ops/spOps.ts';
import { STAND_IN_SUB_LAYERS } from '../layers/standIn/standInSubLayers.ts';
import { rowScaledError } from '../numerics/rowScaledError.ts';
import { compareBf16 } from '../numerics/ulp.ts';
import { runOnce } from '../backend/backend.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import { preparePrefill, type SpMode } from './prefill.ts';

// The HC-only stack (issue 2): HC mix/combine pairs around a stand-in row-parallel linear,
// on the small config's 8 layers (SP starts at layer 2, after the PLE layer index 1).
const backend = new CpuBackend();

async function run(tp: number, tokens: number, sp: SpMode, reduce: ReduceAlgorithm, keepAll = false) {
  const p = preparePrefill({ config: SMALL, tokens, tp, sp, reduce, seed: 5, subLayers: STAND_IN_SUB_LAYERS });
  const result = await runOnce(backend, p.graph, p.feeds, p.weights, keepAll ? { keep: 'all' } : {});
  return { p, result, h: result.values.get(p.outputs.h)!.data as Uint16Array, mtp: result.values.get(p.outputs.mtpState!)!.data as Uint16Array };
}

describe('HC-only stack on the CPU reference, SP on vs off', () => {
  it('is bit-identical at tp 2 (every algorithm rounds a + b once)', async () => {
    for (const tokens of [37, 64]) {
      for (const reduce of ['ring', 'oneshot', 'ordered'] as const) {
        const on = await run(2, tokens, 'on', reduce);
        const off = await run(2, tokens, 'off', reduce);
        expect(on.p.plan.sp).toBe(true);
        expect(off.p.plan.sp).toBe(false);
        expect(compareBf16(on.h, off.h).differing).toBe(0);
        expect(compareBf16(on.mtp, off.mtp).differing).toBe(0);
      }
    }
  });

  it('at tp 4 with the ring order differs only where all-reduce and reduce-scatter add in another order, within a bound', async () => {
    const on = await run(4, 37, 'on', 'ring');
    const off = await run(4, 37, 'off', 'ring');
    const report = rowScaledError(on.h, off.h, 37, SMALL.hiddenSize);
    console.log(
      `tp 4 ring SP on vs off, HC-only small stack T=37: ${report.differing}/${report.count} differ, max ${report.maxRowUlp.toFixed(3)} row-scale ulps`,
    );
    // Each reordered 4-way bf16 sum is ~1 ulp apart per sub-layer; the streams carry those
    // through 12 sharded sub-layers and the mixer re-rounds. Bound: 4 row-scale ulps.
    expect(report.differing).toBeGreaterThan(0);
    expect(report.maxRowUlp).toBeLessThanOrEqual(4);
    // with a fixed rank-order sum (or fp32 one-shot) both paths add in the same order: identical
    for (const reduce of ['ordered', 'oneshot'] as const) {
      expect(compareBf16((await run(4, 37, 'on', reduce)).h, (await run(4, 37, 'off', reduce)).h).differing).toBe(0);
    }
  });

  it('runs C rows per rank through the HC ops when sharded and T when not', async () => {
    const tokens = 37;
    const on = await run(4, tokens, 'on', 'ring');
    const off = await run(4, tokens, 'off', 'ring');
    const C = Math.ceil(tokens / 4);
    const mixes = SMALL.numLayers * 2;
    const sharded = (SMALL.numLayers - on.p.plan.spStartLayer!) * 2;
    // the MTP head on all T rows (the gathered drafter): its two RMS1p norms (combine-norms
    // of one group), its draft layer's two HC mixes and its mixer
    const mtpHead = 5 * tokens;
    // unsharded mixes + sharded mixes + the mixer (on all T rows: MTP gathers the state first)
    expect(on.result.stats.hcRowsPerRank).toEqual(Array(4).fill((mixes - sharded) * tokens + sharded * C + tokens + mtpHead));
    expect(off.result.stats.hcRowsPerRank).toEqual(Array(4).fill((mixes + 1) * tokens + mtpHead));
    // all-reduce = reduce-scatter + all-gather: the same bytes per sub-layer
    const offBytes = off.result.stats.commBytesPerRank[0];
    const onBytes = on.result.stats.commBytesPerRank[0];
    // unsharded, the only all-gathers are the LM and MTP heads' vocab shards of the last row's
    // logits: each rank sends its [1, V/4] bf16 to the 3 others
    expect(offBytes.reduceScatter).toBe(0);
    expect(offBytes.allGather).toBe(2 * 3 * (SMALL.vocabSize / 4) * 2);
    expect(onBytes.reduceScatter).toBeGreaterThan(0);
  });

  it('keeps padding rows exactly zero after every HC step, and a shard holds only C rows', async () => {
    const tokens = 37; // C = 10 at tp 4: the last rank owns 7 real rows and 3 padding rows
    const { p, result } = await run(4, tokens, 'on', 'ring', true);
    const C = p.plan.chunk;
    const width = SMALL.hc.count * SMALL.hiddenSize;
    let checked = 0;
    for (const perRank of p.outputs.streamsPerStep) {
      const last = result.values.get(perRank[3])!;
      if (last.shape[0] !== C) continue; // an unsharded step
      expect(last.data.length).toBe(C * width);
      const pad = (last.data as Uint16Array).subarray(p.plan.shards[3].realRows * width);
      expect(pad.length).toBe(3 * width);
      expect(pad.every((v) => v === 0)).toBe(true);
      checked++;
    }
    expect(checked).toBe((SMALL.numLayers - p.plan.spStartLayer!) * 2);
    // the gathered exits carry T rows, no padding
    expect(result.values.get(p.outputs.h)!.shape).toEqual([tokens, SMALL.hiddenSize]);
    expect(result.values.get(p.outputs.mtpState!)!.shape).toEqual([tokens, width]);
  });
});
