// The GPU check's FP8 MoE step (issue 24 item 3, the FP8 half): the routed experts on FP8 PTPC
// weights (op moeExpertsFp8Ptpc, as a ptpc-fp8 checkpoint runs them) at Flash-Next's MoE
// shapes, T = 4096, tp 1, with the device's kernels (fast: moe_fp8.cu's tiled kernels; exact:
// one thread per output), timed against the FP8 weights' bytes (and their F32 scales) at the
// copy bandwidth the check measures in the same run, with gpuCheckMoe.ts's threshold
// (MOE_COPY_FACTOR). gpuCheck.ts can run it; gpuCheckMoeFp8.test.ts runs it on the emulated
// device at small shapes.
//
// As gpuCheckMoe.ts: operands uploaded once, the routing the device's moeRoute of random
// logits, the weights one repeated random block (quantized per row by the reference's
// quantizer, e4m3fn), the op run through the addon with its one sync per run.
import { FLASH_NEXT, quantizeBf16RowsFp8, Rng, type ModelConfig } from '@hcsp/core';
import type { NativeTensor, RocmBackend } from '@hcsp/backend-rocm';
import { moeFlops, moeVerdict, MOE_COPY_FACTOR, repeatBlock, withUploads } from './gpuCheckMoe.ts';
import { warmMedianSeconds } from './gpuCheckTiming.ts';
import type { Verdict } from './gpuCheckVerdict.ts';

/** the bytes of the experts' FP8 weights a rank reads: gate-up [2I, H] and down [H, I] per expert, one byte each, and their F32 scales */
export function moeFp8WeightBytes(config: ModelConfig, numLocal = config.moe.numExperts): number {
  const H = config.hiddenSize;
  const I = config.moe.intermediate;
  return numLocal * (3 * H * I + 4 * (2 * I + H));
}

/** n values repeating one seeded block of per-row quantized values ([rows, cols] of the block's own) */
function repeatedFp8(n: number, cols: number, std: number, seed: number): { q: Uint8Array; scale: (rows: number) => Float32Array } {
  const blockRows = Math.max(1, Math.min(Math.ceil(n / cols), Math.floor((1 << 20) / cols)));
  const block = quantizeBf16RowsFp8(new Rng(seed).fillBf16Normal(blockRows * cols, std), blockRows, cols, 'e4m3fn', 'reciprocal');
  const q = repeatBlock(block.q, new Uint8Array(n));
  return { q, scale: (rows) => Float32Array.from({ length: rows }, (_, r) => block.scale[r % blockRows]!) };
}

/** median seconds of moeExpertsFp8Ptpc on `backend`'s GPU at config's MoE shapes on T tokens, tp 1 (after a warm-up run) */
export async function timeMoeExpertsFp8(backend: RocmBackend, config: ModelConfig, T: number, runs = 5): Promise<number> {
  const { addon } = backend;
  const H = config.hiddenSize;
  const { numExperts: E, topK, intermediate: I, normTopkProb } = config.moe;
  return withUploads(backend, 'MoE FP8', async (up, held, gpu) => {
    const x = repeatedFp8(T * H, H, 1, 1);
    const gu = repeatedFp8(E * 2 * I * H, H, 1 / Math.sqrt(H), 3);
    const dn = repeatedFp8(E * H * I, I, 1 / Math.sqrt(I), 4);
    const inputs = [up('fp8e4m3fn', [T, H], x.q), up('f32', [T], x.scale(T))];
    const logits = up('bf16', [T, E], new Rng(2).fillBf16Normal(T * E, 1));
    const route = (await addon.run('moeRoute', [logits], { topK, normTopkProb }, backend.gemm, gpu)) as NativeTensor[];
    held.push(...route);
    inputs.push(route[0]!, route[1]!);
    inputs.push(
      up('fp8e4m3fn', [E * 2 * I, H], gu.q),
      up('f32', [E * 2 * I], gu.scale(E * 2 * I)),
      up('fp8e4m3fn', [E * H, I], dn.q),
      up('f32', [E * H], dn.scale(E * H)),
    );
    const attrs = { firstExpert: 0, numLocal: E, intermediate: I, format: 'e4m3fn', style: 'reciprocal', scaleOrder: 'weightFirst' };
    return await warmMedianSeconds(runs, async () => {
      const [routed] = (await addon.run('moeExpertsFp8Ptpc', inputs, attrs, backend.gemm, gpu)) as NativeTensor[];
      addon.free(routed!);
    });
  });
}

/** the step: the header, then the FP8 experts' line against the copy bandwidth */
export async function moeFp8Step(
  backend: RocmBackend,
  copyGbps: number,
  options: { config?: ModelConfig; T?: number; runs?: number } = {},
): Promise<Verdict[]> {
  const config = options.config ?? FLASH_NEXT;
  const T = options.T ?? 4096;
  const { numExperts: E, topK, intermediate: I } = config.moe;
  const bytes = moeFp8WeightBytes(config);
  const header =
    `MoE experts (moeExpertsFp8Ptpc, FP8 PTPC, kernels ${backend.kernels}) at T=${T}, tp 1, ${config.name}: ${E} experts, topK ${topK}, H ${config.hiddenSize}, inter ${I}; ` +
    `${(bytes / 1e9).toFixed(2)} GB of FP8 weights and scales, ${(moeFlops(config, T) / 1e9).toFixed(1)} GFLOP (at most ${MOE_COPY_FACTOR}x the weights at copy speed):`;
  const seconds = await timeMoeExpertsFp8(backend, config, T, options.runs);
  return [
    { line: header, pass: true },
    { ...moeVerdict('moeExpertsFp8Ptpc', seconds, bytes, moeFlops(config, T), copyGbps), seconds },
  ];
}
