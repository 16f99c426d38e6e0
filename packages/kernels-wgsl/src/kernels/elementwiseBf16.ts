// Elementwise bf16 ops (add and the HC pointwise ops): one invocation per output word,
// each element computed in fp32 with the rounding points of the CPU reference
// (core/hc/mix.ts, core/hc/combineNorm.ts), the transcendental functions from fp32Math.wgsl.
import type { KernelDispatch, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { numelOf, readInput } from './planParts.ts';
import { wordKernel } from './wordKernel.ts';
import { copyDispatch } from './copyElements.ts';

export type Contract = 'atom' | 'hf';

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

export const addPlanner: KernelPlanner = (inputs) => {
  const n = numelOf(inputs[0]!.shape);
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

/** rows, streams n and stream width H of x [rows, n*H] (its declaration checked that n divides the width). */
function streamsOf(x: TensorInfo, attrs: Record<string, unknown>): { rows: number; n: number; h: number } {
  const n = attrs.streams as number;
  return { rows: x.shape[0], n, h: x.shape[1] / n };
}

/** WGSL: inj_s = 2 sigmoid(bf(raw_s / n)) ('hf': 2 bf(sigmoid), the doubling exact), nf = f32(n). */
export function injectScaleWgsl(contract: Contract): string {
  const sig = 'sigmoid_f32(rbf(rawv / nf))';
  return `fn inject_scale(rawv: f32, nf: f32) -> f32 { return 2.0 * ${contract === 'atom' ? sig : `rbf(${sig})`}; }`;
}

/** hcCombine: X_s = bf(X_s + y * inj_s) ('hf' rounds the product). p0 = n, p1 = h. */
export const hcCombinePlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const contract = attrs.contract as Contract;
  const { rows, n, h } = streamsOf(inputs[0]!, attrs);
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
  const n = attrs.streams as number;
  const r = attrs.lowRank as number;
  const [rows, width] = inputs[0]!.shape;
  const raw = outputs[1] ?? null;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const body = `let t = i / u.p0;
  return silu_f32(rbf(d_f32(t * u.p1 + i % u.p0) / f32(u.p2)));`;
  const dispatches = [elementwise('hcScaledSilu', [{ name: 'd', port: 0 }], rows * r, [r, width, n], body)];
  if (raw) {
    dispatches.push(copyDispatch('bf16', rows * n, { width: n, srcStride: width, srcStart: r, colPeriod: n, srcLimit: rows * width }, 0, 1));
  }
  return { scratch: [], dispatches };
};

/** hcGatedMean: x = bf(acc / n), acc in fp32 over s in order ('hf': each term bf(bf(sigmoid) * normed)). */
export const hcGatedMeanPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const contract = attrs.contract as Contract;
  const { rows, n, h } = streamsOf(inputs[1]!, attrs);
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
