import { cpuKernel, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from './nativeAddon.ts';

// Host kernels against core's CPU reference on inputs the cross-backend op cases cannot carry:
// inputs and attributes the ops' declarations refuse before any kernel runs (the reference's
// kernel lookup applies the declaration, so it refuses them naming the op; a host kernel called
// directly must not read or write out of bounds, and refuses them with its own message), and NaN
// bit patterns in an f32 output that GPU backends need not reproduce.

const bf16 = (vals: number[]): Uint16Array => {
  const f = new Float32Array(vals);
  return Uint16Array.from(new Uint32Array(f.buffer), (u) => u >>> 16);
};
const tensor = (dtype: Tensor['dtype'], shape: number[], data: Tensor['data']): Tensor => ({ dtype, shape, data });
const ramp = (n: number, scale = 0.01): Uint16Array => bf16(Array.from({ length: n }, (_, i) => ((i * 37) % 101) * scale - 0.5));

function bytes(v: ArrayBufferView | ArrayBuffer): number[] {
  return Array.from(v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
}

/** the reference's outputs (or error message) and the host kernel's */
async function both(op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>) {
  let ref: (Tensor | null)[] | null = null;
  let refError: string | null = null;
  try {
    ref = cpuKernel(op)(inputs, attrs);
  } catch (e) {
    refError = (e as Error).message;
  }
  const addon = loadNativeAddon();
  const handles = inputs.map((t) => (t ? addon.upload(t.dtype, t.shape, t.data) : null));
  let host: { shape: number[]; bytes: number[] }[] | null = null;
  let hostError: string | null = null;
  try {
    const out = await addon.run(op, handles, attrs, 'exact');
    host = out.map((t) => {
      const r = { shape: [...t!.shape], bytes: bytes(addon.download(t!)) };
      addon.free(t!);
      return r;
    });
  } catch (e) {
    hostError = (e as Error).message;
  } finally {
    for (const h of handles) if (h) addon.free(h);
  }
  return { ref: ref?.map((t) => ({ shape: [...t!.shape], bytes: bytes(t!.data) })) ?? null, refError, host, hostError };
}

async function expectSame(op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>): Promise<void> {
  const r = await both(op, inputs, attrs);
  expect(r.hostError).toBe(r.refError);
  expect(r.host).toEqual(r.ref);
}

/** The reference refuses the inputs by the op's declaration; the host kernel refuses them with `hostError`. */
async function expectRefused(op: string, inputs: (Tensor | null)[], attrs: Record<string, unknown>, hostError: string): Promise<void> {
  const r = await both(op, inputs, attrs);
  expect(r.refError, op).toMatch(new RegExp(`^op ${op}: `));
  expect(r.hostError, op).toBe(hostError);
}

describe('host kernels on edge inputs', () => {
  it('qsaSelect with width 0 selects nothing (it wrote past its rows before); the declaration refuses width 0', async () => {
    const q = tensor('bf16', [16, 8], ramp(128));
    const kb = tensor('bf16', [4, 8], ramp(32, 0.02));
    const r = await both('qsaSelect', [q, kb], { r0: 0, tokens: 16, nHeads: 1, headDim: 8, compressRatio: 4, width: 0 });
    expect(r.refError).toBe(`op qsaSelect: attribute 'width' must be an integer >= 1, got 0`);
    expect(r.hostError).toBeNull();
    expect(r.host).toEqual([{ shape: [16, 0], bytes: [] }]);
  });

  it('attnHeadNormRopeBf16 refuses a negative head offset instead of reading before the row', async () => {
    const addon = loadNativeAddon();
    const ins = [tensor('bf16', [2, 8], ramp(16)), tensor('bf16', [8], ramp(8)), tensor('bf16', [2, 2], ramp(4)), tensor('bf16', [2, 2], ramp(4))];
    const handles = ins.map((t) => addon.upload(t.dtype, t.shape, t.data));
    try {
      await expect(
        addon.run('attnHeadNormRopeBf16', handles, { heads: 1, headDim: 8, stride: 8, offset: -100000000, ropeDims: 4, eps: 1e-6 }, 'exact'),
      ).rejects.toThrow('attnHeadNormRopeBf16: attention: head at offset -100000000 with dim 8 overruns stride 8');
    } finally {
      for (const h of handles) addon.free(h);
    }
  });

  it('negative attribute products are refused with a [T,cols] message (they matched any width before)', async () => {
    const g = tensor('f32', [2, 3], new Float32Array(6));
    const gdn = { keyDim: 4, valueDim: 4, scale: 1, l2Eps: 1e-6 };
    await expectRefused(
      'gdnRecurrence',
      [tensor('bf16', [2, 8], ramp(16)), g, tensor('bf16', [2, 4], ramp(8))],
      { keyHeads: -1, valueHeads: -2, ...gdn },
      "gdnRecurrence: input 'qkv' is [2,8], expected [T,-16]",
    );
    await expectRefused(
      'gdnRecurrence',
      [tensor('bf16', [2, 4], ramp(8)), g, tensor('bf16', [2, 3], ramp(6))],
      { keyHeads: 1, valueHeads: -1, ...gdn },
      "gdnRecurrence: input 'g' is [2,3], expected [T,-1]",
    );
    await expectRefused(
      'qsaSelect',
      [tensor('bf16', [4, 8], ramp(32)), tensor('bf16', [2, 5], ramp(10))],
      { r0: 0, tokens: 8, nHeads: -1, headDim: -8, compressRatio: 4, width: 1 },
      "qsaSelect: input 'kb' is [2,5], expected [T,-8]",
    );
  });

  it('sliceCols and embed name a non-2-D input', async () => {
    await expectRefused('sliceCols', [tensor('bf16', [8], ramp(8))], { start: 0, end: 2 }, 'sliceCols x: expected a 2-D tensor, got [8]');
    await expectRefused('embed', [tensor('i32', [2], Int32Array.of(0, 1)), tensor('bf16', [8], ramp(8))], {}, 'embed table: expected a 2-D tensor, got [8]');
  });

  it("each op's port table and length checks refuse a missing port, a wrong dtype or a wrong length naming it", async () => {
    const bf = (shape: number[]) => tensor('bf16', shape, ramp(shape.reduce((a, b) => a * b, 1)));
    const f32 = (shape: number[]) => tensor('f32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)));
    const i32 = (shape: number[]) => tensor('i32', shape, new Int32Array(shape.reduce((a, b) => a * b, 1)));
    const cases: [string, (Tensor | null)[], Record<string, unknown>, string][] = [
      ['gdnGates', [bf([2, 2]), null, bf([2]), bf([2])], {}, "gdnGates: input 'a' is missing"],
      ['gdnGates', [bf([2, 2]), bf([2, 2]), bf([2]), f32([2])], {}, "gdnGates: input 'dtBias' is f32, expected bf16"],
      ['gdnGates', [bf([2, 2]), bf([2, 2]), bf([2]), bf([3])], {}, 'gdnGates: gdn: dt_bias has 3 values, expected 2'],
      ['gdnGatedNorm', [bf([2, 4]), bf([2, 4]), bf([3])], { heads: 1, headDim: 4, eps: 1e-6 }, 'gdnGatedNorm: gdn: norm weight has 3 values, expected 4'],
      ['moeCombine', [f32([2, 4]), bf([2, 4]), bf([3])], {}, 'moeCombine: moe: shared expert gate logit has 3 values, expected 2'],
      [
        'moeExperts',
        [bf([2, 4]), i32([2, 1]), bf([2, 1]), bf([16]), bf([7])],
        { firstExpert: 0, numLocal: 1, intermediate: 2 },
        'moeExperts: moe: stacked down has 7 values, expected 8',
      ],
      ['hcCombine', [bf([2, 4]), bf([2, 2]), bf([3])], { streams: 2, contract: 'atom' }, 'hcCombine: raw has 3 values, expected 2x2'],
      ['attnOutputGate', [bf([2, 4]), null], { heads: 1, headDim: 4 }, "attnOutputGate: input 'qg' is missing"],
      ['linear', [bf([2, 4]), bf([4])], {}, 'linear w: expected a 2-D tensor, got [4]'],
      ['mtpDraftIds', [i32([2]), bf([1])], {}, "mtpDraftIds: input 'next' is bf16, expected i32"],
      ['pleGate', [bf([4]), bf([4])], { streams: 1 }, 'pleGate k: expected a 2-D tensor, got [4]'],
    ];
    for (const [op, inputs, attrs, hostError] of cases) await expectRefused(op, inputs, attrs, hostError);
    // the host kernel, which would read 2-byte ids as 4-byte ones, refuses them
    await expectRefused(
      'moeExperts',
      [bf([2, 4]), bf([2, 1]), bf([2, 1]), bf([16]), bf([8])],
      { firstExpert: 0, numLocal: 1, intermediate: 2 },
      "moeExperts: input 'ids' is bf16, expected i32",
    );
  });

  it('gdnGates: where A_log and a + dt_bias are both NaN, g is the NaN the reference writes', async () => {
    // a = NaN: softplus gives the default NaN; A_log = -NaN with a payload: -exp(A_log) is a NaN with that payload
    const b = tensor('bf16', [2, 2], bf16([1, 1, 1, 1]));
    const a = tensor('bf16', [2, 2], Uint16Array.of(0x7fc1, 0x3f80, 0x7fc1, 0x7fc1));
    const aLog = tensor('bf16', [2], Uint16Array.of(0xffc3, 0x7fc5));
    const dt = tensor('bf16', [2], bf16([1, 0.5]));
    await expectSame('gdnGates', [b, a, aLog, dt], {});
  });
});
