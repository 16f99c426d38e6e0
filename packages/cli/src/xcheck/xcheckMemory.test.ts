// xcheck's memory estimate on a checkpoint whose linears are per-channel FP8 (the PTPC-FP8
// release): each SPEC's run counts them as it holds them, FP8 bytes plus F32 scales.
import { MODEL_SUB_LAYERS, modelWeightSpecs, preparePrefill, PRESETS } from '@hcsp/core';
import { openCheckpoint } from '@hcsp/core/node';
import { describe, expect, it } from 'vitest';
import { useTinyPtpcFolder } from '../../../../test/support/tinyPtpcFolder.ts';
import { estimateGraphMemory } from '../guards/memoryEstimate.ts';
import { estimateXcheckMemory } from './xcheckMemory.ts';
import { parseXcheckSpecs } from './xcheckSpec.ts';

const folder = useTinyPtpcFolder('hcsp-xcheck-memory-');
const config = PRESETS.tiny;

describe('estimateXcheckMemory on a PTPC-FP8 checkpoint', () => {
  it("each SPEC's weights are those of the graph its prefill runs (FP8 linears as FP8 + scales), less than the bf16 count", () => {
    const { source } = openCheckpoint(folder, config, { specs: modelWeightSpecs(config, MODEL_SUB_LAYERS) });
    try {
      const specs = parseXcheckSpecs('cpu:sp=off,cpu:sp=off:reduce=oneshot', { sp: 'off', reduce: 'ring' }, false);
      const shape = {
        config,
        subLayers: MODEL_SUB_LAYERS,
        tokens: 24,
        tp: 1,
        layers: [0, config.numLayers] as [number, number],
        specs,
        exact: false,
        checkpoint: true,
        env: {},
      };
      const asBf16 = estimateXcheckMemory(shape);
      const guarded = estimateXcheckMemory({ ...shape, fp8Weights: source });
      const prepared = preparePrefill({
        config,
        tokens: 24,
        tp: 1,
        sp: 'off',
        reduce: 'ring',
        seed: 3,
        subLayers: MODEL_SUB_LAYERS,
        weights: source,
        dump: true,
      });
      expect(prepared.fp8WeightLinears).toBeGreaterThan(0);
      const runs = estimateGraphMemory(prepared.graph, { kind: 'checkpoint' }).rankWeights;
      expect(guarded.map((s) => s.estimate.rankWeights)).toEqual([runs, runs]);
      expect(asBf16[0].estimate.rankWeights).toBeGreaterThan(runs);
    } finally {
      source.close();
    }
  }, 60_000);
});
