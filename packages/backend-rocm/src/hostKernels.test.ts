import { allOpDefs } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from './nativeAddon.ts';

describe('host device kernels', () => {
  it("cover every declared op that runs on a device (host ops run in core's loop, but the n-gram hash): per-rank and collective", () => {
    const k = loadNativeAddon().kernels();
    // the one host op the native devices run themselves (DeviceOps.runsHostOp: 64-bit integers)
    const perRank = allOpDefs()
      .filter((d) => !d.collective && (!d.host || d.name === 'pleNgramIds'))
      .map((d) => d.name)
      .sort();
    const collective = allOpDefs()
      .filter((d) => d.collective)
      .map((d) => d.name)
      .sort();
    expect([...k.perRank].sort()).toEqual(perRank);
    expect([...k.collective].sort()).toEqual(collective);
  });
});
