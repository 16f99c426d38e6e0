// The GPU check's chained-kernel graphs (the HC, GDN and attention steps): a one-rank builder
// whose operands are synthetic bf16 weights (resident, so no feed crosses the bus), ended by
// reading back the last result's first column (so the run's read-back is one column).
import { GraphBuilder, SyntheticWeightSource, type Graph, type WeightSpec } from '@hcsp/core';

export interface ChainBuilder {
  b: GraphBuilder;
  /** a synthetic bf16 weight of normal values with standard deviation `std`; its value id */
  weight: (name: string, shape: number[], std: number) => string;
  /** reads back `last`'s first column as the graph's output; the graph and its weights drawn from `seed` */
  finish: (last: string, seed: number) => { graph: Graph; weights: SyntheticWeightSource };
}

/** A chain graph's builder, its graph labelled `check` at T tokens and `reps` launches. */
export function chainBuilder(check: string, T: number, reps: number): ChainBuilder {
  const b = new GraphBuilder(1, { check, tokens: T, reps });
  const specs: WeightSpec[] = [];
  const weight = (name: string, shape: number[], std: number) => {
    specs.push({ name, shape, dtype: 'bf16', init: { kind: 'normal', std } });
    return b.weight({ name }, shape);
  };
  const finish = (last: string, seed: number) => {
    const out = b.value('column', [T, 1], 'bf16', 0);
    b.node({ op: 'sliceCols', rank: 0, layer: 0, scope: 'read back', inputs: [last], outputs: [out], attrs: { start: 0, end: 1 } });
    b.markOutput(out);
    return { graph: b.build(), weights: new SyntheticWeightSource(specs, seed) };
  };
  return { b, weight, finish };
}
