// Where two runs' outputs first differ, byte for byte.
import { bytesPerElement, type Graph, type RunResult, type TensorData } from '@hcsp/core';

/** null when every graph output has the same bytes, else where the first difference is. */
export function firstDifference(graph: Graph, got: RunResult, want: RunResult, names: [string, string]): string | null {
  for (const id of graph.outputs) {
    const a = got.values.get(id);
    const b = want.values.get(id);
    if (!a || !b) return `output '${id}' is missing from the ${a ? names[1] : names[0]} result`;
    const da = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
    const db = new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
    if (da.length !== db.length) return `output '${id}' has ${da.length} bytes on ${names[0]}, ${db.length} on ${names[1]}`;
    const step = bytesPerElement(a.dtype);
    let diff = 0;
    let first = -1;
    for (let i = 0; i < da.length; i += step) {
      let same = true;
      for (let j = 0; j < step; j++) if (da[i + j] !== db[i + j]) same = false;
      if (!same) {
        if (first < 0) first = i / step;
        diff++;
      }
    }
    if (diff > 0)
      return `output '${id}': ${diff} of ${da.length / step} elements differ, first at ${first} (${names[0]} ${elementText(a.data, first)}, ${names[1]} ${elementText(b.data, first)})`;
  }
  return null;
}

function elementText(d: TensorData, i: number): string {
  return d instanceof Uint16Array || d instanceof Uint8Array ? `0x${d[i].toString(16)}` : String(d[i]);
}
