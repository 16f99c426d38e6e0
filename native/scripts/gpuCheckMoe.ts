// The GPU check's MoE step (issue 24 item 3): the routed experts (op moeExperts, bf16 weights)
// at Flash-Next's MoE shapes, T = 4096, tp 1 (every expert on the one GPU), with the device's
// kernels (fast: moe_grouped.cu's grouped GEMMs; exact: the reference-order grouped kernel),
// timed against the weights' bytes at the device copy bandwidth the check measures in the same
// run: it passes when its time is at most MOE_COPY_FACTOR x weight bytes / copy bandwidth (the
// experts' weights must be read once; a grouped GEMM of ~80 rows per expert is that read plus
// its math). gpuCheck.ts runs it; gpuCheckMoe.test.ts runs it on the emulated device.
//
// The operands are uploaded once and the op run through the addon with its one sync per run
// (tens of microseconds against milliseconds); the routing is the device's moeRoute of random
// logits (about T x topK / experts rows per expert, as a real layer's). The weights repeat one
// random block: their values do not change the time, and a Flash-Next layer's 5 GB would take
// minutes to draw.
import { FLASH_NEXT, Rng, type ModelConfig } from '@hcsp/core';
import type { GpuDevice, NativeTensor, RocmBackend } from '@hcsp/backend-rocm';
import { warmMedianSeconds } from './gpuCheckTiming.ts';
import type { Verdict } from './gpuCheckVerdict.ts';

/** the MoE's time may be at most this many times its weight bytes at the copy bandwidth */
export const MOE_COPY_FACTOR = 2;

/** the bytes of the experts' weights a rank reads (bf16 gate-up [2I, H] and down [H, I] per expert) */
export function moeWeightBytes(config: ModelConfig, numLocal = config.moe.numExperts): number {
  return numLocal * 3 * config.hiddenSize * config.moe.intermediate * 2;
}

/** the experts' FLOPs on T tokens (each routed row: gate-up 2 x 2I x H, down 2 x H x I) */
export function moeFlops(config: ModelConfig, T: number): number {
  return 6 * T * config.moe.topK * config.hiddenSize * config.moe.intermediate;
}

/** one line: seconds, weight GB/s, TFLOP/s; pass when seconds <= MOE_COPY_FACTOR x weight bytes / copy */
export function moeVerdict(label: string, seconds: number, weightBytes: number, flops: number, copyGbps: number): Verdict {
  const limit = (MOE_COPY_FACTOR * weightBytes) / (copyGbps * 1e9);
  const pass = Number.isFinite(seconds) && seconds > 0 && Number.isFinite(limit) && seconds <= limit;
  const gbps = weightBytes / seconds / 1e9;
  const tflops = flops / seconds / 1e12;
  const line = `  ${label.padEnd(22)} ${seconds.toFixed(6).padStart(9)} s ${gbps.toFixed(1).padStart(8)} GB/s of weights ${tflops.toFixed(2).padStart(7)} TFLOP/s  (limit ${limit.toFixed(6)} s) ${pass ? 'pass' : `FAIL (over ${MOE_COPY_FACTOR}x the weights at copy speed)`}`;
  return { line, pass };
}

/** `out` filled with `block` over and over (the last copy cut short) */
export function repeatBlock<A extends Uint8Array | Uint16Array>(block: A, out: A): A {
  for (let i = 0; i < out.length; i += block.length) out.set(block.subarray(0, Math.min(block.length, out.length - i)), i);
  return out;
}

/** a bf16 array of n values repeating one seeded normal block */
function repeatedBf16(n: number, std: number, seed: number): Uint16Array {
  return repeatBlock(new Rng(seed).fillBf16Normal(Math.min(n, 1 << 20), std), new Uint16Array(n));
}

/** `use` with an uploader to `backend`'s GPU (and that GPU) whose tensors (and those it is handed to hold) are freed after it */
export async function withUploads<R>(
  backend: RocmBackend,
  what: string,
  use: (
    up: (dtype: string, shape: number[], data: Uint8Array | Uint16Array | Float32Array) => NativeTensor,
    held: NativeTensor[],
    gpu: GpuDevice,
  ) => Promise<R>,
): Promise<R> {
  const { addon, gpu } = backend;
  if (!gpu) throw new Error(`gpu-check ${what}: the backend has no GPU device`);
  const held: NativeTensor[] = [];
  try {
    return await use(
      (dtype, shape, data) => {
        const t = addon.upload(dtype as never, shape, data, gpu);
        held.push(t);
        return t;
      },
      held,
      gpu,
    );
  } finally {
    for (const t of held) addon.free(t);
  }
}

/** median seconds of moeExperts on `backend`'s GPU at config's MoE shapes on T tokens, tp 1 (after a warm-up run) */
export async function timeMoeExperts(backend: RocmBackend, config: ModelConfig, T: number, runs = 5): Promise<number> {
  const { addon } = backend;
  const H = config.hiddenSize;
  const { numExperts: E, topK, intermediate: I, normTopkProb } = config.moe;
  return withUploads(backend, 'MoE', async (up, held, gpu) => {
    const x = up('bf16', [T, H], repeatedBf16(T * H, 1, 1));
    const logits = up('bf16', [T, E], new Rng(2).fillBf16Normal(T * E, 1));
    const gateUp = up('bf16', [E * 2 * I, H], repeatedBf16(E * 2 * I * H, 1 / Math.sqrt(H), 3));
    const down = up('bf16', [E * H, I], repeatedBf16(E * H * I, 1 / Math.sqrt(I), 4));
    const route = (await addon.run('moeRoute', [logits], { topK, normTopkProb }, backend.gemm, gpu)) as NativeTensor[];
    held.push(...route);
    const attrs = { firstExpert: 0, numLocal: E, intermediate: I };
    return await warmMedianSeconds(runs, async () => {
      const [routed] = (await addon.run('moeExperts', [x, route[0]!, route[1]!, gateUp, down], attrs, backend.gemm, gpu)) as NativeTensor[];
      addon.free(routed!);
    });
  });
}

/** the step: the header, then the experts' line against the copy bandwidth */
export async function moeStep(backend: RocmBackend, copyGbps: number, options: { config?: ModelConfig; T?: number; runs?: number } = {}): Promise<Verdict[]> {
  const config = options.config ?? FLASH_NEXT;
  const T = options.T ?? 4096;
  const { numExperts: E, topK, intermediate: I } = config.moe;
  const bytes = moeWeightBytes(config);
  const header =
    `MoE experts (moeExperts, bf16, kernels ${backend.kernels}) at T=${T}, tp 1, ${config.name}: ${E} experts, topK ${topK}, H ${config.hiddenSize}, inter ${I}; ` +
    `${(bytes / 1e9).toFixed(2)} GB of weights, ${(moeFlops(config, T) / 1e9).toFixed(1)} GFLOP (at most ${MOE_COPY_FACTOR}x the weights at copy speed):`;
  const seconds = await timeMoeExperts(backend, config, T, options.runs);
  return [
    { line: header, pass: true },
    { ...moeVerdict('moeExperts', seconds, bytes, moeFlops(config, T), copyGbps), seconds },
  ];
}
