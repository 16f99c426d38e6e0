// The checks GPU kernels make on data stay on the device (native/src/gpu/device_checks.h): an
// embedding id outside the vocabulary, a NaN QSA block score or a malformed QSA selection
// planted in a device buffer is found by a kernel, nothing is read back or waited for inside
// the op, and the run's sync raises the first failure in queue order with the host device's
// message, naming the node. The checks' slots are read once at that sync and start clear again.
import { describe, expect, it } from 'vitest';
import { useEmulatedGpu } from '../../../test/support/emulatedGpu.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor, type OutputDecl } from './nativeAddon.ts';

const addon = loadNativeAddon();
type Device = GpuDevice | null;
const bf16 = (shape: number[]): OutputDecl => ({ dtype: 'bf16', shape });
const i32 = (shape: number[]): OutputDecl => ({ dtype: 'i32', shape });
const BF16_NAN = 0x7fc0;
const BF16_ONE = 0x3f80;

/** enqueues one node on `device` and returns its output handles */
function enqueue(device: Device, label: string, op: string, attrs: Record<string, unknown>, inputs: NativeTensor[], outputs: OutputDecl[]): NativeTensor[] {
  return addon.enqueueNode(addon.prepareNode(label, op, attrs, 'exact', device, outputs, false), inputs) as NativeTensor[];
}

/**
 * waits (without a sync) until the queue's worker has run the node that fills `t`, or 5 s: a
 * node that fails as it runs (a check on the host, as the GPU devices made them before the
 * checks moved to the device) never fills it
 */
async function ran(t: NativeTensor): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!t.computed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
}

/** the sync's rejection (null when it resolves) */
async function syncError(device: Device): Promise<(Error & { code?: string }) | null> {
  return addon.sync(device).then(
    () => null,
    (e: Error & { code?: string }) => e,
  );
}

interface Observed {
  error: (Error & { code?: string }) | null;
  /** counters after the nodes ran, before the sync, minus those before they were enqueued */
  beforeSync: { hostSyncs: number; copiesFromDevice: number };
  /** counters after the sync, minus those before the nodes were enqueued */
  afterSync: { hostSyncs: number; copiesFromDevice: number; bytesFromDevice: number };
}

/**
 * Uploads `inputs` (then syncs), enqueues the nodes `build` makes from them, waits until the
 * queue has run them (on the GPU: the output `ranLast` picks is filled) and syncs: the sync's
 * error and the device's counters around it.
 */
async function observe(
  device: Device,
  inputs: { dtype: string; shape: number[]; data: Int32Array | Uint16Array }[],
  build: (ins: NativeTensor[]) => NativeTensor[],
  ranLast: (outs: NativeTensor[]) => NativeTensor = (outs) => outs[outs.length - 1],
): Promise<Observed> {
  const ins = inputs.map((i) => addon.upload(i.dtype, i.shape, i.data, device));
  await addon.sync(device);
  const c0 = addon.counters(device);
  const outs = build(ins);
  // the host device latches its first error as the node runs and skips the rest: nothing to wait for
  if (device) await ran(ranLast(outs));
  const c1 = addon.counters(device);
  const error = await syncError(device);
  const c2 = addon.counters(device);
  for (const t of [...ins, ...outs]) addon.free(t);
  await addon.sync(device);
  return {
    error,
    beforeSync: { hostSyncs: c1.hostSyncs - c0.hostSyncs, copiesFromDevice: c1.copiesFromDevice - c0.copiesFromDevice },
    afterSync: {
      hostSyncs: c2.hostSyncs - c0.hostSyncs,
      copiesFromDevice: c2.copiesFromDevice - c0.copiesFromDevice,
      bytesFromDevice: c2.bytesFromDevice - c0.bytesFromDevice,
    },
  };
}

// an embedding table of 4 rows of 8: row r all r + 1 (as bf16 integers)
const TABLE = { dtype: 'bf16', shape: [4, 8], data: Uint16Array.from({ length: 32 }, (_, i) => [0x3f80, 0x4000, 0x4040, 0x4080][Math.floor(i / 8)]) };
const idsOf = (...ids: number[]) => ({ dtype: 'i32', shape: [ids.length], data: Int32Array.from(ids) });

// qsaSelect over T 8 tokens, compress ratio 2 (4 blocks), one head of 4, width 2
const QSA = { r0: 0, tokens: 8, nHeads: 1, headDim: 4, compressRatio: 2, width: 2 };
function qsaInputs(qNanRow: number | null, kbNanBlock: number | null) {
  const q = new Uint16Array(8 * 4).fill(BF16_ONE);
  if (qNanRow !== null) q[qNanRow * 4 + 1] = BF16_NAN;
  const kb = new Uint16Array(4 * 4).fill(BF16_ONE);
  if (kbNanBlock !== null) kb[kbNanBlock * 4 + 2] = BF16_NAN;
  return [
    { dtype: 'bf16', shape: [8, 4], data: q },
    { dtype: 'bf16', shape: [4, 4], data: kb },
  ];
}

