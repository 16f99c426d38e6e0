import { f32ToBf16 } from '../numerics/bf16.ts';

const fr = Math.fround;

/**
 * "Linear" of model.md: y[t,o] = bf(sum_k x[t,k] * w[o,k]), w in PyTorch layout [out,in].
 * Accumulation is fp32 in k order 0..K-1, one add at a time, then one RNE rounding. x and w
 * hold bf16 values (decoded), so each product is exact in fp32 and a fused multiply-add
 * gives the same bits as a separate multiply and add: only the order of the sum matters.
 * Four outputs are computed per pass over x's row to reuse its loads; each keeps its own
 * sequential accumulator, so the order per output is unchanged.
 */
export function linearBf16(x: Float32Array, w: Float32Array, rows: number, inF: number, outF: number): Uint16Array {
  if (x.length !== rows * inF) throw new Error(`linear: x has ${x.length} values, expected ${rows}x${inF}`);
  if (w.length !== outF * inF) throw new Error(`linear: w has ${w.length} values, expected ${outF}x${inF}`);
  const y = new Uint16Array(rows * outF);
  for (let t = 0; t < rows; t++) {
    const xo = t * inF;
    let o = 0;
    for (; o + 4 <= outF; o += 4) {
      const w0 = o * inF;
      const w1 = w0 + inF;
      const w2 = w1 + inF;
      const w3 = w2 + inF;
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      for (let k = 0; k < inF; k++) {
        const xv = x[xo + k];
        a0 = fr(a0 + xv * w[w0 + k]);
        a1 = fr(a1 + xv * w[w1 + k]);
        a2 = fr(a2 + xv * w[w2 + k]);
        a3 = fr(a3 + xv * w[w3 + k]);
      }
      const yo = t * outF + o;
      y[yo] = f32ToBf16(a0);
      y[yo + 1] = f32ToBf16(a1);
      y[yo + 2] = f32ToBf16(a2);
      y[yo + 3] = f32ToBf16(a3);
    }
    for (; o < outF; o++) {
      const wo = o * inF;
      let a = 0;
      for (let k = 0; k < inF; k++) a = fr(a + x[xo + k] * w[wo + k]);
      y[t * outF + o] = f32ToBf16(a);
    }
  }
  return y;
}
