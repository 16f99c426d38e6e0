import { expect, it } from 'vitest';
import { runOnce, SyntheticWeightSource } from '@hcsp/core';
import { describeWithBackends } from './backends.ts';
import { hfEagerHandCases, opCaseGraph, topkTieHandCases } from '@hcsp/bench/cases';

// The 'hf-eager' rounding points and the top-k tie rule on every backend, against bits worked
// out by hand (packages/bench/src/cases/hfEagerCases.ts); the same inputs without an hf-eager attribute give
// the other bits, so a backend that ignores the attribute fails.
const noWeights = new SyntheticWeightSource([], 0);

async function port0(run: () => Promise<Map<string, { data: ArrayLike<number> }>>, outId: string): Promise<number[]> {
  const values = await run();
  return Array.from(values.get(outId)!.data);
}

describeWithBackends('hf-eager rounding points and top-k ties, by hand', (backend) => {
  for (const c of [...hfEagerHandCases(), ...topkTieHandCases()]) {
    it(c.name, async () => {
      const { graph, feeds } = opCaseGraph(c);
      const out = graph.outputs[0];
      expect(await port0(async () => (await runOnce(backend(), graph, feeds, noWeights)).values, out)).toEqual(c.expected);
      if (!c.contrast) return;
      const plain = { ...c, attrs: Object.fromEntries(Object.entries(c.attrs).filter(([k]) => !HF_ATTRS.has(k))) };
      const g2 = opCaseGraph(plain);
      expect(await port0(async () => (await runOnce(backend(), g2.graph, g2.feeds, noWeights)).values, g2.graph.outputs[0])).toEqual(c.contrast);
    });
  }
});

/** the attributes the cases set to get HF's rule; without them each op follows ATOM's */
const HF_ATTRS = new Set(['roundConv', 'eagerSoftmax', 'bf16Accumulate']);
