// The PLE lookup's native kernels (issue 20 item 5): pleNgramIds (a host op the native devices
// run themselves, DeviceOps.runsHostOp) and pleNgramEmbedShard (a rank's vocab slice of the
// table) on the host device and the emulated GPU, bit for bit against core's CPU kernels; their
// bad values refused with the reference's messages, on the GPU by device checks raised at the
// run's sync naming the node (native/src/gpu/kernels/ple.cu, native/src/ops/ple_checks.h).
import {
  bf16ToF32,
  cpuKernel,
  f32ToBf16,
  FLASH_NEXT,
  MODEL_SUB_LAYERS,
  pleNgramIdsAttrs,
  pleShape,
  preparePrefill,
  SMALL,
  TINY,
  type Backend,
  type ModelConfig,
  type Tensor,
} from '@hcsp/core';
import { describe, expect, it } from 'vitest';
import { useEmulatedGpu } from '../../../test/support/emulatedGpu.ts';
import { bytesOf, referenceOutputs, repeatedRuns } from '../../../test/support/engineRuns.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';
import { nativeDeviceOps } from './nativeDevice.ts';
import { createRocmBackend } from './rocmBackend.ts';

const addon = loadNativeAddon();
type Device = GpuDevice | null;

/** a seeded generator (mulberry32) */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

const i32 = (shape: number[], data: Int32Array): Tensor => ({ dtype: 'i32', shape, data });

/** tokens of `config`: random, with EOS at position 0, in the middle, twice in a row and near the end */
function tokensOf(config: ModelConfig, T: number, seed: number): Int32Array {
  const next = rng(seed);
  const t = Int32Array.from({ length: T }, () => next(config.vocabSize));
  for (const p of [0, Math.floor(T / 2), Math.floor(T / 2) + 1, T - 2]) if (p >= 0 && p < T) t[p] = config.eosTokenId;
  return t;
}

/** a bf16 table slice [rows, headDim] of distinct finite values, -0.0 and +0.0 among them */
function sliceOf(rows: number, headDim: number, seed: number): Uint16Array {
  const next = rng(seed);
  const s = Uint16Array.from({ length: rows * headDim }, () => f32ToBf16((next(2001) - 1000) / 64));
  if (s.length > 1) [s[0], s[1]] = [0x8000, 0x0000];
  return s;
}

/** the op on `device`: its output's shape and bytes, or its error's message */
async function runOn(
  device: Device,
  op: string,
  inputs: Tensor[],
  attrs: Record<string, unknown>,
): Promise<{ shape: number[]; data: Uint8Array } | { error: string }> {
  const handles = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, device));
  try {
    const [y] = await addon.run(op, handles, attrs, 'exact', device);
    const out = { shape: [...y!.shape], data: new Uint8Array(addon.download(y!)) };
    addon.free(y!);
    return out;
  } catch (e) {
    return { error: (e as Error).message };
  } finally {
    for (const h of handles) addon.free(h);
  }
}

