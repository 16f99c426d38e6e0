import { CpuBackend, runOnce } from '@hcsp/core';
import { beyondTolerance, describeDifferences, diffRuns } from '@hcsp/core/xcheck';
import { expect, it } from 'vitest';
import { describeWithBackends } from './backends.ts';
import { layerCases } from '@hcsp/bench/cases';

// Each sub-layer (GDN, attention, MoE, PLE) at tp 2, every intermediate compared with the
// CPU reference: the kernels keep the reference's accumulation order, so all bit-exact.
const reference = new CpuBackend();

describeWithBackends('sub-layers match the CPU reference op by op', (backend) => {
  for (const c of layerCases()) {
    it(c.name, async () => {
      const expected = await runOnce(reference, c.graph, c.feeds, c.weights, { keep: 'all' });
      const actual = await runOnce(backend(), c.graph, c.feeds, c.weights, { keep: 'all' });
      const { compared, differences } = diffRuns(c.graph, expected, actual);
      expect(compared).toBeGreaterThan(c.graph.outputs.length);
      expect(beyondTolerance(differences, backend()), describeDifferences(differences)).toEqual([]);
    });
  }
});
