// Elementwise bf16 ops (add and the HC pointwise ops): one invocation per output word,
// each element computed in fp32 with the rounding points of the CPU reference
// (core/hc/mix.ts, core/hc/combineNorm.ts), the transcendental functions from fp32Math.wgsl.
import type { KernelDispatch, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { numelOf, readInput, requireIntAttr, requireShape, requireTensor, requireTyped } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';
import { copyDispatch } from './copyElements.ts';

type Contract = 'atom' | 'hf';

export function contractOf(attrs: Record<string, unknown>, op: string): Contract {
  const c = attrs.contract;
  if (c !== 'atom' && c !== 'hf') throw new Error(`${op}: contract must be 'atom' or 'hf', got '${String(c)}'`);
  return c;
}

/** A wordKernel over bf16 input ports, each read as `<name>_f32(i)`. */
function elementwise(key: string, inputs: { name: string; port: number }[], n: number, params: number[], body: string, helpers = ''): KernelDispatch {
  return wordKernel(
    key,
    inputs.map((b) => ({ name: b.name, from: readInput(b.port), dtype: 'bf16' as const })),
    n,
    params,
    body,
    helpers,
  );
}

export const addPlanner: KernelPlanner = (inputs, outputs) => {
  const a = requireTyped(inputs[0], 'add: input a', 'bf16');
  const b = requireTyped(inputs[1], 'add: input b', 'bf16');
  const y = requireTyped(outputs[0], 'add: output y', 'bf16');
  requireShape(b, a.shape, 'add: b');
  requireShape(y, a.shape, 'add: y');
  const n = numelOf(a.shape);
  if (n === 0) return { scratch: [], dispatches: [] };
  return {
    scratch: [],
    dispatches: [
      elementwise(
        'add',
        [
          { name: 'a', port: 0 },
          { name: 'b', port: 1 },
        ],
        n,
        [],
        'return a_f32(i) + b_f32(i);',
      ),
    ],
  };
};

function streamsOf(x: TensorInfo, attrs: Record<string, unknown>, op: string): { rows: number; n: number; h: number } {
  const n = requireIntAttr(attrs, 'streams', op, 1);
  if (x.shape.length !== 2 || x.shape[1] % n !== 0) throw new Error(`${op}: x must be [rows, ${n}*H], got [${x.shape.join(',')}]`);
  return { rows: x.shape[0], n, h: x.shape[1] / n };
}

/** WGSL: inj_s = 2 sigmoid(bf(raw_s / n)) ('hf': 2 bf(sigmoid), the doubling exact), nf = f32(n). */
export function injectScaleWgsl(contract: Contract): string {
  const sig = 'sigmoid_f32(rbf(rawv / nf))';
  return `fn inject_scale(rawv: f32, nf: f32) -> f32 { return 2.0 * ${contract === 'atom' ? sig : `rbf(${sig})`}; }`;
}

/** hcCombine: X_s = bf(X_s + y * inj_s) ('hf' rounds the product). p0 = n, p1 = h. */
export const hcCombinePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'hcCombine: input x');
  const y = requireTensor(inputs[1], 'hcCombine: input blockOut');
  const raw = requireTensor(inputs[2], 'hcCombine: input raw');
  const out = requireTensor(outputs[0], 'hcCombine: output x');
  const contract = contractOf(attrs, 'hcCombine');
  const { rows, n, h } = streamsOf(x, attrs, 'hcCombine');
  requireShape(y, [rows, h], 'hcCombine: blockOut');
  requireShape(raw, [rows, n], 'hcCombine: raw');
  requireShape(out, x.shape, 'hcCombine: output x');
  if (rows * n * h === 0) return { scratch: [], dispatches: [] };
  const prod = contract === 'atom' ? 'yv * inj' : 'rbf(yv * inj)';
  const body = `let w = u.p0 * u.p1;
  let t = i / w;
  let s = (i % w) / u.p1;
  let inj = inject_scale(raw_f32(t * u.p0 + s), f32(u.p0));
  let yv = blk_f32(t * u.p1 + i % u.p1);
  return x_f32(i) + ${prod};`;
  return {
    scratch: [],
    dispatches: [
      elementwise(
        `hcCombine-${contract}`,
        [
          { name: 'x', port: 0 },
          { name: 'blk', port: 1 },
          { name: 'raw', port: 2 },
        ],
        rows * n * h,
        [n, h],
        body,
        injectScaleWgsl(contract),
      ),
    ],
  };
};

/** hcScaledSilu: gate = bf(silu(bf(d[:, :r] / n))) and raw = d[:, r:r+n] (bits copied). */
export const hcScaledSiluPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const d = requireTensor(inputs[0], 'hcScaledSilu: input d');
  const gate = requireTensor(outputs[0], 'hcScaledSilu: output gate');
  const n = requireIntAttr(attrs, 'streams', 'hcScaledSilu', 1);
  const r = requireIntAttr(attrs, 'lowRank', 'hcScaledSilu', 1);
  if (d.shape.length !== 2 || (d.shape[1] !== r + n && d.shape[1] !== r)) {
    throw new Error(`hcScaledSilu: d must be [rows, ${r + n}] or [rows, ${r}], got [${d.shape.join(',')}]`);
  }
  const [rows, width] = d.shape;
  requireShape(gate, [rows, r], 'hcScaledSilu: gate');
  const raw = outputs[1] ?? null;
  if (raw && width !== r + n) throw new Error(`hcScaledSilu: raw is requested but d has only the ${r} gate columns`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const body = `let t = i / u.p0;
  return silu_f32(rbf(d_f32(t * u.p1 + i % u.p0) / f32(u.p2)));`;
  const dispatches = [elementwise('hcScaledSilu', [{ name: 'd', port: 0 }], rows * r, [r, width, n], body)];
  if (raw) {
    requireShape(raw, [rows, n], 'hcScaledSilu: raw');
    dispatches.push(copyDispatch('bf16', rows * n, { width: n, srcStride: width, srcStart: r, colPeriod: n, srcLimit: rows * width }, 0, 1));
  }
  return { scratch: [], dispatches };
};

/** hcGatedMean: x = bf(acc / n), acc in fp32 over s in order ('hf': each term bf(bf(sigmoid) * normed)). */
export const hcGatedMeanPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const up = requireTensor(inputs[0], 'hcGatedMean: input up');
  const normed = requireTensor(inputs[1], 'hcGatedMean: input normed');
  const x = requireTensor(outputs[0], 'hcGatedMean: output x');
  const contract = contractOf(attrs, 'hcGatedMean');
  const { rows, n, h } = streamsOf(normed, attrs, 'hcGatedMean');
  requireShape(up, normed.shape, 'hcGatedMean: up');
  requireShape(x, [rows, h], 'hcGatedMean: x');
  if (rows * h === 0) return { scratch: [], dispatches: [] };
  const step = contract === 'atom' ? 'acc = acc + sigmoid_f32(up_f32(k)) * normed_f32(k);' : 'acc = acc + rbf(rbf(sigmoid_f32(up_f32(k))) * normed_f32(k));';
  const body = `let t = i / u.p1;
  let base = t * u.p0 * u.p1 + i % u.p1;
  var acc: f32 = 0.0;
  for (var s = 0u; s < u.p0; s = s + 1u) {
    let k = base + s * u.p1;
    ${step}
  }
  return acc / f32(u.p0);`;
  return {
    scratch: [],
    dispatches: [
      elementwise(
        `hcGatedMean-${contract}`,
        [
          { name: 'up', port: 0 },
          { name: 'normed', port: 1 },
        ],
        rows * h,
        [n, h],
        body,
      ),
    ],
  };
};
