// Test support for the head-split layers ending in a row-parallel projection (full attention,
// GDN): runs the layer's graph at tp ranks on the CPU reference and registers the checks both
// must pass against tp=1: a realistic output RMS, the per-head activations before the
// projection bit-exact (every head is computed in the same order as at tp=1), and the summed
// partials within the rowParallelSum rounding bound.
import { GraphBuilder, runOnce, bf16ArrayToF32, compareBf16, CpuBackend, type ValueId, type SyntheticWeightSource, type Tensor } from '@hcsp/core';
import { beforeAll, expect, it } from 'vitest';
import { rowParallelSum } from './rowParallelSum.ts';

export interface TpLayerUnderTest {
  /** the label of the logged comparison */
  label: string;
  tokens: number;
  hidden: number;
  /** scope-relative name of the per-head activations (the projection's input): rank r's is `r${r}/${headsValue}` */
  headsValue: string;
  /** heads and head width of those activations; the projection reduces over heads * headDim */
  heads: number;
  headDim: number;
  /** weight name of the row-parallel projection [hidden, heads * headDim] */
  projectionWeight: string;
  weights: SyntheticWeightSource;
  /** Adds the layer's inputs beyond x to `b`; returns their feeds and the builder of one rank's partial output. */
  build(b: GraphBuilder, x: ValueId): { feeds: [ValueId, Tensor][]; partial(rank: number, tp: number): ValueId };
}

export interface TpLayerRun {
  /** each rank's partial output, bf16 [tokens, hidden] */
  partials: Uint16Array[];
  /** each rank's per-head activations, bf16 [tokens, heads/tp * headDim] */
  heads: Uint16Array[];
}

export async function runLayerTp(layer: TpLayerUnderTest, tp: number, x: Uint16Array): Promise<TpLayerRun> {
  const b = new GraphBuilder(tp);
  const xIn = b.input('x', [layer.tokens, layer.hidden], 'bf16');
  const { feeds, partial } = layer.build(b, xIn);
  const partials = Array.from({ length: tp }, (_, rank) => partial(rank, tp));
  const heads = Array.from({ length: tp }, (_, r): ValueId => `r${r}/${layer.headsValue}`);
  const allFeeds = new Map<ValueId, Tensor>([[xIn, { dtype: 'bf16', shape: [layer.tokens, layer.hidden], data: x }], ...feeds]);
  // CpuBackend checks every fed input, resolved weight and produced value against its
  // declared dtype and shape, and throws on a mismatch.
  const { values } = await runOnce(new CpuBackend(), b.build(), allFeeds, layer.weights, { keep: [...partials, ...heads] });
  return {
    partials: partials.map((id) => values.get(id)!.data as Uint16Array),
    heads: heads.map((id) => values.get(id)!.data as Uint16Array),
  };
}

/** Registers the RMS test and one tp-versus-tp=1 test per entry of `tps`, for input x. */
export function tpLayerChecks(layer: TpLayerUnderTest, x: Uint16Array, tps: number[]): void {
  const { tokens: T, heads: NH, headDim: HD } = layer;
  let ref: TpLayerRun;
  let out1: Uint16Array;
  beforeAll(async () => {
    ref = await runLayerTp(layer, 1, x);
    out1 = ref.partials[0];
  });

  it('has an output RMS in the realistic range (synthetic inits)', () => {
    const v = bf16ArrayToF32(out1);
    const rms = Math.sqrt(v.reduce((s, a) => s + a * a, 0) / v.length);
    expect(rms).toBeGreaterThan(0.1);
    expect(rms).toBeLessThan(1);
  });

  for (const tp of tps) {
    it(`tp=${tp}: per-head activations bit-exact; summed partials within the rounding bound`, async () => {
      const run = await runLayerTp(layer, tp, x);
      const w = (NH / tp) * HD;
      for (let t = 0; t < T; t++) {
        for (let r = 0; r < tp; r++) {
          expect(run.heads[r].subarray(t * w, (t + 1) * w)).toEqual(ref.heads[0].subarray(t * NH * HD + r * w, t * NH * HD + (r + 1) * w));
        }
      }
      const wOut = bf16ArrayToF32(layer.weights.tensor(layer.projectionWeight).data as Uint16Array);
      const y = bf16ArrayToF32(ref.heads[0]);
      const { summed, beyondBound, maxInPartialUlps } = rowParallelSum(run.partials, out1, y, wOut, layer.hidden, NH * HD);
      const report = compareBf16(summed, out1);
      console.log(
        `${layer.label} tp=${tp}: ${report.differing}/${report.count} differ from tp=1, max ${report.maxUlp} ulp, largest difference ${maxInPartialUlps} ulp of the largest partial`,
      );
      expect(beyondBound).toBe(0);
      expect(report.differing).toBeGreaterThan(0); // the partial roundings are visible
      expect(report.bitExactFraction).toBeGreaterThan(0.5);
    });
  }
}
