import { FLASH_NEXT, SMALL } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { expectExactChainBits, expectStepJudged } from './stepChecks.ts';
import { gdnChainGraph, gdnChunkedFlops, gdnMinBytes, gdnStep } from './gpuCheckGdn.ts';

describe('gpu-check chunked GatedDeltaNet threshold', () => {
  it("the FLOPs are the chunk algorithm's at Flash-Next dimensions, T = 4096, and count a partial last chunk", () => {
    // per value head and chunk of 64 (dk = dv = 128): the solve 2 (2016 dk + 2080 dk + 2016 (dk + dv)),
    // the state pass 2 (2 * 64 dv dk + 2080 dv + dk dv 64); 64 chunks, 48 value heads
    const perChunk = 2 * (2016 * 128 + 2080 * 128 + 2016 * 256) + 2 * (2 * 64 * 128 * 128 + 2080 * 128 + 128 * 128 * 64);
    expect(gdnChunkedFlops(FLASH_NEXT, 4096)).toBe(48 * 64 * perChunk);
    // T 65: a whole chunk and one token (L = 1: P's one q.k, no substitution; 2 dv dk + dv + dk dv per head)
    expect(gdnChunkedFlops(FLASH_NEXT, 65) - gdnChunkedFlops(FLASH_NEXT, 64)).toBe(48 * 2 * (128 + 2 * 128 * 128 + 128 + 128 * 128));
    // qkv [4096, 2*16*128 + 48*128] read, g (f32) and beta (bf16) [4096, 48], o [4096, 48*128] written
    expect(gdnMinBytes(FLASH_NEXT, 4096)).toBe(2 * 4096 * 10240 + 6 * 4096 * 48 + 2 * 4096 * 6144);
  });
});

describe('gpu-check chunked GatedDeltaNet step on the emulated device', () => {
  it("the chained graph gives the CPU reference's bits with the exact kernels", async () => {
    const { graph, weights } = gdnChainGraph(SMALL, 70, 3);
    expect(graph.nodes.filter((n) => n.op === 'gdnRecurrence')).toHaveLength(3);
    await expectExactChainBits(graph, weights);
  }, 60_000);

  it('the step times the fast kernel and judges it against the ceiling', async () => {
    await expectStepJudged(
      gdnStep,
      SMALL,
      70,
      /^chunked GatedDeltaNet \(gdnRecurrence, kernels fast\) at T=70, small: 4 key \/ 12 value heads, dk 16 dv 16, chunks of 64; 0\.0 GFLOP \(within 3x of its math at the matrix ceiling\):$/,
      'gdnRecurrence',
    );
  }, 120_000);
});
