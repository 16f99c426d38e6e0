import { resolveWeightRows, shapeStr, type Graph, type Tensor, type ValueId, type WeightSource } from '@hcsp/core';

/**
 * The host-side tensor of a graph input (from `feeds`) or weight (only the rank's slice is
 * read from the source, so a rank's GPU buffer holds only its shard), checked against the
 * graph's declaration.
 */
export async function hostTensor(
  graph: Graph,
  feeds: ReadonlyMap<ValueId, Tensor>,
  weights: WeightSource,
  id: ValueId,
  rows?: [number, number][],
): Promise<Tensor> {
  const decl = graph.values[id];
  if (!decl) throw new Error(`webgpu: unknown graph value '${id}'`);
  let t: Tensor;
  if (decl.kind === 'input') {
    const fed = feeds.get(id);
    if (!fed) throw new Error(`webgpu: graph input '${id}' was not fed`);
    t = fed;
  } else if (decl.kind === 'weight') {
    if (!decl.weight) throw new Error(`webgpu: weight value '${id}' has no checkpoint reference`);
    t = await resolveWeightRows(weights, decl.weight, rows);
    // only the requested rows of a row-gathered weight
    if (rows) return t;
  } else {
    throw new Error(`webgpu: value '${id}' is an intermediate, not a host input or weight`);
  }
  if (t.dtype !== decl.dtype || shapeStr(t.shape) !== shapeStr(decl.shape)) {
    throw new Error(`webgpu: value '${id}' is declared ${decl.dtype}${shapeStr(decl.shape)} but the host tensor is ${t.dtype}${shapeStr(t.shape)}`);
  }
  return t;
}
