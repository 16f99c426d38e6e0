// The GPU check's chunked-GatedDeltaNet step (issue 24): gdnRecurrence's fast kernel
// (kernels/gdn_chunked.cu) at Flash-Next's linear-attention shapes (16 key heads, 48 value
// heads, key and value dims 128), T = 4096, tp 1 on one GPU. Its FLOPs are the chunk
// algorithm's (gdnChunkedFlops), and it passes when its time is within GDN_MATH_FACTOR of that
// math at the device's matrix ceiling (the best GEMM TFLOP/s the check measures in the same
// run). gpuCheck.ts runs it; gpuCheckGdn.test.ts runs it on the emulated device at small shapes.
//
// g and beta come from gdnGates on synthetic gate inputs (so g is a real log decay); the
// recurrence runs `reps` times on the same operands in one recorded run, and the per-launch
// time is the difference of a reps run and a one-launch run over the extra launches, so the
// gates, the run's sync and its read-back cancel out.
import type { Backend, Graph, ModelConfig, SyntheticWeightSource } from '@hcsp/core';
import { chainBuilder } from './gpuCheckChain.ts';
import { type CeilingKernel, matrixCeilingStep } from './gpuCheckTiming.ts';
import type { Verdict } from './gpuCheckVerdict.ts';

/** the kernel must run within this factor of its chunk math at the matrix ceiling */
export const GDN_MATH_FACTOR = 3;
/** tokens per chunk (kernels/gdn_chunked.h HCSP_GDN_CHUNK) */
export const GDN_CHUNK = 64;

/** gdnRecurrence's attributes for a config at tp 1 */
export function gdnAttrs(config: ModelConfig): { keyHeads: number; valueHeads: number; keyDim: number; valueDim: number; scale: number; l2Eps: number } {
  const { numKeyHeads, numValueHeads, keyHeadDim, valueHeadDim } = config.linearAttention;
  return { keyHeads: numKeyHeads, valueHeads: numValueHeads, keyDim: keyHeadDim, valueDim: valueHeadDim, scale: Math.fround(keyHeadDim ** -0.5), l2Eps: 1e-6 };
}

/**
 * The chunk algorithm's FLOPs at T tokens (a multiply and an add each 2), per value head and
 * chunk of L tokens: the solve's A and P (L(L-1)/2 and L(L+1)/2 key-dim dots), its forward
 * substitution over the dk + dv columns (L(L-1)/2 each); the state pass's delta = U - W S and
 * Q S (L dv dk each), P delta (L(L+1)/2 dv) and the state update (dk dv L).
 */
export function gdnChunkedFlops(config: ModelConfig, T: number): number {
  const { valueHeads, keyDim: dk, valueDim: dv } = gdnAttrs(config);
  let perHead = 0;
  for (let t0 = 0; t0 < T; t0 += GDN_CHUNK) {
    const L = Math.min(GDN_CHUNK, T - t0);
    const tri = (L * (L - 1)) / 2;
    const triDiag = (L * (L + 1)) / 2;
    perHead += 2 * (tri * dk + triDiag * dk + tri * (dk + dv));
    perHead += 2 * (2 * L * dv * dk + triDiag * dv + dk * dv * L);
  }
  return valueHeads * perHead;
}

/** the bytes the op must move at least: qkv, g and beta read, o written */
export function gdnMinBytes(config: ModelConfig, T: number): number {
  const { keyHeads, valueHeads, keyDim, valueDim } = gdnAttrs(config);
  return 2 * T * (2 * keyHeads * keyDim + valueHeads * valueDim) + 6 * T * valueHeads + 2 * T * valueHeads * valueDim;
}

/** gdnGates from synthetic b, a, A_log and dt_bias, then gdnRecurrence `reps` times on one synthetic qkv; the output is the last result's first column */
export function gdnChainGraph(config: ModelConfig, T: number, reps: number): { graph: Graph; weights: SyntheticWeightSource } {
  const a = gdnAttrs(config);
  const C = 2 * a.keyHeads * a.keyDim + a.valueHeads * a.valueDim;
  const { b, weight, finish } = chainBuilder('gdnRecurrence chain', T, reps);
  const qkv = weight('qkv', [T, C], 1);
  const g = b.value('g', [T, a.valueHeads], 'f32', 0);
  const beta = b.value('beta', [T, a.valueHeads], 'bf16', 0);
  const gateIns = [
    weight('b', [T, a.valueHeads], 1),
    weight('a', [T, a.valueHeads], 1),
    weight('aLog', [a.valueHeads], 0.5),
    weight('dtBias', [a.valueHeads], 0.5),
  ];
  b.node({ op: 'gdnGates', rank: 0, layer: 0, scope: 'gates', inputs: gateIns, outputs: [g, beta], attrs: {} });
  let o = '';
  for (let r = 0; r < reps; r++) {
    o = b.value(`o${r}`, [T, a.valueHeads * a.valueDim], 'bf16', 0);
    b.node({ op: 'gdnRecurrence', rank: 0, layer: 0, scope: `recurrence.${r}`, inputs: [qkv, g, beta], outputs: [o], attrs: a });
  }
  return finish(o, 13);
}

/** the step: gdnRecurrence's launch against the matrix ceiling */
export function gdnStep(
  backend: Backend,
  matrixTflops: number,
  options: { config?: ModelConfig; T?: number; reps?: number; runs?: number } = {},
): Promise<Verdict[]> {
  return matrixCeilingStep(backend, matrixTflops, GDN_KERNEL, options);
}

const GDN_KERNEL: CeilingKernel = {
  op: 'gdnRecurrence',
  factor: GDN_MATH_FACTOR,
  chain: gdnChainGraph,
  flops: gdnChunkedFlops,
  minBytes: gdnMinBytes,
  header: (config, T, flops) => {
    const a = gdnAttrs(config);
    return (
      `chunked GatedDeltaNet (gdnRecurrence, kernels fast) at T=${T}, ${config.name}: ${a.keyHeads} key / ${a.valueHeads} value heads, dk ${a.keyDim} dv ${a.valueDim}, chunks of ${GDN_CHUNK}; ` +
      `${(flops / 1e9).toFixed(1)} GFLOP (within ${GDN_MATH_FACTOR}x of its math at the matrix ceiling):`
    );
  },
};
