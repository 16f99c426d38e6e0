// The host device's exact GEMM weights packed when a session opens and their original bytes
// freed (rocmBackend.ts packGemmWeights, addon.packForGemm): the allocator holds each such
// weight once, as its panel; outputs stay bit-exact; other readers and the 'blas' mode keep
// the weight; a released weight is refused where its bytes would be read.
import { CpuBackend, f32ToBf16, GraphBuilder, Rng, runOnce, type Graph, type Tensor, type WeightSource } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from './nativeAddon.ts';
import { native, NativeUnsupportedError } from './nativeErrors.ts';
import { createRocmBackend, panelOnlyWeights } from './rocmBackend.ts';

const addon = loadNativeAddon();
const T = 13;
const K = 40;
const O1 = 72; // not a multiple of any panel width: a tail panel
const O3 = 64;

const bf16 = (shape: number[], seed: number): Tensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  const rng = new Rng(seed);
  return { dtype: 'bf16', shape, data: Uint16Array.from({ length: n }, () => f32ToBf16(rng.normal())) };
};
// finite e4m3fn codes (0x7f / 0xff are NaN)
const fp8 = (shape: number[], seed: number): Tensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  return { dtype: 'fp8e4m3fn', shape, data: Uint8Array.from({ length: n }, (_, i) => ((i * 37 + seed * 11) % 0x7e) | (i % 3 === 0 ? 0x80 : 0)) };
};
const f32 = (shape: number[], seed: number): Tensor => {
  const rng = new Rng(seed);
  return { dtype: 'f32', shape, data: Float32Array.from({ length: shape[0] }, () => Math.fround(0.01 + Math.abs(rng.normal()) / 64)) };
};

/** in-memory weights */
function source(tensors: Record<string, Tensor>): WeightSource {
  return {
    has: (name) => name in tensors,
    info: (name) => ({ shape: tensors[name].shape, dtype: tensors[name].dtype }) as never,
    read: async (name) => tensors[name],
  };
}

const weights = source({ w1: bf16([O1, K], 1), w3: bf16([O3, K], 3), qW: fp8([O3, K], 4), sw: f32([O3], 5) });
const bytesOf = { w1: O1 * K * 2, w3: O3 * K * 2, qW: O3 * K, sw: O3 * 4 };

/** the bytes of the exact GEMM's bf16 panel of a [out, inF] weight on this ISA (native/src/host/gemm/panels.h) */
function panelBytes(out: number, inF: number): number {
  const [width, vector] = addon.info().isa === 'avx512' ? [64, 16] : [16, 8];
  const panels = Math.ceil(out / width);
  return ((panels - 1) * width + Math.ceil((out - (panels - 1) * width) / vector) * vector) * inF * 2;
}

/**
 * y1 = linear(x, w1) (w1 read only there: released); y3 = linear(x, w3) and z = add(w3, w3)
 * (w3 also read by a non-GEMM op: kept); yq = fp8LinearPtpc(q, sx, qW, sw) (qW released, sw kept)
 */
function graph(): Graph {
  const b = new GraphBuilder(1);
  const x = b.input('x', [T, K], 'bf16');
  const q = b.input('q', [T, K], 'fp8e4m3fn');
  const sx = b.input('sx', [T], 'f32');
  const w1 = b.weight({ name: 'w1' }, [O1, K]);
  const w3 = b.weight({ name: 'w3' }, [O3, K]);
  const qW = b.weight({ name: 'qW' }, [O3, K], 'fp8e4m3fn');
  const sw = b.weight({ name: 'sw' }, [O3], 'f32');
  const y1 = b.value('y1', [T, O1], 'bf16', 0);
  const y3 = b.value('y3', [T, O3], 'bf16', 0);
  const z = b.value('z', [O3, K], 'bf16', 0);
  const yq = b.value('yq', [T, O3], 'bf16', 0);
  b.node({ op: 'linear', rank: 0, layer: 0, scope: 'l1', inputs: [x, w1], outputs: [y1], attrs: {} });
  b.node({ op: 'linear', rank: 0, layer: 0, scope: 'l3', inputs: [x, w3], outputs: [y3], attrs: {} });
  b.node({ op: 'add', rank: 0, layer: 0, scope: 'add', inputs: [w3, w3], outputs: [z], attrs: {} });
  b.node({
    op: 'fp8LinearPtpc',
    rank: 0,
    layer: 0,
    scope: 'fp8',
    inputs: [q, sx, qW, sw],
    outputs: [yq],
    attrs: { format: 'e4m3fn', scaleOrder: 'weightFirst' },
  });
  for (const v of [y1, y3, z, yq]) b.markOutput(v);
  return b.build();
}

const feeds = (): Map<string, Tensor> =>
  new Map([
    ['x', bf16([T, K], 10)],
    ['q', fp8([T, K], 11)],
    ['sx', f32([T], 12)],
  ]);

const bits = (t: Tensor | undefined): number[] => Array.from(t!.data as Uint16Array);

