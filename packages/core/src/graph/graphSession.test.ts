import { describe, expect, it } from 'vitest';
import type { DeviceOps } from './deviceOps.ts';
import { CPU_DEVICE, CpuBackend } from '../reference/cpuBackend.ts';
import { GraphSession } from './graphSession.ts';
import { resolveWeight } from '../model/resolveWeight.ts';
import { preparePrefill } from '../model/prefill.ts';
import { TINY } from '../config/presets.ts';
import { STAND_IN_SUB_LAYERS } from '../layers/standIn/standInSubLayers.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { WeightSource } from '../model/weightSource.ts';
import { runOnce } from '../backend/backend.ts';

// The one execution loop: weights uploaded once per session, values freed after their last
// use, values kept on the device on request, errors naming the node.
const p = preparePrefill({ config: TINY, tokens: 13, tp: 2, sp: 'on', reduce: 'ring', seed: 4, subLayers: STAND_IN_SUB_LAYERS });

/** The CPU device, counting what the loop asks of it. */
function countingDevice(): { device: DeviceOps<Tensor>; counts: { upload: number; free: number; live: Set<Tensor>; peak: number } } {
  const counts = { upload: 0, free: 0, live: new Set<Tensor>(), peak: 0 };
  const track = (ts: (Tensor | null)[]) => {
    for (const t of ts) if (t) counts.live.add(t);
    counts.peak = Math.max(counts.peak, counts.live.size);
    return ts;
  };
  const device: DeviceOps<Tensor> = {
    upload: async (_decl, t) => {
      counts.upload++;
      // a copy, so each upload is a distinct handle (as on a GPU)
      const copy = { ...t, data: t.data.slice() } as Tensor;
      track([copy]);
      return copy;
    },
    runNode: async (n, i, id, o) => track(await CPU_DEVICE.runNode(n, i, id, o)),
    runCollective: async (n, i, id, o) => {
      const out = await CPU_DEVICE.runCollective(n, i, id, o);
      out.forEach((ports) => track(ports));
      return out;
    },
    download: CPU_DEVICE.download,
    free: (t) => {
      counts.free++;
      counts.live.delete(t);
    },
  };
  return { device, counts };
}

const loadWeight = (w: WeightSource) => (decl: Parameters<Parameters<typeof GraphSession.open>[2]>[0]) => resolveWeight(w, decl.weight!);

describe('GraphSession', () => {
  it('uploads each weight once and runs many times to the same bits as a one-shot run', async () => {
    const { device, counts } = countingDevice();
    const session = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'counting cpu' });
    const weights = Object.values(p.graph.values).filter((v) => v.kind === 'weight').length;
    expect(counts.upload).toBe(weights);
    const a = await session.run(p.feeds);
    const b = await session.run(p.feeds);
    // the second run uploads only the graph inputs again
    expect(counts.upload).toBe(weights + 2 * p.graph.inputs.length);
    const once = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights);
    for (const id of p.graph.outputs) {
      expect(a.values.get(id)!.data).toEqual(once.values.get(id)!.data);
      expect(b.values.get(id)!.data).toEqual(once.values.get(id)!.data);
    }
    // after a run only the weights stay on the device; dispose frees them too
    expect(counts.live.size).toBe(weights);
    expect(counts.peak).toBeLessThan(Object.keys(p.graph.values).length / 2);
    await session.dispose();
    expect(counts.live.size).toBe(0);
    await expect(session.run(p.feeds)).rejects.toThrow('counting cpu: run() after dispose()');
  });

  it('keeps values on the device on request until the next run, and reads them back', async () => {
    const { device, counts } = countingDevice();
    const session = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'cpu' });
    const id = p.outputs.streamsPerStep[3][1];
    const r = await session.run(p.feeds, { keep: [id], keepOnDevice: [id] });
    expect(await session.read(id)).toEqual(r.values.get(id));
    const resident = counts.live.size;
    await session.run(p.feeds);
    expect(counts.live.size).toBe(resident - 1);
    await expect(session.read(id)).rejects.toThrow(`cpu: value '${id}' was not kept on the device by the last run`);
    await session.dispose();
  });

  it('names the node, op and rank of a failing kernel, and a value that is not in the graph', async () => {
    const failing: DeviceOps<Tensor> = {
      ...CPU_DEVICE,
      runNode: async (n, i, id, o) => {
        if (n.op === 'hcGatedMean' && n.rank === 1) throw new Error('boom');
        return CPU_DEVICE.runNode(n, i, id, o);
      },
    };
    const session = await GraphSession.open(p.graph, failing, loadWeight(p.weights), { backend: 'cpu' });
    await expect(session.run(p.feeds)).rejects.toThrow(/^L0\.attn_hc\.gated_mean \(hcGatedMean, rank 1\): boom$/);
    await expect(session.run(p.feeds, { keep: ['nope'] })).rejects.toThrow("cpu: requested value 'nope' is not in the graph");
    await session.dispose();
  });

  it('refuses a weight whose checkpoint tensor does not match the declaration', async () => {
    const wrong: WeightSource = { ...p.weights, has: (n) => p.weights.has(n), info: (n) => p.weights.info(n), read: async () => ({ dtype: 'bf16', shape: [1], data: new Uint16Array(1) }) };
    await expect(GraphSession.open(p.graph, CPU_DEVICE, loadWeight(wrong), { backend: 'cpu' })).rejects.toThrow(/cpu: weight '.+' is bf16\[1\], the graph declares bf16\[/);
  });
});
