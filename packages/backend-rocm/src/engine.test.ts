// The engine's execution model on the devices this machine has (host, emulated): runs enqueue
// their nodes and wait once, memory comes from the pool the session reserved, nothing is
// zeroed that the math does not need, and what crosses to and from the device is counted.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bytesPerElement, getOpDef, numel, type Backend, type Graph } from '@hcsp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, ENGINE_CASES, prefillOf, referenceOutputs, repeatedRuns } from '../../../test/support/engineRuns.ts';
import { loadNativeAddon, type GpuDevice } from './nativeAddon.ts';
import { createRocmBackend, type RocmBackend } from './rocmBackend.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const POISON_CHILD = join(ROOT, 'test/support/poisonedRunChild.ts');

/**
 * The slots a run's device checks take on a GPU device (native/src/gpu/device_checks.h), each
 * read back once, 8 bytes: embed 1; qsaSelect 1 when it scores (rows before the last token,
 * blocks to score); attnCausalQsa 2 (the bad entry's index and value) when it has rows;
 * pleNgramIds 1 (its tokens; the products' check is only made for multipliers that can leave
 * int64, never a config's) and pleNgramEmbedShard 1 (its ids) when they have rows.
 */
function deviceCheckSlots(g: Graph): number {
  let slots = 0;
  for (const n of g.nodes) {
    const rows = (port: number): number => g.values[n.inputs[port]!].shape[0];
    if (n.op === 'embed' && rows(0) > 0) slots += 1;
    if (n.op === 'qsaSelect') {
      const { r0, tokens, compressRatio } = n.attrs as { r0: number; tokens: number; compressRatio: number };
      if (Math.min(rows(0), tokens - r0) > 0 && Math.floor(tokens / compressRatio) > 0) slots += 1;
    }
    if (n.op === 'attnCausalQsa' && rows(0) > 0) slots += 2;
    if ((n.op === 'pleNgramIds' || n.op === 'pleNgramEmbedShard') && rows(0) > 0) slots += 1;
  }
  return slots;
}

