// The attention head norm + RoPE block kernel (kernels/attention.cu hcsp_attention_norm_rope_bf16,
// issue 22) on the emulated device, which runs the same .cu source as hipcc, clang-19 and nvcc
// with real barriers and shared memory per block: one 64-thread row group per (row, head), the
// sum of squares in canonical order v1 (core numerics/canonicalSum.ts), the norm's apply and the
// rotation in the same launch. Through attnHeadNormRopeBf16 and qsaBlockKeys, bit-identical with
// core's reference under every block size (HCSP_GPU_BLOCK_ROWS 1-4 row groups of 64 threads, and
// the launcher's own choice): the pinned 4096-then-ones heads (sequential order gives other
// bits), head dims of one partial step, past one step and not a multiple of 8, odd offsets,
// RoPE on none, some and all dims, item counts no block size divides.
import { cpuKernel, f32ToBf16, Rng, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { restoreEnvAfterEach } from '../../../test/support/fakeGpuLibraries.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';

const addon = loadNativeAddon();
/** the launcher's choice, then every block of 1-4 row groups */
const BLOCK_ROWS = [undefined, '1', '2', '3', '4'] as const;

const bytes = (v: ArrayBufferView | ArrayBuffer): Uint8Array =>
  v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

let seed = 7;
/** seeded bf16 normal values */
const bf = (shape: number[], std = 1): Tensor => new Rng(seed++).bf16Tensor(shape, std);
const bits = (shape: number[], value: (j: number) => number): Tensor => ({
  dtype: 'bf16',
  shape,
  data: Uint16Array.from({ length: shape.reduce((a, d) => a * d, 1) }, (_, j) => f32ToBf16(value(j))),
});

/** the op on the emulated GPU with HCSP_GPU_BLOCK_ROWS = blockRows: its outputs' bytes */
async function onGpu(gpu: GpuDevice, op: string, inputs: Tensor[], attrs: Record<string, unknown>, blockRows: string | undefined): Promise<Uint8Array[]> {
  if (blockRows === undefined) delete process.env.HCSP_GPU_BLOCK_ROWS;
  else process.env.HCSP_GPU_BLOCK_ROWS = blockRows;
  const handles = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const out = await addon.run(op, handles, attrs, 'exact', gpu);
    return out.map((t) => {
      const b = bytes(addon.download(t!));
      addon.free(t!);
      return b;
    });
  } finally {
    for (const h of handles) addon.free(h);
  }
}

/** the op's outputs equal the reference's byte for byte under every block size */
async function expectReference(gpu: GpuDevice, op: string, inputs: Tensor[], attrs: Record<string, unknown>, label: string): Promise<void> {
  const want = cpuKernel(op)(inputs, attrs).map((t) => bytes(t!.data));
  for (const blockRows of BLOCK_ROWS) {
    const got = await onGpu(gpu, op, inputs, attrs, blockRows);
    const where = `${label}, HCSP_GPU_BLOCK_ROWS ${blockRows ?? 'unset'}`;
    expect(got.length, where).toBe(want.length);
    got.forEach((g, port) => {
      expect(Buffer.from(g).equals(Buffer.from(want[port])), `${where}, port ${port}`).toBe(true);
    });
  }
}

describe('attention head norm + RoPE block kernel on the emulated device, every block size', () => {
  const gpu = addon.openGpu('emulated');
  restoreEnvAfterEach(['HCSP_GPU_BLOCK_ROWS']);

  it('the pinned heads: 4096 then ones over headDim 256 (v1 and sequential sums give other bits)', async () => {
    const hd = 256;
    const inputs = [bits([3, 2 * hd], (d) => (d % hd === 0 ? 4096 : 1)), bits([hd], () => 3 * 2 ** -8), bits([3, 1], () => 1), bits([3, 1], () => 0)];
    const attrs = { heads: 2, headDim: hd, stride: hd, offset: 0, ropeDims: 2, eps: 1e-6 };
    await expectReference(gpu, 'attnHeadNormRopeBf16', inputs, attrs, 'pinned');
    // core's hand-computed values: 16.125 and 2^-8 * 1.0078125 (in d order: 16.25, 2^-8 * 1.015625)
    const y = Array.from(new Uint16Array((await onGpu(gpu, 'attnHeadNormRopeBf16', inputs, attrs, '3'))[0].slice().buffer));
    expect(y.filter((b, d) => b !== f32ToBf16(d % hd === 0 ? 16.125 : 2 ** -8 * 1.0078125))).toEqual([]);
  });

  // [rows, heads, headDim, stride, offset, ropeDims]
  const SHAPES: [number, number, number, number, number, number][] = [
    [7, 3, 256, 512, 0, 64], // Flash-Next's q with its gate: 21 items
    [5, 3, 520, 1100, 40, 64], // past one 512-term step, an odd offset
    [4, 5, 130, 131, 1, 130], // not a multiple of 8, RoPE on every dim: 20 items
    [9, 1, 6, 6, 0, 0], // lanes with nothing, no RoPE
  ];
  for (const [rows, heads, hd, stride, offset, ropeDims] of SHAPES) {
    it(`attnHeadNormRopeBf16: ${rows} rows x ${heads} heads, headDim ${hd} at ${offset} of ${stride}, RoPE ${ropeDims}`, async () => {
      const half = ropeDims / 2;
      const inputs = [bf([rows, heads * stride], 2), bf([hd], 0.2), bf([rows, half], 0.7), bf([rows, half], 0.7)];
      await expectReference(gpu, 'attnHeadNormRopeBf16', inputs, { heads, headDim: hd, stride, offset, ropeDims, eps: 1e-6 }, `${rows}x${heads}x${hd}`);
    });
  }

  it('qsaBlockKeys: headDim 520 and 128, the norm at the blocks positions', async () => {
    for (const [T, dh, ratio] of [
      [13, 520, 4],
      [35, 128, 4],
    ]) {
      const inputs = [bf([T, dh], 1), bf([dh], 0.1), bf([T, 32], 0.7), bf([T, 32], 0.7)];
      await expectReference(gpu, 'qsaBlockKeys', inputs, { headDim: dh, compressRatio: ratio, ropeDims: 64, eps: 1e-6 }, `T ${T}, headDim ${dh}`);
    }
  });
});
