import { bf16ToF32 } from '../../numerics/bf16.ts';

// The LM head (model.md "LM head and MTP"): logits = Linear(h, lm_head.weight) with the
// untied lm_head.weight [vocab, H] (linearMath.ts linearBf16), shared by the MTP head.
// Greedy tokens follow torch.argmax: the first index of the maximum, and a NaN counts as
// the maximum (the first NaN wins). ATOM's TP-sharded compute_argmax_token keeps that rule:
// each rank's local argmax, then the lowest rank among equal maxima.

/** Per row of bf16 logits [rows, vocab], the torch.argmax index. */
export function argmaxFirst(logits: Uint16Array, rows: number, vocab: number): Int32Array {
  if (!Number.isSafeInteger(vocab) || vocab < 1) throw new Error(`argmaxFirst: vocab ${vocab} must be an integer >= 1`);
  if (logits.length !== rows * vocab) throw new Error(`argmaxFirst: logits have ${logits.length} values, expected ${rows}x${vocab}`);
  const out = new Int32Array(rows);
  for (let t = 0; t < rows; t++) {
    const base = t * vocab;
    let best = 0;
    let bestValue = bf16ToF32(logits[base]);
    for (let v = 1; v < vocab && bestValue === bestValue; v++) {
      const x = bf16ToF32(logits[base + v]);
      if (x > bestValue || x !== x) {
        best = v;
        bestValue = x;
      }
    }
    out[t] = best;
  }
  return out;
}
