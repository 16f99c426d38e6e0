// A device opened with fast kernels says where an op ran its exact kernel instead (a head or
// key dim past the fast kernel's shared tiles; hf-eager's bf16 softmax roundings, which the
// tiled attention's online softmax cannot make): once per (op, reason) on stderr and in
// kernelFallbacks() (prefill --json's kernelFallbacks). The exact kernel's bits are the
// reference's, so the output is checked against the CPU reference too.
import { cpuKernel, GDN_L2NORM_EPS, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();

async function runOp(gpu: GpuDevice, op: string, ins: Tensor[], attrs: Record<string, unknown>): Promise<Uint16Array> {
  const handles = ins.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const [o] = await addon.run(op, handles, attrs, 'exact', gpu);
    const data = new Uint16Array(addon.download(o!).slice(0));
    addon.free(o!);
    return data;
  } finally {
    for (const h of handles) addon.free(h);
  }
}

/** attnCausalQsa over T rows keeping every visible block (width >= T / ratio) */
function attention(T: number, hd: number, eagerSoftmax: boolean): { ins: Tensor[]; attrs: Record<string, unknown> } {
  const rng = new Rng(hd + T);
  const heads = 2;
  const ratio = 4;
  const width = Math.ceil(T / ratio);
  const blocks = new Int32Array(T * width).fill(-1);
  for (let t = 0; t < T; t++) for (let b = 0; b < Math.floor((t + 1) / ratio); b++) blocks[t * width + b] = b;
  const ins: Tensor[] = [
    { dtype: 'bf16', shape: [T, heads * hd], data: rng.fillBf16Normal(T * heads * hd, 2) },
    { dtype: 'bf16', shape: [T, hd], data: rng.fillBf16Normal(T * hd, 1) },
    { dtype: 'bf16', shape: [T, hd], data: rng.fillBf16Normal(T * hd, 1) },
    { dtype: 'i32', shape: [T, width], data: blocks },
  ];
  return { ins, attrs: { heads, kvHeads: 1, headDim: hd, scale: 1 / Math.sqrt(hd), compressRatio: ratio, width, eagerSoftmax } };
}

/** gdnRecurrence with one key and value head of the given dims, mild decay */
function gdn(T: number, keyDim: number): { ins: Tensor[]; attrs: Record<string, unknown> } {
  const rng = new Rng(keyDim);
  const C = 2 * keyDim + 16;
  const g = Float32Array.from({ length: T }, () => -0.5 * rng.nextFloat());
  const beta = Uint16Array.from({ length: T }, () => 0x3f00); // 0.5
  const ins: Tensor[] = [
    { dtype: 'bf16', shape: [T, C], data: rng.fillBf16Normal(T * C, 1) },
    { dtype: 'f32', shape: [T, 1], data: g },
    { dtype: 'bf16', shape: [T, 1], data: beta },
  ];
  return { ins, attrs: { keyHeads: 1, valueHeads: 1, keyDim, valueDim: 16, scale: Math.fround(keyDim ** -0.5), l2Eps: GDN_L2NORM_EPS } };
}

const reference = (op: string, c: { ins: Tensor[]; attrs: Record<string, unknown> }): Buffer =>
  Buffer.from((cpuKernel(op)(c.ins, c.attrs)[0]!.data as Uint16Array).buffer);

describe('fast-kernel devices name the ops that ran their exact kernel', () => {
  it('attnCausalQsa: a head dim past the tiled kernel (264), and hf-eager softmax, each listed once', async () => {
    const gpu = addon.openGpu('emulated', { kernels: 'fast' });
    await runOp(gpu, 'attnCausalQsa', attention(12, 64, false).ins, attention(12, 64, false).attrs);
    expect(gpu.kernelFallbacks(), 'a head dim the tiled kernel takes is no fallback').toEqual([]);
    const wide = attention(12, 264, false);
    for (let i = 0; i < 2; i++)
      expect(Buffer.from((await runOp(gpu, 'attnCausalQsa', wide.ins, wide.attrs)).buffer).equals(reference('attnCausalQsa', wide))).toBe(true);
    const eager = attention(12, 64, true);
    expect(Buffer.from((await runOp(gpu, 'attnCausalQsa', eager.ins, eager.attrs)).buffer).equals(reference('attnCausalQsa', eager))).toBe(true);
    expect(gpu.kernelFallbacks()).toEqual([
      { op: 'attnCausalQsa', reason: "head dim 264 is past the tiled kernel's 256" },
      { op: 'attnCausalQsa', reason: "the tiled kernel's online softmax cannot round scores and probabilities to bf16 (hf-eager's eagerSoftmax)" },
    ]);
  });

  it("gdnRecurrence: a key dim past the chunked kernel's shared state tile (264) is listed", async () => {
    const gpu = addon.openGpu('emulated', { kernels: 'fast' });
    const wide = gdn(20, 264);
    expect(Buffer.from((await runOp(gpu, 'gdnRecurrence', wide.ins, wide.attrs)).buffer).equals(reference('gdnRecurrence', wide))).toBe(true);
    expect(gpu.kernelFallbacks()).toEqual([{ op: 'gdnRecurrence', reason: "key dim 264 is past the chunked kernel's 256" }]);
  });

  it('a device opened with exact kernels lists nothing: it was asked for the exact kernels', async () => {
    const gpu = addon.openGpu('emulated', { kernels: 'exact' });
    const wide = gdn(20, 264);
    await runOp(gpu, 'gdnRecurrence', wide.ins, wide.attrs);
    await runOp(gpu, 'attnCausalQsa', attention(12, 264, true).ins, attention(12, 264, true).attrs);
    expect(gpu.kernelFallbacks()).toEqual([]);
  });
});