describe('exact GEMM weights packed and released when a session opens (host device)', () => {
  it('picks the weights only linear (w) and fp8LinearPtpc (qW) read', () => {
    expect([...panelOnlyWeights(graph())]).toEqual([
      ['w:w1', 'linear'],
      ['w:qW', 'fp8'],
    ]);
  });

  it('holds a released weight once, as its panel; outputs bit-exact with the CPU reference over two runs; dispose frees everything', async () => {
    const g = graph();
    const f = feeds();
    const cpu = await runOnce(new CpuBackend(), g, f, weights);
    const before = addon.stats();
    const backend = await createRocmBackend({ device: 'host', gemm: 'exact' });
    const prepared = await backend.prepare(g, weights);
    const afterPrepare = addon.stats().liveBytes - before.liveBytes;
    // w1 and qW: their panels instead of their bytes; w3 and sw as uploaded (w3's panel comes with its first run)
    expect(afterPrepare).toBe(panelBytes(O1, K) + panelBytes(O3, K) + bytesOf.w3 + bytesOf.sw);
    const r1 = await prepared.run(f);
    const afterRun = addon.stats().liveBytes - before.liveBytes;
    // the first run packs only w3 (its original stays: add reads it)
    expect(afterRun - afterPrepare).toBe(panelBytes(O3, K));
    const r2 = await prepared.run(f);
    expect(addon.stats().liveBytes - before.liveBytes).toBe(afterRun);
    for (const id of g.outputs) {
      expect(bits(r1.values.get(id)), id).toEqual(bits(cpu.values.get(id)));
      expect(bits(r2.values.get(id)), id).toEqual(bits(cpu.values.get(id)));
    }
    await prepared.dispose();
    const after = addon.stats();
    expect(after.liveBytes).toBe(before.liveBytes);
    expect(after.liveTensors).toBe(before.liveTensors);
  });

  it("leaves the 'blas' mode's weights as uploaded", async () => {
    const g = graph();
    const f = feeds();
    const before = addon.stats();
    const backend = await createRocmBackend({ device: 'host', gemm: 'blas' });
    const prepared = await backend.prepare(g, weights);
    expect(addon.stats().liveBytes - before.liveBytes).toBe(bytesOf.w1 + bytesOf.w3 + bytesOf.qW + bytesOf.sw);
    const r = await prepared.run(f);
    const cpu = await runOnce(new CpuBackend(), g, f, weights);
    expect(bits(r.values.get('z'))).toEqual(bits(cpu.values.get('z')));
    expect(r.values.get('y1')!.shape).toEqual([T, O1]);
    await prepared.dispose();
    expect(addon.stats().liveBytes).toBe(before.liveBytes);
    expect(addon.stats().liveTensors).toBe(before.liveTensors);
  });

  it('a released weight: the exact GEMMs read it bit for bit, download rebuilds it from the panel, other readers and blas are refused', async () => {
    const w = bf16([O1, K], 21);
    const x = bf16([T, K], 22);
    const before = addon.stats();
    const wh = addon.upload('bf16', w.shape, w.data);
    const xh = addon.upload('bf16', x.shape, x.data);
    try {
      const [kept] = await addon.run('linear', [xh, wh], {}, 'exact');
      const expected = bits({ ...w, data: new Uint16Array(addon.download(kept!)) });
      addon.free(kept!);
      const live = addon.stats().liveBytes;
      // the first run packed it: packing again adds nothing, releasing frees the bytes
      const r = await addon.packForGemm(wh, 'linear');
      expect(r).toEqual({ panelBytes: panelBytes(O1, K), releasedBytes: bytesOf.w1 });
      expect(addon.stats().liveBytes).toBe(live - bytesOf.w1);
      expect(await addon.packForGemm(wh, 'linear')).toEqual({ panelBytes: panelBytes(O1, K), releasedBytes: 0 });
      expect(wh.shape).toEqual([O1, K]);
      expect(Array.from(new Uint16Array(addon.download(wh)))).toEqual(Array.from(w.data as Uint16Array));
      const [y] = await addon.run('linear', [xh, wh], {}, 'exact');
      expect(bits({ ...w, data: new Uint16Array(addon.download(y!)) })).toEqual(expected);
      addon.free(y!);
      const refused =
        /input port \d \(bf16\[72,40\]\) is a weight released after packing for the exact GEMM; only linear's w and fp8LinearPtpc's qW read it, with gemm 'exact'/;
      await expect(addon.run('add', [wh, wh], {}, 'exact')).rejects.toThrow(refused);
      await expect(addon.run('linear', [wh, wh], {}, 'exact')).rejects.toThrow(/linear: input port 0 /);
      await expect(addon.run('linear', [xh, wh], {}, 'blas')).rejects.toThrow(/\(this run is 'blas'\)/);
      await expect(native(() => addon.packForGemm(xh, 'fp8'))).rejects.toThrow(/packForGemm 'fp8': expected a fp8e4m3fn or fp8e4m3fnuz weight, got bf16/);
    } finally {
      addon.free(wh);
      addon.free(xh);
    }
    expect(addon.stats().liveBytes).toBe(before.liveBytes);
    expect(addon.stats().liveTensors).toBe(before.liveTensors);
  });

  it('a released fp8 weight cannot be downloaded (the panel holds bf16 values)', async () => {
    const q = fp8([O3, K], 7);
    const qh = addon.upload('fp8e4m3fn', q.shape, q.data);
    try {
      expect(await addon.packForGemm(qh, 'fp8')).toEqual({ panelBytes: panelBytes(O3, K), releasedBytes: O3 * K });
      const err = await native(() => addon.download(qh)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NativeUnsupportedError);
      expect((err as Error).message).toMatch(/the weight fp8e4m3fn\[64,40\] was released after packing for the exact GEMM; its fp8 codes are not kept/);
    } finally {
      addon.free(qh);
    }
  });
});
