import { CpuBackend } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { checkLiveRequest, liveReport, liveSides, runLiveSide, type LiveRequest } from './liveXcheck.ts';
import { validateXcheckReport } from './reportShape.ts';
import { kindGrid, rankGrid } from './xcheckHeatmap.ts';

const base: LiveRequest = { config: 'tiny', tokens: 37, tp: 4, seed: 5, reduce: 'ring', pair: 'sp', backend: 'cpu', sp: 'on' };

async function live(r: LiveRequest) {
  const { a, b } = liveSides(r);
  const cpu = new CpuBackend();
  return liveReport(r, await runLiveSide(cpu, r, a), await runLiveSide(cpu, r, b));
}

describe('live xcheck on the CPU reference', () => {
  it('SP on vs off at tp 4 with the ring: per-rank values on every layer, differences from layer 2 on, a report that passes its own shape check', async () => {
    const report = await live(base);
    expect(report.runs.map((r) => r.spec)).toEqual(['cpu:sp=off:reduce=ring', 'cpu:sp=on:reduce=ring']);
    expect(report.runs[1].sp).toBe(true);
    expect(report.runs[1].chunk).toBe(10);
    const [pair] = report.pairs;
    expect(pair.a).toBe('cpu:sp=on:reduce=ring');
    // a JSON round trip (Infinity aside) keeps the shape the page validates
    expect(validateXcheckReport(JSON.parse(JSON.stringify(report))).pairs[0].tensors.length).toBe(pair.tensors.length);
    const grid = rankGrid(pair, 'ulp');
    // tiny: 4 layers and the MTP drafter's 2 steps; 4 ranks x (partial, out)
    expect(grid.rows.map((r) => r.label)).toEqual(['L0 attn', 'L0 mlp', 'L1 attn', 'L1 mlp', 'L2 attn', 'L2 mlp', 'L3 attn', 'L3 mlp', 'mtp attn', 'mtp mlp']);
    expect(grid.cols.map((c) => c.label)).toEqual(['r0 partial', 'r0 out', 'r1 partial', 'r1 out', 'r2 partial', 'r2 out', 'r3 partial', 'r3 out']);
    expect(grid.cells.length).toBe(10 * 8);
    // layers 0 and 1 are before SP starts (PLE): bit-identical there
    expect(grid.cells.filter((c) => c.tensor.layer < 2).every((c) => c.value === 0)).toBe(true);
    expect(pair.tensors.find((t) => t.name === 'layers.3.in')!.differing).toBeGreaterThan(0);
    const kinds = kindGrid(pair, 'fraction');
    expect(kinds.rows.map((r) => r.label)).toEqual(['embed', 'L0', 'L1', 'L2', 'L3', 'final', 'mtp']);
    // the verdict and the flips come with the live report as with the CLI's
    expect(pair.verdict).toMatchObject({ kind: 'unjudged', first: { name: pair.tensors.find((t) => t.differing > 0)!.name } });
    expect(pair.routing).toEqual(expect.any(Array));
    expect(kinds.cols.map((c) => c.label)).toContain('attn_hc.mixed');
  });

  it('SP on vs off at tp 2 is bit-identical', async () => {
    const report = await live({ ...base, tp: 2 });
    expect(report.pairs[0].differing).toBe(0);
    expect(report.pairs[0].tensors.length).toBeGreaterThan(40);
  });

  it('rejects what the page cannot run', () => {
    expect(() => checkLiveRequest({ ...base, config: 'flash-next' })).toThrow(/cannot run in the page/);
    expect(() => checkLiveRequest({ ...base, tokens: 0 })).toThrow(/tokens T must be an integer in \[1, 2048\]/);
    expect(() => checkLiveRequest({ ...base, tp: 3 })).toThrow(/tp must be 1, 2, 4 or 8/);
    expect(liveSides({ ...base, pair: 'backends', sp: 'off' })).toEqual({ a: { backend: 'webgpu', sp: 'off' }, b: { backend: 'cpu', sp: 'off' } });
  });
});
