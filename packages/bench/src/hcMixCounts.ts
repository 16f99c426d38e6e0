// What the HC mix bench counts: the flops of its two GEMMs and the bytes its five ops must move.
import type { ModelConfig } from '@hcsp/core';

const BF16_BYTES = 2;

/** The two GEMMs of the mix as [K, O] (y = x[T,K] w[O,K]^T): W_cat (r + n outputs), then up. */
export function hcMixGemms(config: ModelConfig): [number, number][] {
  const width = config.hc.count * config.hiddenSize;
  return [
    [width, config.hc.lowRank + config.hc.count],
    [config.hc.lowRank, width],
  ];
}

/** Flops counted: 2*T*K*O per GEMM (one multiply and one add per term); the elementwise ops are not counted. */
export function hcMixFlops(config: ModelConfig, tokens: number): number {
  return hcMixGemms(config).reduce((sum, [K, O]) => sum + 2 * tokens * K * O, 0);
}

/**
 * Bytes counted: every tensor each op reads or writes, once, at its bf16 storage size (the
 * compulsory traffic; re-reads from cache by a tiled kernel are not counted).
 *   combine-norm: reads streams [T,nH] + norm weight [nH], writes streams out and normed [T,nH]
 *   W_cat GEMM:   reads normed [T,nH] + W_cat [r+n,nH], writes d [T,r+n]
 *   scaled silu:  reads d [T,r+n], writes gate [T,r] and raw [T,n]
 *   up GEMM:      reads gate [T,r] + W_up [nH,r], writes up [T,nH]
 *   gated mean:   reads up and normed [T,nH], writes x [T,H]
 */
export function hcMixBytes(config: ModelConfig, tokens: number): number {
  const n = config.hc.count;
  const h = config.hiddenSize;
  const r = config.hc.lowRank;
  const nh = n * h;
  const T = tokens;
  const elements =
    T * nh +
    nh +
    2 * T * nh + // combine-norm
    T * nh +
    (r + n) * nh +
    T * (r + n) + // W_cat GEMM
    T * (r + n) +
    T * r +
    T * n + // scaled silu
    T * r +
    nh * r +
    T * nh + // up GEMM
    2 * T * nh +
    T * h; // gated mean
  return elements * BF16_BYTES;
}