/** the CPU reference's output (shape and bytes), or its error's message */
function reference(op: string, inputs: Tensor[], attrs: Record<string, unknown>): { shape: number[]; data: Uint8Array } | { error: string } {
  try {
    const [y] = cpuKernel(op)(inputs, attrs);
    const d = y!.data;
    return { shape: [...y!.shape], data: new Uint8Array(d.buffer, d.byteOffset, d.byteLength) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const bytes = (r: { shape: number[]; data: Uint8Array } | { error: string }): { shape: number[]; data: number[] } | { error: string } =>
  'error' in r ? r : { shape: r.shape, data: Array.from(r.data) };

describe('the PLE lookup on the native devices', () => {
  const emulated = useEmulatedGpu();
  const devices = (): [string, Device][] => [
    ['host', null],
    ['emulated', emulated.gpu],
  ];

  /** the op on both devices equals the reference: the same bytes, or the same error (the device's names the op first) */
  async function expectReference(op: string, inputs: Tensor[], attrs: Record<string, unknown>): Promise<{ shape: number[]; data: Uint8Array }> {
    const ref = reference(op, inputs, attrs);
    for (const [name, device] of devices()) {
      const got = await runOn(device, op, inputs, attrs);
      const want = 'error' in ref ? { error: ref.error.startsWith(`${op}:`) ? ref.error : `${op}: ${ref.error}` } : ref;
      expect(bytes(got), `${op} on ${name}`).toEqual(bytes(want));
    }
    if ('error' in ref) throw new Error(`the reference failed: ${ref.error}`);
    return ref;
  }

  it("the devices run pleNgramIds and pleNgramEmbedShard themselves; pleNgramEmbed (the gathered table) stays in core's loop", () => {
    for (const [, device] of devices()) {
      const ops = nativeDeviceOps(addon, 'exact', device);
      expect(ops.runsHostOp?.('pleNgramIds')).toBe(true);
      expect(ops.runsHostOp?.('pleNgramEmbed')).toBe(false);
    }
  });

  for (const config of [TINY, SMALL, FLASH_NEXT]) {
    it(`pleNgramIds equals the reference bit for bit: ${config.name}, EOS at the start, in the middle, twice in a row`, async () => {
      const attrs = pleNgramIdsAttrs(pleShape(config, config.ple.layerIds[0]));
      for (const [T, seed] of [
        [1, 1],
        [2, 2],
        [37, 3],
        [300, 4],
      ]) {
        await expectReference('pleNgramIds', [i32([T], tokensOf(config, T, seed))], attrs);
      }
      // all EOS; none at all (the start's history is EOS even so)
      await expectReference('pleNgramIds', [i32([9], new Int32Array(9).fill(config.eosTokenId))], attrs);
      const noEos = tokensOf(config, 50, 5).map((t) => (t === config.eosTokenId ? 0 : t));
      await expectReference('pleNgramIds', [i32([50], noEos)], attrs);
      await expectReference('pleNgramIds', [i32([0], new Int32Array(0))], attrs);
    });
  }

  for (const config of [TINY, SMALL]) {
    it(`pleNgramEmbedShard equals the reference at tp 1, 2 and 4 (ids at each slice's edges), and the slices add up to the whole lookup: ${config.name}`, async () => {
      const ple = pleShape(config, config.ple.layerIds[0]);
      const heads = ple.vocabSizes.length;
      const headDim = ple.embedDim / heads;
      const hashed = await expectReference('pleNgramIds', [i32([64], tokensOf(config, 64, 7))], pleNgramIdsAttrs(ple));
      const ids = new Int32Array(hashed.data.slice().buffer);
      const whole = sliceOf(ple.tableRows, headDim, 11);
      for (const tp of [1, 2, 4]) {
        const rows = ple.tableRows / tp;
        const edges = Int32Array.from(ids);
        const slices: Uint16Array[] = [];
        for (let r = 0; r < tp; r++) {
          const rowStart = r * rows;
          // the ids just outside and at both ends of this slice, in the first rows
          [rowStart - 1, rowStart, rowStart + rows - 1, rowStart + rows].forEach((id, k) => {
            if (id >= 0 && id < ple.tableRows) edges[r * 4 + k] = id;
          });
        }
        for (let r = 0; r < tp; r++) {
          const rowStart = r * rows;
          const slice = whole.subarray(rowStart * headDim, (rowStart + rows) * headDim);
          const out = await expectReference('pleNgramEmbedShard', [i32([64, heads], edges), { dtype: 'bf16', shape: [rows, headDim], data: slice }], {
            rowStart,
            tableRows: ple.tableRows,
          });
          slices.push(new Uint16Array(out.data.slice().buffer));
        }
        // the ranks' all-reduce: -0.0 + x = x, so the sum is the whole table's lookup bit for bit
        const want = cpuKernel('pleNgramEmbed')([i32([64, heads], edges), { dtype: 'bf16', shape: [ple.tableRows, headDim], data: whole }], {})[0]!
          .data as Uint16Array;
        const sum = Uint16Array.from(want, (_, i) => f32ToBf16(slices.reduce((acc, s) => acc + bf16ToF32(s[i]), -0)));
        expect(Array.from(sum), `tp ${tp}`).toEqual(Array.from(want));
      }
    });
  }

  it("bad values give the reference's messages on both devices: a token out of the vocabulary, an n-gram id out of the table, a product past int64", async () => {
    const ple = pleShape(TINY, 1);
    const attrs = pleNgramIdsAttrs(ple);
    const m = attrs.multipliers as string[];
    const tokens = tokensOf(TINY, 20, 9);
    tokens[6] = TINY.vocabSize;
    tokens[11] = -3;
    await expect(expectReference('pleNgramIds', [i32([20], tokens)], attrs)).rejects.toThrow(
      /the reference failed: ple: token id 512 at position 6 is outside the vocabulary \[0, 512\)/,
    );
    // multiplier 2 lets a trigram's token leave int64; a token out of the vocabulary later on still comes first
    const wrapping = { ...attrs, multipliers: [m[0], m[1], '36028797018963968'] };
    const ok = tokensOf(TINY, 20, 10);
    ok[0] = 1;
    ok[1] = 300;
    await expect(expectReference('pleNgramIds', [i32([20], ok)], wrapping)).rejects.toThrow(
      /the reference failed: ple: \d+ \* multiplier 2 = \d+ leaves \[0, 2\^63\)/,
    );
    ok[19] = 9999;
    await expect(expectReference('pleNgramIds', [i32([20], ok)], wrapping)).rejects.toThrow(/the reference failed: ple: token id 9999 at position 19/);
    // a multiplier at or past 2^63: only id 0 stays in int64
    const huge = { ...attrs, eosTokenId: 0, multipliers: [m[0], '123456789012345678901234567890', m[2]] };
    await expect(expectReference('pleNgramIds', [i32([3], Int32Array.of(0, 2, 1))], huge)).rejects.toThrow(
      /the reference failed: ple: 2 \* multiplier 1 = 246913578024691357802469135780 leaves/,
    );
    await expect(expectReference('pleNgramIds', [i32([2], Int32Array.of(5, 7))], { ...attrs, eosTokenId: 512 })).rejects.toThrow(
      /token id 512 \(EOS\) is outside/,
    );
    const ids = Int32Array.from({ length: 8 * 16 }, (_, i) => i * 7);
    ids[37] = ple.tableRows;
    ids[90] = -1;
    await expect(
      expectReference('pleNgramEmbedShard', [i32([8, 16], ids), { dtype: 'bf16', shape: [576, 2], data: sliceOf(576, 2, 3) }], {
        rowStart: 576,
        tableRows: ple.tableRows,
      }),
    ).rejects.toThrow(/the reference failed: ple: n-gram id 2304 \(position 2, head 5\) is outside the table \[0, 2304\)/);
  });

  /** `build` enqueued on `device` and synced: the sync's error, and the counters around it */
  async function enqueued(device: Device, inputs: Tensor[], build: (ins: NativeTensor[]) => NativeTensor[]) {
    const memory = device ?? addon;
    await addon.sync(device);
    const live = memory.stats().liveTensors;
    const ins = inputs.map((t) => addon.upload(t.dtype, t.shape, t.data, device));
    await addon.sync(device);
    const c0 = addon.counters(device);
    const outs = build(ins);
    const error = await addon.sync(device).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    const c1 = addon.counters(device);
    for (const t of [...ins, ...outs]) addon.free(t);
    await addon.sync(device);
    return {
      error,
      live: memory.stats().liveTensors - live,
      hostSyncs: c1.hostSyncs - c0.hostSyncs,
      copiesFromDevice: c1.copiesFromDevice - c0.copiesFromDevice,
    };
  }

  it('queued, a bad token or n-gram id is raised at the sync naming the node, with the host message; the emulated GPU reads back only its check slots there, and nothing stays allocated', async () => {
    const ple = pleShape(TINY, 1);
    const heads = ple.vocabSizes.length;
    const tokens = tokensOf(TINY, 12, 12);
    tokens[0] = 700;
    tokens[4] = 600;
    const errors: Record<string, string | undefined> = {};
    /** rank `rank`'s n-gram ids of the tokens t, queued on device */
    const ngramIds = (device: Device, rank: number, t: NativeTensor) =>
      addon.enqueueNode(
        addon.prepareNode(
          `L1.ple.ids (pleNgramIds, rank ${rank})`,
          'pleNgramIds',
          pleNgramIdsAttrs(ple),
          'exact',
          device,
          [{ dtype: 'i32', shape: [12, heads] }],
          false,
        ),
        [t],
      ) as NativeTensor[];
    for (const [name, device] of devices()) {
      const r = await enqueued(device, [i32([12], tokens)], ([t]) => {
        const [ids] = ngramIds(device, 0, t);
        return [ids];
      });
      errors[name] = r.error?.message;
      expect(r.live, name).toBe(0);
      if (device) expect({ hostSyncs: r.hostSyncs, copiesFromDevice: r.copiesFromDevice }).toEqual({ hostSyncs: 1, copiesFromDevice: 1 });
    }
    expect(errors.host).toBe('L1.ple.ids (pleNgramIds, rank 0): pleNgramIds: ple: token id 700 at position 0 is outside the vocabulary [0, 512)');
    expect(errors.emulated).toBe(errors.host);

    // ids from the hash, one planted past the table, looked up in rank 1's half
    for (const [name, device] of devices()) {
      /** rank 1's lookup of n-gram ids in its half of the table */
      const lookup = (ids: NativeTensor, slice: NativeTensor) =>
        addon.enqueueNode(
          addon.prepareNode(
            'L1.ple.lookup (pleNgramEmbedShard, rank 1)',
            'pleNgramEmbedShard',
            { rowStart: 1152, tableRows: 2304 },
            'exact',
            device,
            [{ dtype: 'bf16', shape: [12, heads * 2] }],
            false,
          ),
          [ids, slice],
        ) as NativeTensor[];
      const good = tokensOf(TINY, 12, 13);
      const r = await enqueued(device, [i32([12], good), { dtype: 'bf16', shape: [1152, 2], data: sliceOf(1152, 2, 4) }], ([t, slice]) => {
        const [ids] = ngramIds(device, 1, t);
        const [e] = lookup(ids, slice);
        return [ids, e];
      });
      expect(r.error, name).toBeNull();
      expect(r.live, name).toBe(0);
      const bad = Int32Array.from({ length: 12 * heads }, (_, i) => (i === 3 * heads + 9 ? 2304 + i : i));
      const failed = await enqueued(device, [i32([12, heads], bad), { dtype: 'bf16', shape: [1152, 2], data: sliceOf(1152, 2, 4) }], ([ids, slice]) =>
        lookup(ids, slice),
      );
      errors[name] = failed.error?.message;
      expect(failed.live, name).toBe(0);
      if (device) expect({ hostSyncs: failed.hostSyncs, copiesFromDevice: failed.copiesFromDevice }).toEqual({ hostSyncs: 1, copiesFromDevice: 1 });
    }
    expect(errors.host).toBe(
      `L1.ple.lookup (pleNgramEmbedShard, rank 1): pleNgramEmbedShard: ple: n-gram id ${2304 + 3 * 16 + 9} (position 3, head 9) is outside the table [0, 2304)`,
    );
    expect(errors.emulated).toBe(errors.host);
  });

  it("a vocab-parallel prefill runs the whole PLE on the device: on its second run no host op, no staging either way, one host sync, the reference's bits", async () => {
    const p = preparePrefill({
      config: TINY,
      tokens: 64,
      tp: 2,
      sp: 'on',
      reduce: 'ring',
      seed: 0,
      subLayers: MODEL_SUB_LAYERS,
      env: {},
      pleTable: 'vocabParallel',
    });
    const ops = new Set(p.graph.nodes.map((n) => n.op));
    expect(ops.has('pleNgramIds') && ops.has('pleNgramEmbedShard') && !ops.has('pleNgramEmbed')).toBe(true);
    const reference = await referenceOutputs(p);
    for (const device of ['host', 'emulated'] as const) {
      const b = device === 'emulated' ? emulated.backend : await createRocmBackend({ device });
      try {
        const [, second] = await repeatedRuns(b as Backend, p, 2);
        for (const [id, t] of reference) expect(bytesOf(second.values.get(id)!).equals(bytesOf(t)), `${device}: ${id}`).toBe(true);
        const e = second.engine;
        expect({ hostOpSeconds: e.hostOpSeconds, toDevice: e.transfers.stagingToDeviceBytes, fromDevice: e.transfers.stagingFromDeviceBytes }, device).toEqual({
          hostOpSeconds: 0,
          toDevice: 0,
          fromDevice: 0,
        });
        expect(e.device!.hostSyncs, device).toBe(1);
      } finally {
        if (b !== emulated.backend) await b.dispose();
      }
    }
  }, 120_000);
});
