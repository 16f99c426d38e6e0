import { describe, expect, it } from 'vitest';
import { runOnce } from '../backend/backend.ts';
import { SMALL } from '../config/presets.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import { preparePrefill } from './prefill.ts';

// The row-sharded QSA indexer (each rank selects for its own SP rows, the selections
// all-gathered) against the replicated one (ATOM: every rank selects for all T rows), over
// the full small stack with SP on, at a T where the indexer drops tokens (small's budget of
// 64 keeps every token only up to 67 visible): the kept sets, and so every output, are
// identical.
const T = 150;

async function run(tp: number, qsaSelection: 'replicated' | 'rowSharded') {
  const p = preparePrefill({ config: SMALL, tokens: T, tp, sp: 'on', reduce: 'ring', seed: 11, subLayers: MODEL_SUB_LAYERS, qsaSelection, dump: true });
  const kept = p.outputs.dumpValues['layers.3.attn.kept'];
  const r = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep: [kept] });
  return { p, logits: r.values.get(p.outputs.logits)!, h: r.values.get(p.outputs.h)!, kept: r.values.get(kept)!.data as Int32Array };
}

describe('QSA selection: row-sharded equals replicated', () => {
  for (const tp of [2, 4]) {
    it(`tp ${tp}, SP on, T ${T}: same kept counts, same h and logits bit for bit`, async () => {
      const a = await run(tp, 'replicated');
      const b = await run(tp, 'rowSharded');
      expect(b.p.graph.nodes.filter((n) => n.op === 'qsaSelect' && n.rank === 0).length).toBeGreaterThan(0);
      // the sharded graph selects C rows per rank on the sharded attention layers
      const shardedSelect = b.p.graph.nodes.find((n) => n.op === 'qsaSelect' && n.layer === 7 && n.rank === 0)!;
      expect(b.p.graph.values[shardedSelect.outputs[0]!].shape[0]).toBe(Math.ceil(T / tp));
      const dropping = Array.from(a.kept).filter((k, t) => k < t + 1).length;
      expect(dropping).toBeGreaterThan(50);
      expect(b.kept).toEqual(a.kept);
      expect(b.h.data).toEqual(a.h.data);
      expect(b.logits.data).toEqual(a.logits.data);
    });
  }
});
