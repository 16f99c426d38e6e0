import { shapeStr, type Tensor } from '../tensor/tensor.ts';
import type { Graph, ValueId } from './graph.ts';

/**
 * Checks a graph's feeds on the host before any device work: every input is fed with its
 * declared dtype and shape, and token ids that an `embed` node reads are inside its table
 * (a GPU gather cannot raise an error, so the check must happen here).
 */
export function validateFeeds(graph: Graph, feeds: ReadonlyMap<ValueId, Tensor>): void {
  for (const id of graph.inputs) {
    const t = feeds.get(id);
    const decl = graph.values[id];
    if (!t) throw new Error(`graph input '${id}' was not fed`);
    if (t.dtype !== decl.dtype || shapeStr(t.shape) !== shapeStr(decl.shape)) {
      throw new Error(`input '${id}' is ${t.dtype}${shapeStr(t.shape)}, the graph expects ${decl.dtype}${shapeStr(decl.shape)}`);
    }
  }
  for (const node of graph.nodes) {
    if (node.op !== 'embed') continue;
    const [idsId, tableId] = node.inputs;
    const ids = feeds.get(idsId!);
    if (!ids) continue; // computed on the device: its producer is responsible
    const vocab = graph.values[tableId!].shape[0];
    (ids.data as Int32Array).forEach((v, t) => {
      if (!(v >= 0 && v < vocab)) throw new Error(`${node.scope}: token id ${v} at position ${t} is outside the vocabulary [0, ${vocab})`);
    });
  }
}
