import { buildHcCombine, buildHcMix, FLASH_NEXT, GraphBuilder, hcPrefix, hcWeightSpecs, Rng, SyntheticWeightSource, type Graph, type Tensor } from '@hcsp/core';

/**
 * The full-dimension HC step of one sub-layer under SP at tp ranks: the T-row streams, the
 * pending sub-layer output and its inject logits are sharded to C = ceil(T/tp) rows per
 * rank; each rank runs the fused combine-norm + mix ([C,10240]x[10240,324]^T and
 * [C,320]x[320,10240]^T GEMMs) and then the unfused combine of the mix output back into its
 * streams. Outputs: every rank's x, raw and combined streams.
 */
export function hcFullDimCase(
  tokens: number,
  tp: number,
  seed: number,
  /** build only these ranks' nodes (a cheaper reference for one rank); default all */
  ranks: number[] = [...Array(tp).keys()],
): { graph: Graph; feeds: Map<string, Tensor>; weights: SyntheticWeightSource } {
  const config = FLASH_NEXT;
  const n = config.hc.count;
  const h = config.hiddenSize;
  const width = n * h;
  const chunk = Math.ceil(tokens / tp);
  const prefix = hcPrefix(0, 'attn');
  const b = new GraphBuilder(tp, { case: `full-dimension HC step T=${tokens} tp=${tp}` });
  const streams = b.input('streams', [tokens, width], 'bf16');
  const y = b.input('y', [tokens, h], 'bf16');
  const raw = b.input('raw', [tokens, n], 'bf16');
  for (const rank of ranks) {
    const shard = (id: string, cols: number): string => {
      const out = b.value(`r${rank}/${id}_shard`, [chunk, cols], 'bf16', rank);
      b.node({ op: 'shard', rank, layer: 0, scope: `shard_${id}`, inputs: [id], outputs: [out], attrs: { rank, tp, chunk } });
      return out;
    };
    const ctx = { config, rank, rows: chunk, prefix, scope: 'L0.attn_hc', layer: 0, contract: 'atom' as const };
    const mix = buildHcMix(b, ctx, shard(streams, width), { y: shard(y, h), raw: shard(raw, n) }, true);
    const combined = buildHcCombine(b, { ...ctx, scope: 'L0.mlp_hc' }, mix.streams, { y: mix.x, raw: mix.raw! });
    for (const id of [mix.x, mix.raw!, combined]) b.markOutput(id);
  }
  const rng = new Rng(seed);
  const bf = (shape: number[], std: number): Tensor => ({ dtype: 'bf16', shape, data: rng.fillBf16Normal(shape[0] * shape[1], std) });
  const feeds = new Map<string, Tensor>([
    [streams, bf([tokens, width], 1)],
    [y, bf([tokens, h], 0.5)],
    [raw, bf([tokens, n], 1)],
  ]);
  return { graph: b.build(), feeds, weights: new SyntheticWeightSource(hcWeightSpecs(config, prefix, true), seed) };
}
