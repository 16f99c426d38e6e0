// The GPU check's tiled-attention step (issue 24): attnCausalQsa's fast kernel at Flash-Next's
// attention shapes (24 query heads over 2 KV heads, head dim 256, QSA ratio 4, width
// budget / ratio = 512 blocks), T = 4096, tp 1 on one GPU. Its FLOPs count only the kept keys
// (every row's listed blocks and tail: 4 hd FLOPs per (row, head, kept key), q.k and p.v), and
// it passes when its time is within ATTN_MATH_FACTOR of that math at the device's matrix
// ceiling (the best GEMM TFLOP/s the check measures in the same run). gpuCheck.ts runs it;
// gpuCheckAttention.test.ts runs it on the emulated device at small shapes.
//
// The selection is made on the device by qsaSelect from synthetic indexer queries and block
// keys, once per run; the attention is chained `reps` times (each output the next query), and
// the per-launch time is the difference of a long and a one-launch chain over the extra
// launches, so the selection, the run's sync and its read-back cancel out.
import { qsaIndexerDims, type Backend, type Graph, type ModelConfig, type SyntheticWeightSource } from '@hcsp/core';
import { chainBuilder } from './gpuCheckChain.ts';
import { type CeilingKernel, matrixCeilingStep } from './gpuCheckTiming.ts';
import type { Verdict } from './gpuCheckVerdict.ts';

/** the kernel must run within this factor of its kept-key math at the matrix ceiling */
export const ATTN_MATH_FACTOR = 3;

/** attnCausalQsa's attributes for a config at tp 1 */
export function attentionAttrs(config: ModelConfig): { heads: number; kvHeads: number; headDim: number; scale: number; compressRatio: number; width: number } {
  const { numHeads, numKvHeads, headDim } = config.attention;
  const { compressRatio, width } = qsaIndexerDims(config);
  return { heads: numHeads, kvHeads: numKvHeads, headDim, scale: Math.fround(headDim ** -0.5), compressRatio, width };
}

/** keys row t keeps: min(width, floor((t+1)/ratio)) whole blocks, then its tail */
export function keptKeys(t: number, ratio: number, width: number): number {
  const nb = Math.floor((t + 1) / ratio);
  return Math.min(width, nb) * ratio + (t + 1 - nb * ratio);
}

/** FLOPs over the kept keys at T rows: 4 hd per (row, query head, kept key) (q.k and p.v, a multiply and an add each) */
export function attentionKeptFlops(config: ModelConfig, T: number): number {
  const a = attentionAttrs(config);
  let keys = 0;
  for (let t = 0; t < T; t++) keys += keptKeys(t, a.compressRatio, a.width);
  return 4 * a.headDim * a.heads * keys;
}

/** the bytes the tiled kernel must move at least: q read and o written, K and V of every KV head read once (bf16), the selection (i32) */
export function attentionMinBytes(config: ModelConfig, T: number): number {
  const a = attentionAttrs(config);
  return 2 * (2 * T * a.heads * a.headDim + 2 * T * a.kvHeads * a.headDim) + 4 * T * a.width;
}

/**
 * The selection from synthetic indexer queries and block keys (qsaSelect on the device), then
 * attnCausalQsa chained `reps` times from a synthetic q, k and v; the output is the last
 * result's first column.
 */
export function attentionChainGraph(config: ModelConfig, T: number, reps: number): { graph: Graph; weights: SyntheticWeightSource } {
  const a = attentionAttrs(config);
  const ix = config.attention.indexer;
  const { b, weight, finish } = chainBuilder('attnCausalQsa chain', T, reps);
  const iq = weight('indexer.q', [T, ix.nHeads * ix.headDim], 1);
  const kb = weight('indexer.kb', [Math.floor(T / a.compressRatio), ix.headDim], 1);
  const blocks = b.value('blocks', [T, a.width], 'i32', 0);
  b.node({
    op: 'qsaSelect',
    rank: 0,
    layer: 0,
    scope: 'select',
    inputs: [iq, kb],
    outputs: [blocks],
    attrs: { r0: 0, tokens: T, nHeads: ix.nHeads, headDim: ix.headDim, compressRatio: a.compressRatio, width: a.width },
  });
  let q = weight('q', [T, a.heads * a.headDim], 1);
  const k = weight('k', [T, a.kvHeads * a.headDim], 1);
  const v = weight('v', [T, a.kvHeads * a.headDim], 1);
  for (let r = 0; r < reps; r++) {
    const o = b.value(`o${r}`, [T, a.heads * a.headDim], 'bf16', 0);
    b.node({ op: 'attnCausalQsa', rank: 0, layer: 0, scope: `attention.${r}`, inputs: [q, k, v, blocks], outputs: [o], attrs: a });
    q = o;
  }
  return finish(q, 11);
}

/** the step: attnCausalQsa's launch against the matrix ceiling */
export function attentionStep(
  backend: Backend,
  matrixTflops: number,
  options: { config?: ModelConfig; T?: number; reps?: number; runs?: number } = {},
): Promise<Verdict[]> {
  return matrixCeilingStep(backend, matrixTflops, ATTENTION_KERNEL, options);
}

const ATTENTION_KERNEL: CeilingKernel = {
  op: 'attnCausalQsa',
  factor: ATTN_MATH_FACTOR,
  chain: attentionChainGraph,
  flops: attentionKeptFlops,
  minBytes: attentionMinBytes,
  header: (config, T, flops) => {
    const a = attentionAttrs(config);
    return (
      `tiled attention (attnCausalQsa, kernels fast) at T=${T}, ${config.name}: ${a.heads} heads / ${a.kvHeads} KV heads, hd ${a.headDim}, QSA ${a.width} blocks of ${a.compressRatio}; ` +
      `${(flops / 1e9).toFixed(1)} GFLOP over the kept keys (within ${ATTN_MATH_FACTOR}x of its math at the matrix ceiling):`
    );
  },
};
