// What `hcsp prefill` writes to --dump and reports about the QSA indexer: the decoder
// graph's golden-dump values under the names of the README's "Golden dumps" section, and
// the kept/dropped counts read from the selections the run made.
import { int64FileTensor, type ModelConfig, type PreparedPrefill, type RawFileTensor, type Tensor, type ValueId } from '@hcsp/core';

/** The dump: input_ids (int64), every named value, int32 n-gram ids widened to int64 as the reference stores ids. */
export function dumpTensors(prepared: PreparedPrefill, values: ReadonlyMap<ValueId, Tensor>): Map<string, Tensor | RawFileTensor> {
  const out = new Map<string, Tensor | RawFileTensor>([['input_ids', int64FileTensor([prepared.tokenIds.length], prepared.tokenIds)]]);
  for (const [name, id] of Object.entries(prepared.outputs.dumpValues)) {
    const t = values.get(id);
    if (!t) throw new Error(`dump: value '${id}' (${name}) was not read back`);
    out.set(name, name.endsWith('.ngram_ids') ? int64FileTensor(t.shape, t.data as Int32Array) : t);
  }
  return out;
}

export interface QsaDropStats {
  /** QSA layers in the graph */
  layers: number;
  /** rows whose selection dropped tokens, in the layer that dropped most */
  rowsDropping: number;
  /** (query, key) pairs causal attention would see that the selection dropped, in that layer */
  droppedPairs: number;
  /** kept pairs / causal pairs over all QSA layers */
  keptFraction: number;
}

/** Kept keys per row: compressRatio per listed block (entries >= 0) plus the row's partial tail block. */
export function qsaDropStats(config: ModelConfig, selections: { layer: number; blocks: Tensor }[]): QsaDropStats {
  const ratio = config.attention.indexer.compressRatio;
  let rowsDropping = 0;
  let droppedPairs = 0;
  let kept = 0;
  let causal = 0;
  for (const { blocks } of selections) {
    const [rows, width] = blocks.shape;
    const b = blocks.data as Int32Array;
    let layerRows = 0;
    let layerPairs = 0;
    for (let t = 0; t < rows; t++) {
      let listed = 0;
      for (let i = 0; i < width; i++) if (b[t * width + i] >= 0) listed++;
      const k = listed * ratio + (t + 1 - Math.floor((t + 1) / ratio) * ratio);
      if (k < t + 1) layerRows++;
      layerPairs += t + 1 - k;
      kept += k;
      causal += t + 1;
    }
    if (layerPairs > droppedPairs) [rowsDropping, droppedPairs] = [layerRows, layerPairs];
  }
  return { layers: selections.length, rowsDropping, droppedPairs, keptFraction: causal === 0 ? 1 : kept / causal };
}
