import { describe, expect, it } from 'vitest';
import {
  collectiveKneeBytes,
  collectiveSeconds,
  gemmTileEfficiency,
  groupedTileEfficiency,
  libraryTileEfficiency,
  rampedBandwidthFraction,
  rampedMemorySeconds,
} from './physics.ts';

describe('physics terms against hand-computed cases (issue 27)', () => {
  it('wave quantization: M 1024 vs 4096 on 80 CUs, 256 x 256 tiles, N 2048', () => {
    // 1024 rows: 4 x 8 = 32 tiles, one wave, 32 of 80 CUs busy
    expect(gemmTileEfficiency(1024, 2048, 80, 256, 256)).toEqual({ tiles: 32, waves: 1, fraction: 0.4 });
    // 4096 rows: 16 x 8 = 128 tiles, two waves of 80 (160 slots)
    expect(gemmTileEfficiency(4096, 2048, 80, 256, 256)).toEqual({ tiles: 128, waves: 2, fraction: 0.8 });
    // a whole number of waves of whole tiles: no loss
    expect(gemmTileEfficiency(256 * 80, 256, 80, 256, 256).fraction).toBe(1);
  });

  it('tile padding: N 324 (the HC mix width) fills 324 of 512 columns', () => {
    const e = gemmTileEfficiency(256 * 80, 324, 80, 256, 256);
    expect(e).toEqual({ tiles: 160, waves: 2, fraction: 324 / 512 });
  });

  it("the library's tile: the large tile or a half that wastes less", () => {
    // N 324 on 256 x 256: 324/512; on 256 x 128: 3 column tiles, 324/384, the same waves (M 20480: 80 x 3 = 240 tiles, 3 waves)
    const e = libraryTileEfficiency([256 * 80], 324, 80, 256, 256);
    expect([e.tileM, e.tileN]).toEqual([256, 128]);
    expect(e.fraction).toBeCloseTo(324 / 384, 12);
    // M 1024, N 2048: 128 x 256 tiles make 64 tiles in one wave of 80: 0.8 (the large tile's 0.4)
    const m1024 = libraryTileEfficiency([1024], 2048, 80, 256, 256);
    expect(m1024.fraction).toBeCloseTo(0.8, 12);
    // M 4096: 128 x 128 tiles, 512 in 7 waves (560 slots)
    const m4096 = libraryTileEfficiency([4096], 2048, 80, 256, 256);
    expect([m4096.tileM, m4096.tileN]).toEqual([128, 128]);
    expect(m4096.fraction).toBeCloseTo(512 / 560, 12);
  });

  it('grouped GEMM: each group padded to whole tiles, the waves shared', () => {
    // groups of 300 and 100 rows, N 256: 2 + 1 tiles in one wave of 4 CUs
    const e = groupedTileEfficiency([300, 100], 256, 4, 256, 256);
    expect(e.tiles).toBe(3);
    expect(e.waves).toBe(1);
    expect(e.fraction).toBeCloseTo((400 * 256) / (4 * 256 * 256), 12);
    expect(groupedTileEfficiency([0], 256, 4, 256, 256).fraction).toBe(1);
  });

  it('memory ramp: 1 MB at 4 TB/s after 1 us is 1.25 us, 80% of the bandwidth; nothing moved costs nothing', () => {
    expect(rampedMemorySeconds(1e6, 4e12, 1e-6)).toBeCloseTo(1.25e-6, 15);
    expect(rampedBandwidthFraction(4e6, 4e12, 1e-6)).toBeCloseTo(0.5, 12);
    expect(rampedMemorySeconds(0, 4e12, 1e-6)).toBe(0);
  });

  it('a collective below and above its latency knee (15 us, 144 GB/s: knee 2.16 MB)', () => {
    const alpha = 15e-6;
    const beta = 144e9;
    const knee = collectiveKneeBytes(alpha, beta);
    expect(knee).toBeCloseTo(2.16e6, 3);
    // 64 KB, far below: latency-bound, the achieved bus bandwidth ~3% of the links'
    const small = collectiveSeconds(65536, alpha, beta);
    expect(small).toBeCloseTo(15.455e-6, 9);
    expect(65536 / small / beta).toBeLessThan(0.05);
    // at the knee: half the links' bandwidth
    expect(knee / collectiveSeconds(knee, alpha, beta) / beta).toBeCloseTo(0.5, 12);
    // 512 MB (an SP all-reduce of 131072 x 2560 bf16 rows at tp 4 is of this order), far above: bandwidth-bound, >99%
    const large = collectiveSeconds(512e6, alpha, beta);
    expect(large).toBeCloseTo(15e-6 + 512e6 / 144e9, 12);
    expect(512e6 / large / beta).toBeGreaterThan(0.99);
  });

  it('bad sizes name the value', () => {
    expect(() => gemmTileEfficiency(0, 2048, 80, 256, 256)).toThrow(/m must be a positive number, got 0/);
    expect(() => gemmTileEfficiency(1024, 2048, Number.NaN, 256, 256)).toThrow(/cus must be a positive number, got NaN/);
  });
});
