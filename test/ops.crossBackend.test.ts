import { expect, it } from 'vitest';
import { CpuBackend, runOnce, SyntheticWeightSource } from '@hcsp/core';
import { beyondTolerance, describeDifferences, diffRuns } from '@hcsp/core/xcheck';
import { describeWithBackends } from './backends.ts';
import { OP_CASES, opCaseGraph } from '@hcsp/bench/cases';

// Every op, on seeded random inputs, against the CPU reference: every kernel accumulates in
// the reference's order, so every output must be bit-identical.
const reference = new CpuBackend();
const noWeights = new SyntheticWeightSource([], 0);

describeWithBackends('ops match the CPU reference bit for bit', (backend) => {
  for (const c of OP_CASES) {
    it(c.name, async () => {
      const { graph, feeds } = opCaseGraph(c);
      const expected = await runOnce(reference, graph, feeds, noWeights);
      const actual = await runOnce(backend(), graph, feeds, noWeights);
      const { compared, differences } = diffRuns(graph, expected, actual);
      expect(compared).toBe(graph.outputs.length);
      expect(beyondTolerance(differences, backend()), describeDifferences(differences)).toEqual([]);
    });
  }
});

describeWithBackends('bad input is refused before any device work', (backend) => {
  it('a token id outside the vocabulary names the id and its position', async () => {
    const c = OP_CASES.find((x) => x.op === 'embed')!;
    const { graph, feeds } = opCaseGraph(c);
    const ids = Int32Array.from(feeds.get('in0')!.data as Int32Array);
    ids[4] = 64;
    feeds.set('in0', { dtype: 'i32', shape: [ids.length], data: ids });
    await expect(runOnce(backend(), graph, feeds, noWeights)).rejects.toThrow(/token id 64 at position 4 is outside the vocabulary \[0, 64\)/);
  });

  it('a feed of the wrong shape names the input', async () => {
    const { graph, feeds } = opCaseGraph(OP_CASES[0]);
    feeds.set('in0', { dtype: 'bf16', shape: [1, 37], data: new Uint16Array(37) });
    await expect(runOnce(backend(), graph, feeds, noWeights)).rejects.toThrow(/input 'in0' is bf16\[1,37\]/);
  });
});
