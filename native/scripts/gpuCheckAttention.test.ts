import { FLASH_NEXT, SMALL } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { expectExactChainBits, expectStepJudged } from './stepChecks.ts';
import { attentionChainGraph, attentionKeptFlops, attentionMinBytes, attentionStep, keptKeys } from './gpuCheckAttention.ts';

describe('gpu-check tiled attention threshold', () => {
  it('the FLOPs count only the kept keys', () => {
    // ratio 4, width 512: row t keeps min(512, floor((t+1)/4)) blocks and its tail
    expect([0, 2, 3, 4, 2047, 2048, 4095].map((t) => keptKeys(t, 4, 512))).toEqual([1, 3, 4, 5, 2048, 2049, 2048]);
    let keys = 0;
    for (let t = 0; t < 4096; t++) keys += t < 2048 ? t + 1 : 2048 + ((t + 1) % 4);
    expect(attentionKeptFlops(FLASH_NEXT, 4096)).toBe(4 * 256 * 24 * keys);
    // q read and o written [4096, 24*256], k and v [4096, 2*256] bf16; the selection [4096, 512] i32
    expect(attentionMinBytes(FLASH_NEXT, 4096)).toBe(2 * (2 * 4096 * 6144 + 2 * 4096 * 512) + 4 * 4096 * 512);
  });
});

describe('gpu-check tiled attention step on the emulated device', () => {
  it("the chained graph gives the CPU reference's bits with the exact kernels", async () => {
    // small at T 80: rows past 67 drop blocks
    const { graph, weights } = attentionChainGraph(SMALL, 80, 3);
    expect(graph.nodes.filter((n) => n.op === 'attnCausalQsa')).toHaveLength(3);
    await expectExactChainBits(graph, weights);
  }, 60_000);

  it('the step times the fast kernel and judges it against the ceiling', async () => {
    await expectStepJudged(
      attentionStep,
      SMALL,
      64,
      /^tiled attention \(attnCausalQsa, kernels fast\) at T=64, small: 8 heads \/ 2 KV heads, hd 32, QSA 16 blocks of 4; 0\.0 GFLOP over the kept keys \(within 3x of its math at the matrix ceiling\):$/,
      'attnCausalQsa',
    );
  }, 120_000);
});
