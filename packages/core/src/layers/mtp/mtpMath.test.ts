import { describe, expect, it } from 'vitest';
import { bf16ArrayToF32, f32ArrayToBf16 } from '../../numerics/bf16.ts';
import { mtpDraftInputs, mtpLayerInput } from './mtpMath.ts';

describe('MTP head input stage', () => {
  it('draft rows take the next token id and the next position; the last row the sampled token', () => {
    expect(mtpDraftInputs([5, 6, 7], 9)).toEqual({ ids: [6, 7, 9], positions: [1, 2, 3] });
    expect(mtpDraftInputs([5, 6, 7], 9, 10)).toEqual({ ids: [6, 7, 9], positions: [11, 12, 13] });
    expect(() => mtpDraftInputs([], 9)).toThrow(/no target tokens/);
  });

  it('hand-computed (H = 2, n = 2): one norm over all n*H state values, fc_hidden shared by the streams', () => {
    const eps = 1e-6;
    // embedding [1, 1]: rstd = 1/sqrt(1 + eps), normed 0.9999995 -> bf16 1; (1 + w) = [0.5, 1]
    const embedded = f32ArrayToBf16([1, 1]);
    // state [2, 2 | -4, 4]: ONE group, sumsq 40 / 4 = 10, rstd 1/sqrt(10):
    //   2/sqrt(10) = 0.6324555 -> 0.6328125 (161.9 steps of 2^-8), 4/sqrt(10) -> 1.265625
    // (per-stream groups would give [1, 1 | -1, 1] instead)
    const state = f32ArrayToBf16([2, 2, -4, 4]);
    const w = {
      normEmbedding: f32ArrayToBf16([-0.5, 0]),
      normHidden: f32ArrayToBf16([0, 0, 0, 0]),
      fcEmbedding: f32ArrayToBf16([1, 0, 0, 1]), // identity: ee = [0.5, 1]
      fcHidden: f32ArrayToBf16([0, 1, 1, 0]), // swaps the two columns of each stream
    };
    const x0 = mtpLayerInput(embedded, state, w, 1, 2, 2, eps);
    // stream 0: swap([0.6328125, 0.6328125]) + [0.5, 1]; stream 1: swap([-1.265625, 1.265625]) + [0.5, 1]
    expect(Array.from(bf16ArrayToF32(x0))).toEqual([1.1328125, 1.6328125, 1.765625, -0.265625]);
  });

  it('rejects mismatched shapes', () => {
    const w = { normEmbedding: new Uint16Array(2), normHidden: new Uint16Array(4), fcEmbedding: new Uint16Array(4), fcHidden: new Uint16Array(4) };
    expect(() => mtpLayerInput(new Uint16Array(3), new Uint16Array(4), w, 1, 2, 2, 1e-6)).toThrow(/embedded has 3 values/);
    expect(() => mtpLayerInput(new Uint16Array(2), new Uint16Array(3), w, 1, 2, 2, 1e-6)).toThrow(/state has 3 values/);
    expect(() => mtpLayerInput(new Uint16Array(2), new Uint16Array(4), { ...w, fcHidden: new Uint16Array(3) }, 1, 2, 2, 1e-6)).toThrow(/2x2/);
  });
});
