// The prefill memory guard on a checkpoint whose linears and routed experts are per-channel FP8
// (the PTPC-FP8 release): it counts them as the run holds them, FP8 bytes plus F32 scales, not as bf16.
import { MODEL_SUB_LAYERS, modelWeightSpecs, numel, preparePrefill, PRESETS } from '@hcsp/core';
import { openCheckpoint } from '@hcsp/core/node';
import { describe, expect, it } from 'vitest';
import { useTinyPtpcFolder } from '../../../../test/support/tinyPtpcFolder.ts';
import { estimateGraphMemory } from './memoryEstimate.ts';
import { estimatePrefillMemory } from './prefillMemory.ts';

const folder = useTinyPtpcFolder('hcsp-prefill-memory-');
const config = PRESETS.tiny;

describe('estimatePrefillMemory on a PTPC-FP8 checkpoint', () => {
  it('counts the FP8 linears and experts as FP8 bytes + F32 scales: the estimate of the graph preparePrefill runs, N*K - 4N bytes less per FP8 weight than bf16', () => {
    const { source } = openCheckpoint(folder, config, { specs: modelWeightSpecs(config, MODEL_SUB_LAYERS) });
    try {
      const shape = { config, tokens: 24, tp: 1, sp: 'off', reduce: 'ring', subLayers: MODEL_SUB_LAYERS, env: {}, checkpoint: true } as const;
      const asBf16 = estimatePrefillMemory(shape);
      const guarded = estimatePrefillMemory({ ...shape, fp8Weights: { source } });
      const prepared = preparePrefill({ ...shape, seed: 3, weights: source });
      expect(prepared.fp8WeightLinears).toBeGreaterThan(0);
      expect(guarded.rankWeights).toBe(estimateGraphMemory(prepared.graph, { kind: 'checkpoint' }).rankWeights);
      expect(prepared.graph.nodes.some((n) => n.op === 'moeExpertsFp8Ptpc')).toBe(true);
      // each FP8 [N, K] weight (a linear's, the routed experts' gate-up and down): 2NK bytes as bf16, NK + 4N as FP8 + scales
      const fp8Ports: Partial<Record<string, [number, number][]>> = {
        fp8LinearPtpc: [[2, 3]],
        moeExpertsFp8Ptpc: [
          [4, 5],
          [6, 7],
        ],
      };
      let saved = 0;
      for (const n of prepared.graph.nodes) {
        for (const [q, scale] of fp8Ports[n.op] ?? []) {
          const [N, K] = prepared.graph.values[n.inputs[q]!].shape;
          expect(numel(prepared.graph.values[n.inputs[scale]!].shape)).toBe(N);
          saved += 2 * N * K - (N * K + 4 * N);
        }
      }
      expect(asBf16.rankWeights - guarded.rankWeights).toBe(saved);
    } finally {
      source.close();
    }
  }, 60_000);
});
