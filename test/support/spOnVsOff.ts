// The dev page's usual comparison: the same run with SP on (side a) and off (side b), one
// reduce algorithm for both.
import type { ReduceAlgorithm } from '@hcsp/core';
import type { RunRequest, SubLayerChoice } from '../../devpage/src/run/runComparison.ts';

export function spOnVsOff(
  run: { config: string; tokens: number; tp: number; seed: number; subLayers: SubLayerChoice },
  reduce: ReduceAlgorithm = 'ring',
): RunRequest {
  return { ...run, a: { sp: 'on', reduce }, b: { sp: 'off', reduce } };
}
