// The collectives of ranks simulated on one GPU (native/src/gpu/ops/collective_ops.cc) take
// the ranks' buffers and the ring layout in their kernels' launch arguments: on the emulated
// GPU each one gives core's CPU reference's bits and moves nothing between the host and the
// device while it runs (no table uploaded per call). Values are m * 2^e over a wide range of
// exponents, so a sum in another order shows in the bits.
import { cpuCollectiveKernel, type DeviceCounters, type DType, RING_DEFAULT_CHANNELS, RING_DEFAULT_CHUNK_ELEMS, type Tensor } from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { useEmulatedGpu } from '../../../test/support/emulatedGpu.ts';
import { mulberry32 } from '../../../test/support/mulberry32.ts';
import { loadNativeAddon, type NativeTensor } from './nativeAddon.ts';

const addon = loadNativeAddon();

/** the rank tables' capacity (collectives.h HCSP_COLLECTIVE_MAX_RANKS) */
const MAX_RANKS = 64;

/** seeded data of `dtype`: bf16 / f32 values m * 2^e (m in [-1, 1), e in [-spread, spread]), i32 any bits */
function valuesOf(dtype: DType, n: number, seed: number, spread = 12): Tensor['data'] {
  const r = mulberry32(seed);
  if (dtype === 'i32') return Int32Array.from({ length: n }, () => Math.floor(r() * 2 ** 32) | 0);
  const f = new Float32Array(n).map(() => (r() * 2 - 1) * 2 ** (Math.floor(r() * (2 * spread + 1)) - spread));
  return dtype === 'f32' ? f : Uint16Array.from(new Uint32Array(f.buffer), (u) => u >>> 16);
}

const bytes = (t: Tensor) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);

/** the counters a node may not touch until the run's sync, and the sync's own */
const moved = (a: DeviceCounters, b: DeviceCounters) => ({
  hostSyncs: a.hostSyncs - b.hostSyncs,
  copiesToDevice: a.copiesToDevice - b.copiesToDevice,
  bytesToDevice: a.bytesToDevice - b.bytesToDevice,
  copiesFromDevice: a.copiesFromDevice - b.copiesFromDevice,
  bytesFromDevice: a.bytesFromDevice - b.bytesFromDevice,
  memsets: a.memsets - b.memsets,
});

interface Case {
  op: 'allReduce' | 'reduceScatter' | 'allGather';
  tp: number;
  dtype: DType;
  shape: number[];
  attrs: Record<string, unknown>;
  note: string;
}

const CASES: Case[] = [];
for (const tp of [2, 4]) {
  for (const algorithm of ['ring', 'oneshot', 'ordered']) {
    CASES.push({ op: 'allReduce', tp, dtype: 'bf16', shape: [6, 20], attrs: { algorithm }, note: 'default ring chunks' });
    CASES.push({ op: 'reduceScatter', tp, dtype: 'bf16', shape: [8, 27], attrs: { algorithm }, note: '' });
  }
  // loops of channels * tp * chunkElems with a last, partial loop: 999 is no multiple of the chunk or the loop
  const ring = (shape: number[], channels: number, chunkElems: number, note: string): Case => ({
    op: 'allReduce',
    tp,
    dtype: 'bf16',
    shape,
    attrs: { algorithm: 'ring', channels, chunkElems },
    note,
  });
  CASES.push(ring([37, 27], 2, 48, 'several loops, the last partial'), ring([3, 333], 3, 64, 'three channels, the last loop partial'));
  CASES.push({ op: 'allGather', tp, dtype: 'bf16', shape: [3, 5], attrs: {}, note: 'odd shard bytes: 2-byte units' });
  CASES.push({ op: 'allGather', tp, dtype: 'f32', shape: [4, 6], attrs: {}, note: '' });
  CASES.push({ op: 'allGather', tp, dtype: 'i32', shape: [2, 7], attrs: {}, note: '' });
}

