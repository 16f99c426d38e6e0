import { pleKernels } from '../kernels/pleKernels.ts';
import type { F64Tensor, I32Tensor } from './exactInputs.ts';
import { numAttrs } from '../kernels/kernelArgs.ts';
import type { ExactKernelTable } from './exactTensor.ts';

// Float64 kernels of the PLE ops (graph/ops/pleOps.ts): the math of layers/ple/pleMath.ts in
// plain double arithmetic, with none of its roundings (no Math.fround, no bf16 rounding of
// the products, the score, the root, the gate, the normed values or the conv; rsqrtF32 /
// sqrtF32 / sigmoidF32 / siluF32 -> 1 / Math.sqrt, Math.sqrt, Math.exp and their double
// formulas). The algorithm stays: grouped RMS1p with the same eps, the signed square root of
// the score with its 1e-6 floor and sign(0) = 0, the dilated causal conv from tap 0 with
// zeros before the start. The n-gram ids are integer hashing and the embedding a gather: both
// are the reference's own (pleNgramIds runs the CPU kernel itself; pleNgramEmbed copies rows).

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

/** The gate's floor under |score| before the square root (HF `clamp_min(1e-6)`). */
const GATE_SQRT_FLOOR = 1e-6;

export const pleExact: ExactKernelTable = {
  perRank: {
    // integer hashing: exactly the reference's kernel (int64 arithmetic on BigInt)
    pleNgramIds: (inputs, attrs) => {
      const tokens = inputs[0] as I32Tensor;
      const [ids] = pleKernels.perRank!.pleNgramIds!([{ dtype: 'i32', shape: tokens.shape, data: tokens.data }], attrs);
      return [{ dtype: 'i32', shape: [...ids!.shape], data: Int32Array.from(ids!.data as Int32Array) }];
    },
    // E[t] = concat over heads of table[ids[t, h]]; a row-gathered table arrives as the rows
    // the ids name with the ids renumbered into them (GraphSession.hostInputs), as on the CPU
    pleNgramEmbed: (inputs) => {
      const op = 'pleNgramEmbed';
      const ids = inputs[0] as I32Tensor;
      const table = inputs[1] as F64Tensor;
      const [T, heads] = ids.shape;
      const [rows, hd] = table.shape;
      const e = new Float64Array(T * heads * hd);
      ids.data.forEach((id, i) => {
        if (!(id >= 0 && id < rows))
          throw new Error(`${op}: n-gram id ${id} (position ${Math.floor(i / heads)}, head ${i % heads}) is outside the table [0, ${rows})`);
        e.set(table.data.subarray(id * hd, (id + 1) * hd), i * hd);
      });
      return [{ dtype: 'bf16', shape: [T, heads * hd], data: e }];
    },
    // a rank's vocab slice: its rows, -0.0 for the ids other slices hold
    pleNgramEmbedShard: (inputs, attrs) => {
      const op = 'pleNgramEmbedShard';
      const ids = inputs[0] as I32Tensor;
      const table = inputs[1] as F64Tensor;
      const [T, heads] = ids.shape;
      const [rows, hd] = table.shape;
      const { rowStart, tableRows } = numAttrs(attrs);
      const e = new Float64Array(T * heads * hd).fill(-0);
      ids.data.forEach((id, i) => {
        if (!(id >= 0 && id < tableRows))
          throw new Error(`${op}: n-gram id ${id} (position ${Math.floor(i / heads)}, head ${i % heads}) is outside the table [0, ${tableRows})`);
        const local = id - rowStart;
        if (local >= 0 && local < rows) e.set(table.data.subarray(local * hd, (local + 1) * hd), i * hd);
      });
      return [{ dtype: 'bf16', shape: [T, heads * hd], data: e }];
    },
    // per row and group: y = x / sqrt(sum x^2 / groupSize + eps) * (1 + w)
    pleRms1pNorm: (inputs, attrs) => {
      const [x, w] = inputs as F64Tensor[];
      const [T, width] = x.shape;
      const { groups, eps } = numAttrs(attrs);
      const gs = width / groups;
      const y = new Float64Array(T * width);
      for (let base = 0; base < T * width; base += gs) {
        let ss = 0;
        for (let j = 0; j < gs; j++) ss += x.data[base + j] ** 2;
        const rstd = 1 / Math.sqrt(ss / gs + eps);
        for (let j = 0; j < gs; j++) y[base + j] = x.data[base + j] * rstd * (1 + w.data[(base + j) % width]);
      }
      return [{ dtype: 'bf16', shape: [T, width], data: y }];
    },
    // per row and stream: s = sum k q / sqrt(H), gate = sigmoid(sign(s) sqrt(max(|s|, 1e-6))), sign(0) = 0
    pleGate: (inputs, attrs) => {
      const [k, q] = inputs as F64Tensor[];
      const [T, width] = k.shape;
      const streams = attrs.streams as number;
      const H = width / streams;
      const sqrtH = Math.sqrt(H);
      const gate = new Float64Array(T * streams);
      for (let r = 0; r < T * streams; r++) {
        let acc = 0;
        for (let j = 0; j < H; j++) acc += k.data[r * H + j] * q.data[r * H + j];
        const score = acc / sqrtH;
        const root = Math.sqrt(Math.max(Math.abs(score), GATE_SQRT_FLOOR));
        gate[r] = sigmoid(score > 0 ? root : score < 0 ? -root : 0);
      }
      return [{ dtype: 'bf16', shape: [T, streams], data: gate }];
    },
    // G[t, s*H + j] = gate[t, s] * value[t, j]
    pleGatedValue: (inputs, attrs) => {
      const [gate, value] = inputs as F64Tensor[];
      const [T, H] = value.shape;
      const n = attrs.streams as number;
      const g = new Float64Array(T * n * H);
      for (let t = 0; t < T; t++) for (let s = 0; s < n; s++) for (let j = 0; j < H; j++) g[(t * n + s) * H + j] = gate.data[t * n + s] * value.data[t * H + j];
      return [{ dtype: 'bf16', shape: [T, n * H], data: g }];
    },
    // out = G + silu(conv), conv[t,c] = sum_i w[c,0,i] Gn[t - (K-1-i) dilation, c], zeros before the start
    pleConvSilu: (inputs, attrs) => {
      const [gn, g, w] = inputs as F64Tensor[];
      const [T, C] = g.shape;
      const K = w.shape[2];
      const dilation = numAttrs(attrs).dilation;
      const out = new Float64Array(T * C);
      for (let t = 0; t < T; t++) {
        for (let c = 0; c < C; c++) {
          let acc = 0;
          for (let i = 0; i < K; i++) {
            const src = t - (K - 1 - i) * dilation;
            if (src >= 0) acc += w.data[c * K + i] * gn.data[src * C + c];
          }
          out[t * C + c] = g.data[t * C + c] + silu(acc);
        }
      }
      return [{ dtype: 'bf16', shape: [T, C], data: out }];
    },
  },
};
