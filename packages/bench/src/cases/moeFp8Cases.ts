import { fp8Info, quantizeBf16RowsFp8, Rng, type Tensor } from '@hcsp/core';
import type { OpCase } from './opCase.ts';

/**
 * moeExpertsFp8Ptpc over 4 experts (H 24, I 12, top-2, T 7): uneven expert loads (expert 1
 * takes every token, expert 3 none, one token routed to experts 1 and 2 only), the whole
 * rank and the expert shards of tp 2 (both ranks) and tp 4 (a rank whose one expert gets no
 * token), both formats and quantization styles, both scale orders. The weights and x are
 * quantized per row by the reference's quantizer. Their own seed, so the other cases keep
 * their inputs.
 */
export function moeFp8OpCases(): OpCase[] {
  const rng = new Rng(2431);
  const [T, H, I, E, K] = [7, 24, 12, 4, 2];
  const bf = (n: number, std: number) => rng.fillBf16Normal(n, std);
  const x = bf(T * H, 1);
  const gateUp = bf(E * 2 * I * H, 1 / Math.sqrt(H));
  const down = bf(E * H * I, 1 / Math.sqrt(I));
  // expert 1 in every token; the other choice 0 or 2; never 3
  const ids = Int32Array.from({ length: T * K }, (_, i) => (i % 2 === 0 ? 1 : [0, 2, 0, 0, 2, 0, 2][i >> 1]));
  const weights = bf(T * K, 0.5);
  const cases: OpCase[] = [];
  for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
    const dtype = fp8Info(format).dtype;
    const xq = quantizeBf16RowsFp8(x, T, H, format, 'reciprocal');
    const gu = quantizeBf16RowsFp8(gateUp, E * 2 * I, H, format, 'reciprocal');
    const dn = quantizeBf16RowsFp8(down, E * H, I, format, 'reciprocal');
    const shard = (first: number, local: number): Tensor[] => [
      { dtype, shape: [local * 2 * I, H], data: gu.q.slice(first * 2 * I * H, (first + local) * 2 * I * H) },
      { dtype: 'f32', shape: [local * 2 * I], data: gu.scale.slice(first * 2 * I, (first + local) * 2 * I) },
      { dtype, shape: [local * H, I], data: dn.q.slice(first * H * I, (first + local) * H * I) },
      { dtype: 'f32', shape: [local * H], data: dn.scale.slice(first * H, (first + local) * H) },
    ];
    const routing: Tensor[] = [
      { dtype, shape: [T, H], data: xq.q },
      { dtype: 'f32', shape: [T], data: xq.scale },
      { dtype: 'i32', shape: [T, K], data: ids },
      { dtype: 'bf16', shape: [T, K], data: weights },
    ];
    const ranks: [string, number, number][] = [
      ['all experts', 0, 4],
      ['tp 2 rank 0', 0, 2],
      ['tp 2 rank 1', 2, 2],
      ['tp 4 rank 3 (no token)', 3, 1],
    ];
    for (const style of ['reciprocal', 'divide'] as const) {
      for (const [what, first, local] of ranks) {
        if (style === 'divide' && what !== 'all experts') continue;
        for (const scaleOrder of ['weightFirst', 'tokenFirst'] as const) {
          if (scaleOrder === 'tokenFirst' && (style !== 'reciprocal' || what !== 'all experts')) continue;
          cases.push({
            name: `moeExpertsFp8Ptpc ${format} ${style} ${scaleOrder} ${what}`,
            op: 'moeExpertsFp8Ptpc',
            tp: 1,
            inputs: [...routing, ...shard(first, local)],
            attrs: { firstExpert: first, numLocal: local, intermediate: I, format, style, scaleOrder },
          });
        }
      }
    }
  }
  return cases;
}
