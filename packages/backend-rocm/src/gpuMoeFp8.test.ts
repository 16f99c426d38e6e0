// moeExpertsFp8Ptpc on the emulated GPU (native/src/gpu/ops/moe_fp8_ops.cc, kernels/moe_fp8.cu):
// both kernel modes give the CPU reference's bits. 'exact' is one thread per output; 'fast'
// tiles one expert's rows (16) against 16 weight rows with 64-byte k slabs in shared memory,
// each output still summed in k order, so its bits are the reference's too: routings with
// uneven expert loads, T under one tile and not a multiple of it, H and I not multiples of
// the tiles, every rank of tp 2 and 4, both formats.
import { cpuKernel, fp8Info, quantizeBf16RowsFp8, type Fp8Format, type Tensor } from '@hcsp/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();

function bf16Normal(n: number, seed: number, std: number): Uint16Array {
  const r = mulberry32(seed);
  const f = new Float32Array(n).map(() => (r() + r() + r() - 1.5) * 2 * std);
  return Uint16Array.from(new Uint32Array(f.buffer), (u) => u >>> 16);
}

/** ids [T, topK]: expert `hot` in most tokens, `cold` in none, the rest spread */
function skewedIds(T: number, topK: number, experts: number, seed: number, hot: number, cold: number): Int32Array {
  const r = mulberry32(seed);
  const ids: number[] = [];
  for (let t = 0; t < T; t++) {
    const mine: number[] = r() < 0.8 ? [hot] : [];
    while (mine.length < topK) {
      const e = Math.floor(r() * experts);
      if (e !== cold && !mine.includes(e)) mine.push(e);
    }
    ids.push(...mine);
  }
  return Int32Array.from(ids);
}

interface Case {
  T: number;
  H: number;
  I: number;
  topK: number;
  experts: number;
}

/** rank `rank` of `tp`'s inputs and attributes (its experts' rows of the stacked weights) */
function rankInputs(c: Case, format: Fp8Format, rank: number, tp: number, seed: number): { inputs: Tensor[]; attrs: Record<string, unknown> } {
  const { T, H, I, topK, experts: E } = c;
  const dtype = fp8Info(format).dtype;
  const x = quantizeBf16RowsFp8(bf16Normal(T * H, seed, 1), T, H, format, 'reciprocal');
  const gu = quantizeBf16RowsFp8(bf16Normal(E * 2 * I * H, seed + 1, 1 / Math.sqrt(H)), E * 2 * I, H, format, 'reciprocal');
  const dn = quantizeBf16RowsFp8(bf16Normal(E * H * I, seed + 2, 1 / Math.sqrt(I)), E * H, I, format, 'reciprocal');
  const local = E / tp;
  const first = rank * local;
  const inputs: Tensor[] = [
    { dtype, shape: [T, H], data: x.q },
    { dtype: 'f32', shape: [T], data: x.scale },
    { dtype: 'i32', shape: [T, topK], data: skewedIds(T, topK, E, seed + 3, 1, E - 1) },
    { dtype: 'bf16', shape: [T, topK], data: bf16Normal(T * topK, seed + 4, 0.3) },
    { dtype, shape: [local * 2 * I, H], data: gu.q.slice(first * 2 * I * H, (first + local) * 2 * I * H) },
    { dtype: 'f32', shape: [local * 2 * I], data: gu.scale.slice(first * 2 * I, (first + local) * 2 * I) },
    { dtype, shape: [local * H, I], data: dn.q.slice(first * H * I, (first + local) * H * I) },
    { dtype: 'f32', shape: [local * H], data: dn.scale.slice(first * H, (first + local) * H) },
  ];
  return { inputs, attrs: { firstExpert: first, numLocal: local, intermediate: I, format, style: 'reciprocal', scaleOrder: 'weightFirst' } };
}

async function run(gpu: GpuDevice, inputs: Tensor[], attrs: Record<string, unknown>): Promise<Float32Array> {
  const held = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, gpu));
  try {
    const [routed] = (await addon.run('moeExpertsFp8Ptpc', held, attrs, 'exact', gpu)) as NativeTensor[];
    held.push(routed!);
    return new Float32Array(new Uint8Array(addon.download(routed!)).buffer.slice(0));
  } finally {
    for (const t of held) addon.free(t);
  }
}

const CASES: (Case & { name: string; tps: number[] })[] = [
  { name: 'T 5 (under one tile of 16 rows), H 40, I 24', T: 5, H: 40, I: 24, topK: 2, experts: 4, tps: [1, 2] },
  {
    name: 'T 37 (not a multiple of 16: the hot expert rows end in a partial tile), H 72 (k slabs of 64 and 8), I 20',
    T: 37,
    H: 72,
    I: 20,
    topK: 3,
    experts: 8,
    tps: [1, 2, 4],
  },
  { name: 'T 64, H 16, I 136 (down: 3 k slabs)', T: 64, H: 16, I: 136, topK: 2, experts: 4, tps: [4] },
];

describe('moeExpertsFp8Ptpc on the emulated GPU: the CPU reference bit for bit in both kernel modes', () => {
  const gpus: Record<'fast' | 'exact', GpuDevice | undefined> = { fast: undefined, exact: undefined };
  beforeAll(() => {
    gpus.fast = addon.openGpu('emulated', { kernels: 'fast' });
    gpus.exact = addon.openGpu('emulated', { kernels: 'exact' });
  });
  for (const c of CASES) {
    for (const tp of c.tps) {
      for (const format of ['e4m3fn', 'e4m3fnuz'] as const) {
        it(`${c.name}, tp ${tp}, ${format}`, async () => {
          for (let rank = 0; rank < tp; rank++) {
            const { inputs, attrs } = rankInputs(c, format, rank, tp, 7 * c.T + rank);
            const [ref] = cpuKernel('moeExpertsFp8Ptpc')(inputs, attrs) as Tensor[];
            const want = Array.from(ref!.data as Float32Array);
            // the routing touches this rank (else the case checks nothing but zeros)
            if (rank === 0) expect(want.some((v) => v !== 0)).toBe(true);
            for (const mode of ['fast', 'exact'] as const) expect(Array.from(await run(gpus[mode]!, inputs, attrs)), `${mode}, rank ${rank}`).toEqual(want);
          }
        }, 120_000);
      }
    }
  }
});
