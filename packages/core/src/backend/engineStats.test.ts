import { describe, expect, it } from 'vitest';
import type { EngineStats } from './backend.ts';
import { ENGINE_STATS_NUMBERS, engineStatsFromNumbers, engineStatsToNumbers } from './engineStats.ts';

const stats: EngineStats = {
  prepareSeconds: 1.5,
  enqueueSeconds: 0.25,
  recorded: true,
  waitSeconds: 0.125,
  hostOpSeconds: 0.0625,
  transfers: { inputBytes: 1, outputBytes: 2, stagingToDeviceBytes: 3, stagingFromDeviceBytes: 4 },
  device: {
    kernelLaunches: 5,
    hostSyncs: 6,
    deviceAllocations: 7,
    deviceFrees: 8,
    memsets: 9,
    copiesToDevice: 10,
    bytesToDevice: 11,
    copiesFromDevice: 12,
    bytesFromDevice: 13,
  },
  memoryPlan: { poolBytes: 14, peakBytes: 15, blocks: 16 },
};

describe('engine stats as numbers (a rank sends its own over the control plane)', () => {
  it('round-trips every field, a device without counters included', () => {
    const v = engineStatsToNumbers(stats);
    expect(v).toHaveLength(ENGINE_STATS_NUMBERS);
    expect(engineStatsFromNumbers(Float64Array.from(v))).toEqual(stats);
    expect(engineStatsFromNumbers(engineStatsToNumbers({ ...stats, device: null }))).toEqual({ ...stats, device: null });
  });

  it('refuses a list of the wrong length', () => {
    expect(() => engineStatsFromNumbers([1, 2])).toThrow(/2 numbers, expected/);
  });
});