describe.each(['host', 'emulated'] as const)('the engine on the %s device', (device) => {
  let backend: RocmBackend;
  beforeAll(async () => {
    backend = await createRocmBackend({ device, kernels: 'exact' });
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  for (const c of ENGINE_CASES) {
    it(`${c.name}: a second run allocates, frees and zeroes nothing on the device, moves the inputs in and the outputs out, and gives the reference's bits`, async () => {
      const p = prefillOf(c.options);
      const reference = await referenceOutputs(p);
      const [first, second] = await repeatedRuns(backend as Backend, p, 2);
      for (const [id, t] of reference) {
        expect(bytesOf(first.values.get(id)!).equals(bytesOf(t)), `run 1, ${id}`).toBe(true);
        expect(bytesOf(second.values.get(id)!).equals(bytesOf(t)), `run 2, ${id}`).toBe(true);
      }
      const d = second.engine.device!;
      expect(d.deviceAllocations).toBe(0);
      expect(d.deviceFrees).toBe(0);
      // a GPU device warms a recording up when the session opens (a dry run: every block a run
      // takes, its kernels' scratch included, is in the pool before the first run), so its
      // first run allocates nothing either; the host device's kernels compute where they allocate
      if (device === 'emulated' && second.engine.recorded) expect(first.engine.device!.deviceAllocations).toBe(0);
      // the zeros the math needs: the host MoE's routed accumulator (a token no local expert
      // serves adds nothing), and the padding rows a shard or pad adds past T
      const moeNodes = p.graph.nodes.filter((n) => n.op === 'moeExperts').length;
      const rowsOf = (id: string | null): number => p.graph.values[id!].shape[0];
      const padded = p.graph.nodes.filter((n) => {
        if (n.op === 'pad') return rowsOf(n.outputs[0]) > rowsOf(n.inputs[0]);
        if (n.op !== 'shard') return false;
        const [rows, chunk, rank] = [rowsOf(n.inputs[0]), rowsOf(n.outputs[0]), n.attrs.rank as number];
        return Math.min((rank + 1) * chunk, rows) - Math.min(rank * chunk, rows) < chunk;
      }).length;
      if (c.options.tokens % c.options.tp !== 0) expect(padded).toBeGreaterThan(0);
      expect(d.memsets).toBe((device === 'host' ? moeNodes : 0) + padded);
      const bytes = (ids: Iterable<string>): number =>
        [...ids].reduce((s, id) => s + numel(p.graph.values[id].shape) * bytesPerElement(p.graph.values[id].dtype), 0);
      const t = second.engine.transfers;
      expect(t.inputBytes).toBe(bytes(p.graph.inputs));
      expect(t.outputBytes).toBe(bytes(p.graph.outputs));
      // host ops stage their inputs and outputs through the host, but those the device has a
      // kernel for (the n-gram hash: DeviceOps.runsHostOp); the gathered PLE table's lookup stays one
      const kernels = loadNativeAddon().kernels();
      const onDevice = new Set(device === 'host' ? kernels.perRank : kernels.gpuPerRank);
      const hostOps = p.graph.nodes.filter((n) => n.rank !== null && getOpDef(n.op).host && !onDevice.has(n.op));
      expect(t.stagingToDeviceBytes).toBe(bytes(hostOps.flatMap((n) => n.outputs.filter((id): id is string => id !== null))));
      // with every node on the device the run is recorded once and replayed in one call: nothing
      // staged, one wait at the end; a host op (the gathered table's lookup) runs node by node,
      // its inputs read back (a wait each) and its outputs uploaded
      expect(second.engine.recorded).toBe(hostOps.length === 0);
      if (hostOps.length === 0) {
        expect(t.stagingToDeviceBytes + t.stagingFromDeviceBytes).toBe(0);
        expect(d.hostSyncs).toBe(1);
      } else {
        expect(d.hostSyncs).toBeGreaterThanOrEqual(1);
        expect(d.hostSyncs).toBeLessThanOrEqual(1 + hostOps.length);
      }
      // every byte the device moved is one of those: no op copies to or from the host inside a
      // run (issue 20 item 3); on a GPU device the device checks' verdicts come back at the waits,
      // each slot once (the MoE lays out its rows, and the collectives take their tables, on the device)
      expect(d.bytesToDevice).toBe(t.inputBytes + t.stagingToDeviceBytes);
      expect(d.bytesFromDevice).toBe(t.outputBytes + t.stagingFromDeviceBytes + (device === 'host' ? 0 : 8 * deviceCheckSlots(p.graph)));
      expect(d.kernelLaunches).toBeGreaterThanOrEqual(p.graph.nodes.length - hostOps.length - p.graph.nodes.filter((n) => n.rank === null).length);
      expect(second.engine.memoryPlan.blocks).toBeGreaterThan(0);
      expect(second.engine.enqueueSeconds + second.engine.waitSeconds).toBeGreaterThan(0);
    }, 120_000);
  }

  it("a queued node's error is raised at the sync, naming the node; the nodes after it are skipped (or, after a device check, ran) and nothing stays allocated", async () => {
    const addon = loadNativeAddon();
    const gpu: GpuDevice | null = backend.gpu;
    const memory = gpu ?? addon;
    await addon.sync(gpu);
    const before = memory.stats().liveTensors;
    const ids = addon.upload('i32', [3], Int32Array.of(0, 99, 1), gpu);
    const table = addon.upload('bf16', [4, 8], new Uint16Array(32), gpu);
    const decl = { dtype: 'bf16', shape: [3, 8] };
    const [e] = addon.enqueueNode(addon.prepareNode('layers.0.embed (embed, rank 1)', 'embed', {}, 'exact', gpu, [decl], false), [
      ids,
      table,
    ]) as (typeof ids)[];
    const [y] = addon.enqueueNode(addon.prepareNode('layers.0.next (add, rank 1)', 'add', {}, 'exact', gpu, [decl], false), [e, e]) as (typeof ids)[];
    await expect(addon.sync(gpu)).rejects.toThrow(/^layers\.0\.embed \(embed, rank 1\): embed: token id 99 at position 1 is outside the vocabulary \[0, 4\)/);
    if (device === 'host') {
      // the host device checks the ids as the node runs, and skips the nodes after it
      expect(y.computed).toBe(false);
      expect(() => addon.download(y)).toThrow(/not computed/);
    } else {
      // a kernel checks them (native/src/gpu/device_checks.h): as on a GPU, whose stream holds
      // the later nodes' kernels before the check's verdict reaches the host, they ran
      expect(y.computed).toBe(true);
    }
    // the latch is cleared: the queue runs again
    const [z] = addon.enqueueNode(addon.prepareNode('after', 'add', {}, 'exact', gpu, [{ dtype: 'bf16', shape: [4, 8] }], false), [
      table,
      table,
    ]) as (typeof ids)[];
    await addon.sync(gpu);
    expect(z.computed).toBe(true);
    for (const h of [ids, table, e, y, z]) addon.free(h);
    await addon.sync(gpu);
    expect(memory.stats().liveTensors).toBe(before);
  });

  it('a kernel producing another shape than declared fails at the sync, naming the node and both shapes', async () => {
    const addon = loadNativeAddon();
    const gpu = backend.gpu;
    const a = addon.upload('bf16', [2, 4], new Uint16Array(8), gpu);
    const [y] = addon.enqueueNode(addon.prepareNode('L1.mlp.add (add, rank 0)', 'add', {}, 'exact', gpu, [{ dtype: 'bf16', shape: [4, 2] }], false), [
      a,
      a,
    ]) as (typeof a)[];
    await expect(addon.sync(gpu)).rejects.toThrow(/^L1\.mlp\.add \(add, rank 0\): add: produced bf16\[2,4\] for output port 0, declared bf16\[4,2\]/);
    addon.free(a);
    addon.free(y);
  });
});

describe('HCSP_POISON_UNINITIALIZED: no kernel reads memory it did not write', () => {
  it.each(['host', 'emulated'])('on the %s device every case gives the reference bits with new tensors filled with 0xFF', (device) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', POISON_CHILD, device], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, HCSP_POISON_UNINITIALIZED: '1' },
      timeout: 300_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(ENGINE_CASES.length);
    for (const line of lines) expect(line).toMatch(/: equal$/);
  }, 320_000);
});
