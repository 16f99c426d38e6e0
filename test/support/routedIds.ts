// Router choices as xcheck's routing diff reads them: `layers.{i}.mlp.topk_ids` [T, topK] int32.
import type { AlignedTensor } from '@hcsp/core/xcheck';

/** rows of chosen experts as an aligned int32 tensor starting at row 0 */
export const topkIds = (rows: number[][]): AlignedTensor => ({
  tensor: { dtype: 'i32', shape: [rows.length, rows[0].length], data: Int32Array.from(rows.flat()) },
  rowStart: 0,
});

/** three tokens routed to experts (1,2), (3,4), (5,6) */
export const THREE_ROWS: number[][] = [
  [1, 2],
  [3, 4],
  [5, 6],
];

/** layer i's topk_ids from layers[i], in layer order */
export const topkLayers = (...layers: number[][][]): Map<string, AlignedTensor> =>
  new Map(layers.map((rows, i) => [`layers.${i}.mlp.topk_ids`, topkIds(rows)]));