describe('collectives of simulated ranks on the emulated GPU', () => {
  const emulated = useEmulatedGpu();

  CASES.forEach((c, i) => {
    const name = `${c.op} tp ${c.tp} ${c.dtype} [${c.shape}] ${JSON.stringify(c.attrs)}${c.note ? ` (${c.note})` : ''}`;
    it(`${name}: the reference's bits; nothing copied to or from the device until the run's sync`, async () => {
      const n = c.shape.reduce((a, b) => a * b, 1);
      const ranks: Tensor[] = Array.from({ length: c.tp }, (_, r) => ({ dtype: c.dtype, shape: c.shape, data: valuesOf(c.dtype, n, 100 * i + r) }));
      // the reference's kernel takes the ring chunking the declaration requires: the defaults the native node uses when absent
      const ringDefaults = c.op === 'allReduce' ? { channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS } : {};
      const want = cpuCollectiveKernel(c.op)(
        ranks.map((t) => [t]),
        { ...ringDefaults, ...c.attrs, tp: c.tp },
      );
      const live = emulated.gpu.stats().liveTensors;
      const held = ranks.map((t) => addon.upload(t.dtype, t.shape, t.data, emulated.gpu));
      try {
        await addon.sync(emulated.gpu);
        const c0 = addon.counters(emulated.gpu);
        const node = addon.prepareNode(
          `sp.${c.op} (${c.op})`,
          c.op,
          c.attrs,
          'exact',
          emulated.gpu,
          want.map(([y]) => [{ dtype: y!.dtype, shape: y!.shape }]),
          true,
        );
        const outs = addon.enqueueNode(
          node,
          held.map((t) => [t]),
        ) as NativeTensor[][];
        held.push(...outs.map(([y]) => y!));
        await addon.sync(emulated.gpu);
        expect(moved(addon.counters(emulated.gpu), c0)).toEqual({
          hostSyncs: 1,
          copiesToDevice: 0,
          bytesToDevice: 0,
          copiesFromDevice: 0,
          bytesFromDevice: 0,
          memsets: 0,
        });
        outs.forEach(([y], r) => {
          expect([...y!.shape], `rank ${r}`).toEqual(want[r]![0]!.shape);
          expect(Buffer.from(addon.download(y!)).equals(bytes(want[r]![0]!)), `rank ${r}'s bits`).toBe(true);
        });
      } finally {
        for (const t of held) addon.free(t);
        await addon.sync(emulated.gpu);
      }
      expect(emulated.gpu.stats().liveTensors).toBe(live);
    });
  });

  for (const op of ['allReduce', 'reduceScatter', 'allGather'] as const) {
    it(`${op} over more ranks than its kernel's table holds is one error naming tp and the limit, leaving nothing allocated`, async () => {
      const tp = MAX_RANKS + 1;
      const live = emulated.gpu.stats().liveTensors;
      const held = Array.from({ length: tp }, (_, r) => addon.upload('bf16', [tp, 2], valuesOf('bf16', 2 * tp, r), emulated.gpu));
      try {
        const attrs = op === 'allGather' ? {} : { algorithm: 'ordered' };
        await expect(
          addon.runCollective(
            op,
            held.map((t) => [t]),
            attrs,
            'exact',
            emulated.gpu,
          ),
        ).rejects.toThrow(new RegExp(`^${op}: tp ${tp} is more ranks than the GPU collective kernels take \\(at most ${MAX_RANKS}\\)$`));
      } finally {
        for (const t of held) addon.free(t);
        await addon.sync(emulated.gpu);
      }
      expect(emulated.gpu.stats().liveTensors).toBe(live);
    });
  }

  it(`allReduce at exactly ${MAX_RANKS} ranks: the reference's bits`, async () => {
    const tp = MAX_RANKS;
    const ranks: Tensor[] = Array.from({ length: tp }, (_, r) => ({ dtype: 'bf16', shape: [2, 40], data: valuesOf('bf16', 80, 7000 + r) }));
    const attrs = { algorithm: 'ring', chunkElems: 16, channels: 1 };
    const want = cpuCollectiveKernel('allReduce')(
      ranks.map((t) => [t]),
      { ...attrs, tp },
    );
    const held = ranks.map((t) => addon.upload(t.dtype, t.shape, t.data, emulated.gpu));
    try {
      const outs = await addon.runCollective(
        'allReduce',
        held.map((t) => [t]),
        attrs,
        'exact',
        emulated.gpu,
      );
      held.push(...outs.map(([y]) => y!));
      outs.forEach(([y], r) => {
        expect(Buffer.from(addon.download(y!)).equals(bytes(want[r]![0]!)), `rank ${r}`).toBe(true);
      });
    } finally {
      for (const t of held) addon.free(t);
      await addon.sync(emulated.gpu);
    }
  });
});
