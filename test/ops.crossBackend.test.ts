import { expect, it } from 'vitest';
import { SyntheticWeightSource } from '@hcsp/core';
import { describeWithBackends } from './backends.ts';
import { OP_CASES, opCaseGraph } from './cases/opCases.ts';
import { describeDifferences, diffRuns } from './compareRuns.ts';
import { CpuBackend } from '@hcsp/core';

// Every op, on seeded random inputs, against the CPU reference: every kernel accumulates in
// the reference's order, so every output must be bit-identical.
const reference = new CpuBackend();
const noWeights = new SyntheticWeightSource([], 0);

describeWithBackends('ops match the CPU reference bit for bit', (backend) => {
  for (const c of OP_CASES) {
    it(c.name, async () => {
      const { graph, feeds } = opCaseGraph(c);
      const expected = reference.runSync(graph, feeds, noWeights);
      const actual = await backend().run(graph, feeds, noWeights);
      const { compared, differences } = diffRuns(graph, expected, actual);
      expect(compared).toBe(graph.outputs.length);
      expect(differences, describeDifferences(differences)).toEqual([]);
    });
  }
});
