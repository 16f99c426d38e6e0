import { describe, expect, it } from 'vitest';
import { TINY } from '../config/presets.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { preparePrefill } from '../model/prefill.ts';
import { runOnce } from '../backend/backend.ts';
import { CpuBackend } from '../reference/cpuBackend.ts';
import type { Graph } from './graph.ts';

describe('the op graph is plain data', () => {
  it('survives a JSON round trip and runs to the same bits', async () => {
    const p = preparePrefill({ config: TINY, tokens: 13, tp: 2, sp: 'on', reduce: 'ring', seed: 1, subLayers: MODEL_SUB_LAYERS });
    const copy = JSON.parse(JSON.stringify(p.graph)) as Graph;
    expect(copy).toEqual(p.graph);
    const cpu = new CpuBackend();
    const a = (await runOnce(cpu, p.graph, p.feeds, p.weights)).values.get(p.outputs.h)!;
    const b = (await runOnce(cpu, copy, p.feeds, p.weights)).values.get(p.outputs.h)!;
    expect(Buffer.from(b.data.buffer).equals(Buffer.from(a.data.buffer))).toBe(true);
  });
});
