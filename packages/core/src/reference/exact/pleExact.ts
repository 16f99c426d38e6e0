import { pleKernels } from '../kernels/pleKernels.ts';
import { dims2, floatInput, intInput } from './exactInputs.ts';
import type { ExactKernelTable } from './exactTensor.ts';

// Float64 kernels of the PLE ops (graph/ops/pleOps.ts): the math of layers/ple/pleMath.ts in
// plain double arithmetic, with none of its roundings (no Math.fround, no bf16 rounding of
// the products, the score, the root, the gate, the normed values or the conv; rsqrtF32 /
// sqrtF32 / sigmoidF32 / siluF32 -> 1 / Math.sqrt, Math.sqrt, Math.exp and their double
// formulas). The algorithm stays: grouped RMS1p with the same eps, the signed square root of
// the score with its 1e-6 floor and sign(0) = 0, the dilated causal conv from tap 0 with
// zeros before the start. The n-gram ids are integer hashing and the embedding a gather: both
// are the reference's own (pleNgramIds runs the CPU kernel itself; pleNgramEmbed copies rows).

function divide(width: number, parts: unknown, what: string): number {
  if (typeof parts !== 'number' || !Number.isInteger(parts) || parts < 1 || width % parts !== 0)
    throw new Error(`${what}: width ${width} is not divisible into ${String(parts)} groups`);
  return width / parts;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sigmoid(x);

/** The gate's floor under |score| before the square root (HF `clamp_min(1e-6)`). */
const GATE_SQRT_FLOOR = 1e-6;

export const pleExact: ExactKernelTable = {
  perRank: {
    // integer hashing: exactly the reference's kernel (int64 arithmetic on BigInt)
    pleNgramIds: (inputs, attrs) => {
      const tokens = intInput(inputs, 0, 'tokens', 'pleNgramIds');
      const [ids] = pleKernels.perRank!.pleNgramIds!([{ dtype: 'i32', shape: tokens.shape, data: tokens.data }], attrs);
      return [{ dtype: 'i32', shape: [...ids!.shape], data: Int32Array.from(ids!.data as Int32Array) }];
    },
    // E[t] = concat over heads of table[ids[t, h]]; a row-gathered table arrives as the rows
    // the ids name with the ids renumbered into them (GraphSession.hostInputs), as on the CPU
    pleNgramEmbed: (inputs) => {
      const op = 'pleNgramEmbed';
      const ids = intInput(inputs, 0, 'ids', op);
      const table = floatInput(inputs, 1, 'table', op);
      const [T, heads] = dims2(ids, 'pleNgramEmbed ids');
      const [rows, hd] = dims2(table, 'pleNgramEmbed table');
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
      const ids = intInput(inputs, 0, 'ids', op);
      const table = floatInput(inputs, 1, 'table', op);
      const [T, heads] = dims2(ids, 'pleNgramEmbedShard ids');
      const [rows, hd] = dims2(table, 'pleNgramEmbedShard table');
      const rowStart = attrs.rowStart as number;
      const tableRows = attrs.tableRows as number;
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
      const op = 'pleRms1pNorm';
      const x = floatInput(inputs, 0, 'x', op);
      const w = floatInput(inputs, 1, 'weight', op);
      const [T, width] = dims2(x, 'pleRms1pNorm x');
      const gs = divide(width, attrs.groups, op);
      const eps = attrs.eps;
      if (typeof eps !== 'number' || !Number.isFinite(eps)) throw new Error(`${op}: attribute 'eps' must be a finite number`);
      if (w.data.length !== width) throw new Error(`${op}: weight has ${w.data.length} values, expected ${width}`);
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
      const op = 'pleGate';
      const k = floatInput(inputs, 0, 'k', op);
      const q = floatInput(inputs, 1, 'q', op);
      const [T, width] = dims2(k, 'pleGate k');
      if (q.data.length !== T * width) throw new Error(`${op}: q [${q.shape.join(',')}] does not match k [${T},${width}]`);
      const streams = attrs.streams as number;
      const H = divide(width, streams, op);
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
      const op = 'pleGatedValue';
      const gate = floatInput(inputs, 0, 'gate', op);
      const value = floatInput(inputs, 1, 'value', op);
      const [T, H] = dims2(value, 'pleGatedValue value');
      const n = attrs.streams as number;
      if (gate.data.length !== T * n) throw new Error(`${op}: gate [${gate.shape.join(',')}] is not [${T},${n}]`);
      const g = new Float64Array(T * n * H);
      for (let t = 0; t < T; t++) for (let s = 0; s < n; s++) for (let j = 0; j < H; j++) g[(t * n + s) * H + j] = gate.data[t * n + s] * value.data[t * H + j];
      return [{ dtype: 'bf16', shape: [T, n * H], data: g }];
    },
    // out = G + silu(conv), conv[t,c] = sum_i w[c,0,i] Gn[t - (K-1-i) dilation, c], zeros before the start
    pleConvSilu: (inputs, attrs) => {
      const op = 'pleConvSilu';
      const gn = floatInput(inputs, 0, 'gNormed', op);
      const g = floatInput(inputs, 1, 'g', op);
      const w = floatInput(inputs, 2, 'weight', op);
      const [T, C] = dims2(g, 'pleConvSilu g');
      if (w.shape.length !== 3 || w.shape[0] !== C || w.shape[1] !== 1) throw new Error(`${op}: weight [${w.shape.join(',')}] is not [${C}, 1, K]`);
      if (gn.data.length !== T * C) throw new Error(`${op}: gNormed [${gn.shape.join(',')}] does not match g [${T},${C}]`);
      const K = w.shape[2];
      const dilation = attrs.dilation;
      if (typeof dilation !== 'number' || !Number.isInteger(dilation) || dilation < 1)
        throw new Error(`${op}: dilation ${String(dilation)} must be a positive integer`);
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
