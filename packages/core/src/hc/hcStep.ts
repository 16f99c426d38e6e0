import { bf16ArrayToF32 } from '../numerics/bf16.ts';
import { linearBf16 } from '../layers/linearMath.ts';
import { shapeStr, type Tensor } from '../tensor/tensor.ts';
import { combineNorm } from './combineNorm.ts';
import type { HcContract } from './hcContract.ts';
import { gatedMean, scaledSilu } from './mix.ts';

// One HC step (combine-norm + mix) on whole tensors, with ATOM's tensor roles: what
// `hcsp hc` runs on tensors dumped from a PyTorch engine.
export interface HcStepInputs {
  h: Tensor;
  blockOut: Tensor | null;
  rawPrev: Tensor | null;
  normWeight: Tensor;
  wDown: Tensor;
  wInject: Tensor;
  wUp: Tensor;
}

export interface HcStepOutputs {
  hNew: Tensor;
  normed: Tensor;
  d: Tensor;
  gate: Tensor;
  up: Tensor;
  mixed: Tensor;
  raw: Tensor;
}

export interface HcStepOptions {
  contract: HcContract;
  eps?: number;
  streams?: number;
}

function expect(t: Tensor, name: string, shape: number[]): Uint16Array {
  if (t.dtype !== 'bf16') throw new Error(`${name}: dtype must be bf16, got ${t.dtype}`);
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new Error(`${name}: shape must be ${shapeStr(shape)}, got ${shapeStr(t.shape)}`);
  }
  return t.data as Uint16Array;
}

export function runHcStep(inputs: HcStepInputs, options: HcStepOptions): HcStepOutputs {
  const n = options.streams ?? 4;
  const eps = options.eps ?? 1e-6;
  const { h } = inputs;
  if (h.shape.length !== 2 || h.shape[1] % n !== 0 || h.shape[0] < 1) {
    throw new Error(`h: shape must be [T, ${n}*H] with T >= 1, got ${shapeStr(h.shape)}`);
  }
  const [rows, width] = h.shape;
  const hidden = width / n;
  if (inputs.wDown.shape.length !== 2) throw new Error(`input_mix_weight_down.weight: shape must be [r, ${width}], got ${shapeStr(inputs.wDown.shape)}`);
  const r = inputs.wDown.shape[0];
  const hBits = expect(h, 'h', [rows, width]);
  const wDown = expect(inputs.wDown, 'input_mix_weight_down.weight', [r, width]);
  const wInject = expect(inputs.wInject, 'block_inject_weight.weight', [n, width]);
  const wUp = expect(inputs.wUp, 'input_mix_weight_up.weight', [width, r]);
  const normW = expect(inputs.normWeight, 'hc_norm.weight', [width]);
  if ((inputs.blockOut === null) !== (inputs.rawPrev === null)) {
    throw new Error(
      `block_out and raw_prev come together (the pending combine): got ${inputs.blockOut ? 'block_out without raw_prev' : 'raw_prev without block_out'}`,
    );
  }
  const blockOut = inputs.blockOut ? expect(inputs.blockOut, 'block_out', [rows, hidden]) : null;
  const rawPrev = inputs.rawPrev ? expect(inputs.rawPrev, 'raw_prev', [rows, n]) : null;

  const cn = combineNorm(hBits, blockOut, rawPrev, normW, rows, hidden, n, eps, options.contract);
  // W_cat = [down; inject] as production concatenates them: one GEMM, r + n outputs.
  const wCat = new Uint16Array((r + n) * width);
  wCat.set(wDown, 0);
  wCat.set(wInject, r * width);
  const d = linearBf16(bf16ArrayToF32(cn.normed), bf16ArrayToF32(wCat), rows, width, r + n);
  const { gate, raw } = scaledSilu(d, rows, r, n);
  const up = linearBf16(bf16ArrayToF32(gate), bf16ArrayToF32(wUp), rows, r, width);
  const mixed = gatedMean(up, cn.normed, rows, hidden, n, options.contract);
  const t = (shape: number[], data: Uint16Array): Tensor => ({ dtype: 'bf16', shape, data });
  return {
    hNew: t([rows, width], cn.x),
    normed: t([rows, width], cn.normed),
    d: t([rows, r + n], d),
    gate: t([rows, r], gate),
    up: t([rows, width], up),
    mixed: t([rows, hidden], mixed),
    raw: t([rows, n], raw as Uint16Array),
  };
}
