import { FLASH_NEXT, SMALL } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { suiteCases } from './suiteCases.ts';
import type { SuiteOptions } from './suiteOptions.ts';

// the options `bench --suite` runs with when nothing is given
const DEFAULTS: SuiteOptions = {
  tokens: [1024, 4096, 16384],
  reps: 3,
  cpuReps: 1,
  budgetSeconds: 60,
  hcConfig: FLASH_NEXT,
  modelConfig: SMALL,
  layerTokens: 1024,
  prefillTokens: 2048,
  prefillTp: 4,
  backends: null,
  copyBytes: 512 * 2 ** 20,
  ceilingGemm: 2048,
  seed: 0,
  quiet: false,
  json: false,
  outDir: 'bench-results',
  quick: false,
};

describe('suite cases', () => {
  it('the cases: mix and combine at each T, the layer, the prefill at tp 4 with SP on by the production gate', () => {
    const cases = suiteCases(DEFAULTS);
    expect(cases.map((c) => `${c.case}@${c.tokens}/tp${c.tp}`)).toEqual([
      'hc-mix@1024/tp1',
      'hc-mix@4096/tp1',
      'hc-mix@16384/tp1',
      'hc-combine@1024/tp1',
      'hc-combine@4096/tp1',
      'hc-combine@16384/tp1',
      'layer@1024/tp1',
      'prefill@2048/tp4',
    ]);
    const prefill = cases.at(-1)!.build();
    expect(prefill.detail).toMatch(/SP on \(C=512 rows\/rank/);
    // moeExperts counted: more than the linears alone
    const linears = prefill.graph.nodes.filter((n) => n.op === 'linear').length;
    expect(linears).toBeGreaterThan(0);
    expect(prefill.flops).toBeGreaterThan(0);
    const layer = cases.find((c) => c.case === 'layer')!.build();
    expect(layer.graph.nodes.filter((n) => /^L[1-9]/.test(n.scope)).map((n) => n.scope)).toEqual([]);
    expect(layer.graph.nodes.filter((n) => n.scope.startsWith('L0.')).length).toBeGreaterThan(10);
  });
});