// attnCausalQsa over T 8 rows, one head of 4, ratio 2, width 2; a valid selection: row t lists
// blocks 0 .. min(2, (t + 1) / 2) - 1, then -1
const CAUSAL = { heads: 1, kvHeads: 1, headDim: 4, scale: 0.5, compressRatio: 2, width: 2 };
function causalInputs(corrupt: [row: number, entry: number, value: number][]) {
  const blocks = new Int32Array(8 * 2).fill(-1);
  for (let t = 0; t < 8; t++) for (let i = 0; i < Math.min(2, Math.floor((t + 1) / 2)); i++) blocks[t * 2 + i] = i;
  for (const [row, entry, value] of corrupt) blocks[row * 2 + entry] = value;
  const ones = () => ({ dtype: 'bf16', shape: [8, 4], data: new Uint16Array(32).fill(BF16_ONE) });
  return [ones(), ones(), ones(), { dtype: 'i32', shape: [8, 2], data: blocks }];
}

describe('device checks on the emulated GPU', () => {
  const emulated = useEmulatedGpu();

  /** the same nodes on the host device and the emulated GPU */
  async function both(
    inputs: Parameters<typeof observe>[1],
    build: (device: Device) => (ins: NativeTensor[]) => NativeTensor[],
    ranLast?: Parameters<typeof observe>[3],
  ) {
    return { host: await observe(null, inputs, build(null)), gpu: await observe(emulated.gpu, inputs, build(emulated.gpu), ranLast) };
  }

  /** no wait and no read inside the ops; at the sync one wait and one read of the checks' slots */
  function expectOneReadAtTheSync(o: Observed, slots: number) {
    expect(o.beforeSync).toEqual({ hostSyncs: 0, copiesFromDevice: 0 });
    expect(o.afterSync).toEqual({ hostSyncs: 1, copiesFromDevice: 1, bytesFromDevice: 8 * slots });
  }

  it('an embedding id outside the vocabulary, planted in a device buffer, is raised at the sync naming the node, with the host message, and leaves nothing allocated', async () => {
    const live = emulated.gpu.stats().liveTensors;
    const r = await both(
      [idsOf(0, 99, 1), TABLE],
      (d) =>
        ([ids, table]) =>
          enqueue(d, 'L0.embed (embed, rank 1)', 'embed', {}, [ids, table], [bf16([3, 8])]),
    );
    expect(r.host.error?.message).toBe('L0.embed (embed, rank 1): embed: token id 99 at position 1 is outside the vocabulary [0, 4)');
    expect(r.gpu.error?.message).toBe(r.host.error?.message);
    expect(r.gpu.error?.code).toBe(r.host.error?.code);
    expectOneReadAtTheSync(r.gpu, 1);
    expect(emulated.gpu.stats().liveTensors).toBe(live);
  });

  it('the first failing node in queue order is reported, and its first failing position, before a later host-detected error', async () => {
    const r = await both(
      [idsOf(0, 5, -2, 3), idsOf(7), TABLE],
      (d) =>
        ([a, b, table]) => {
          const [ea] = enqueue(d, 'first (embed, rank 0)', 'embed', {}, [a, table], [bf16([4, 8])]);
          const [eb] = enqueue(d, 'second (embed, rank 0)', 'embed', {}, [b, table], [bf16([1, 8])]);
          // a third failure the host finds as the node runs (a declared shape the kernel does not make)
          const [y] = enqueue(d, 'third (add, rank 0)', 'add', {}, [eb, eb], [bf16([8, 1])]);
          return [ea, eb, y];
        },
      (outs) => outs[1],
    );
    expect(r.host.error?.message).toBe('first (embed, rank 0): embed: token id 5 at position 1 is outside the vocabulary [0, 4)');
    expect(r.gpu.error?.message).toBe(r.host.error?.message);
    expectOneReadAtTheSync(r.gpu, 2);
  });

  it('the slots start clear after a failed sync: the next run succeeds, with the right rows', async () => {
    const failed = await observe(emulated.gpu, [idsOf(9), TABLE], ([ids, table]) =>
      enqueue(emulated.gpu, 'bad (embed, rank 0)', 'embed', {}, [ids, table], [bf16([1, 8])]),
    );
    expect(failed.error?.message).toMatch(/^bad \(embed, rank 0\): embed: token id 9 at position 0/);
    expectOneReadAtTheSync(failed, 1);
    const ids = addon.upload('i32', [2], Int32Array.of(3, 0), emulated.gpu);
    const table = addon.upload(TABLE.dtype, TABLE.shape, TABLE.data, emulated.gpu);
    const [e] = enqueue(emulated.gpu, 'good (embed, rank 0)', 'embed', {}, [ids, table], [bf16([2, 8])]);
    await addon.sync(emulated.gpu);
    expect([...new Uint16Array(addon.download(e))]).toEqual([...TABLE.data.slice(24, 32), ...TABLE.data.slice(0, 8)]);
    for (const t of [ids, table, e]) addon.free(t);
    // a run that checks nothing reads nothing back at its sync
    const clean = await observe(emulated.gpu, [TABLE], ([table]) => enqueue(emulated.gpu, 'sum (add, rank 0)', 'add', {}, [table, table], [bf16([4, 8])]));
    expect(clean.error).toBeNull();
    expect(clean.afterSync).toEqual({ hostSyncs: 1, copiesFromDevice: 0, bytesFromDevice: 0 });
  });

  it('a NaN planted in q reaches the QSA selection: the first row that scored NaN is raised at the sync with the host message', async () => {
    // kb's block 2 is NaN from row 5 on (rows see (row + 1) / 2 blocks); q's row 6 scores NaN at block 0
    const r = await both(
      qsaInputs(6, 2),
      (d) =>
        ([q, kb]) =>
          enqueue(d, 'L3.attn.qsa_select (qsaSelect, rank 0)', 'qsaSelect', QSA, [q, kb], [i32([8, 2])]),
    );
    expect(r.host.error?.message).toBe('L3.attn.qsa_select (qsaSelect, rank 0): qsaSelect: QSA indexer: row 5 block 2 scored NaN');
    expect(r.gpu.error?.message).toBe(r.host.error?.message);
    expect(r.gpu.error?.code).toBe(r.host.error?.code);
    expectOneReadAtTheSync(r.gpu, 1);
  });

  it("a NaN row's empty selection fails the attention after it too; the selection's error, first in queue order, is the one raised", async () => {
    const [q, kb] = qsaInputs(3, null);
    const [, k, v] = causalInputs([]);
    const r = await both([q, kb, k, v], (d) => ([qT, kbT, kT, vT]) => {
      const [blocks] = enqueue(d, 'L3.attn.qsa_select (qsaSelect, rank 0)', 'qsaSelect', QSA, [qT, kbT], [i32([8, 2])]);
      const [o] = enqueue(d, 'L3.attn.core (attnCausalQsa, rank 0)', 'attnCausalQsa', CAUSAL, [qT, kT, vT, blocks], [bf16([8, 4])]);
      return [blocks, o];
    });
    expect(r.host.error?.message).toBe('L3.attn.qsa_select (qsaSelect, rank 0): qsaSelect: QSA indexer: row 3 block 0 scored NaN');
    expect(r.gpu.error?.message).toBe(r.host.error?.message);
    expectOneReadAtTheSync(r.gpu, 3);
  });

  it('a malformed QSA selection is raised at the sync with the host message: the first bad row, its entry and value', async () => {
    for (const corrupt of [
      [
        [6, 0, -5],
        [3, 1, 7],
      ],
      [
        [2, 1, 0],
        [7, 1, 3],
      ],
    ] as [number, number, number][][]) {
      const r = await both(
        causalInputs(corrupt),
        (d) =>
          ([q, k, v, blocks]) =>
            enqueue(d, 'L1.attn (attnCausalQsa, rank 2)', 'attnCausalQsa', CAUSAL, [q, k, v, blocks], [bf16([8, 4])]),
      );
      expect(r.host.error?.message).toMatch(/^L1\.attn \(attnCausalQsa, rank 2\): attnCausalQsa: QSA selection: row [23] entry 1 is /);
      expect(r.gpu.error?.message).toBe(r.host.error?.message);
      expectOneReadAtTheSync(r.gpu, 2);
    }
  });

  it("a one-shot run (addon.run) raises the device check's error as the host device does", async () => {
    const run = async (d: Device) => {
      const ids = addon.upload('i32', [2], Int32Array.of(1, -1), d);
      const table = addon.upload(TABLE.dtype, TABLE.shape, TABLE.data, d);
      try {
        return await addon.run('embed', [ids, table], {}, 'exact', d).then(
          () => null,
          (e: Error) => e.message,
        );
      } finally {
        addon.free(ids);
        addon.free(table);
      }
    };
    const host = await run(null);
    expect(host).toBe('embed: token id -1 at position 1 is outside the vocabulary [0, 4)');
    expect(await run(emulated.gpu)).toBe(host);
  });
});
