import { FLASH_NEXT } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { graphCost, liveBytes, matrixFlops, minimumBytes } from './graphCost.ts';
import { hcCombineBenchGraph, hcMixBenchGraph, linearBenchGraph } from './graphs.ts';
import { hcMixFlops } from './hcMixCounts.ts';

describe('host bench counts', () => {
  it("the mix's cost: its two GEMM shapes, the other nodes' bytes, the streams in and x, streams, raw out", () => {
    const T = 1024;
    const c = graphCost(hcMixBenchGraph(FLASH_NEXT, T));
    expect(c.gemms.map((g) => [g.shape.T, g.shape.K, g.shape.O, g.count])).toEqual([
      [T, 10240, 324, 1],
      [T, 320, 10240, 1],
    ]);
    expect(c.gemmFlops).toBe(2 * T * (10240 * 324 + 320 * 10240));
    const nh = T * 10240;
    // combine-norm (streams in, norm weight, streams out, normed) + silu (d, gate, raw) + gated mean (up, normed, x)
    expect(c.otherBytes).toBe(2 * (3 * nh + 10240 + T * 324 + T * 320 + T * 4 + 2 * nh + T * 2560));
    expect(c.ioBytes).toBe(2 * (nh + T * 2560 + nh + T * 4));
  });

  it('must-live: weights once, and the most bytes alive at once', () => {
    const T = 16;
    const g = hcMixBenchGraph(FLASH_NEXT, T);
    const live = liveBytes(g);
    expect(live.weights).toBe(2 * (10240 + 324 * 10240 + 10240 * 320));
    const nh = T * 10240;
    // at the gated mean: streams out (kept), normed, up, x, raw (kept)
    expect(live.activationPeak).toBe(2 * (3 * nh + T * 2560 + T * 4));
    expect(live.total).toBe(live.weights + live.activationPeak);
  });

  it("the one-node GEMM graphs are the mix's two linears", () => {
    expect(graphCost(linearBenchGraph(FLASH_NEXT, 8, 0)).gemms[0].shape).toEqual({ T: 8, K: 10240, O: 324 });
    expect(graphCost(linearBenchGraph(FLASH_NEXT, 8, 1)).gemms[0].shape).toEqual({ T: 8, K: 320, O: 10240 });
  });
});

describe('suite counts', () => {
  it("the mix's flops are bench's hcMixFlops; its fewest bytes are the streams in, the weights, x, streams and raw out", () => {
    const T = 1024;
    const g = hcMixBenchGraph(FLASH_NEXT, T);
    expect(matrixFlops(g, FLASH_NEXT)).toBe(hcMixFlops(FLASH_NEXT, T));
    const nh = 10240;
    const weights = nh + 324 * nh + nh * 320;
    expect(minimumBytes(g)).toBe(2 * (T * nh + weights + T * 2560 + T * nh + T * 4));
  });

  it('the combine: streams, y and raw in, streams out; no GEMM', () => {
    const T = 16;
    const g = hcCombineBenchGraph(FLASH_NEXT, T);
    expect(g.nodes.map((n) => n.op)).toEqual(['hcCombine']);
    expect(matrixFlops(g, FLASH_NEXT)).toBe(0);
    expect(minimumBytes(g)).toBe(2 * (T * 10240 + T * 2560 + T * 4 + T * 10240));
  });
});
