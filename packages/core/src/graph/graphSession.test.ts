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
import { GraphBuilder } from './graphBuilder.ts';
import { cpuCollectiveKernel, cpuKernel } from '../reference/kernels/index.ts';
import { resolveWeightRows } from '../model/resolveWeight.ts';

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
      out.forEach((ports) => {
        track(ports);
      });
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

  it("refuses a graph with a node its op's declaration does not accept, however the graph was made (JSON, a rewrite), naming the node", async () => {
    const graph = JSON.parse(JSON.stringify(p.graph)) as typeof p.graph;
    const node = graph.nodes.find((n) => n.op === 'hcGatedMean' && n.rank === 1)!;
    const widened = { ...graph.values[node.outputs[0]!], shape: [...graph.values[node.outputs[0]!].shape] };
    widened.shape[1] += 1;
    graph.values[node.outputs[0]!] = widened;
    await expect(GraphSession.open(graph, CPU_DEVICE, loadWeight(p.weights), { backend: 'cpu' })).rejects.toThrow(
      new RegExp(
        `^cpu: node ${node.id} \\(hcGatedMean at L0\\.attn_hc\\.gated_mean\\): op hcGatedMean: output '\\w+' \\('${node.outputs[0]}'\\) is declared bf16\\[\\d+,\\d+\\], the op gives bf16`,
      ),
    );
    const unknownAttr = JSON.parse(JSON.stringify(p.graph)) as typeof p.graph;
    unknownAttr.nodes[node.id].attrs = { ...unknownAttr.nodes[node.id].attrs, bogus: 1 };
    await expect(GraphSession.open(unknownAttr, CPU_DEVICE, loadWeight(p.weights), { backend: 'cpu' })).rejects.toThrow(
      "op hcGatedMean: unknown attribute 'bogus'",
    );
  });

  it('refuses a weight whose checkpoint tensor does not match the declaration', async () => {
    const wrong: WeightSource = {
      ...p.weights,
      has: (n) => p.weights.has(n),
      info: (n) => p.weights.info(n),
      read: async () => ({ dtype: 'bf16', shape: [1], data: new Uint16Array(1) }),
    };
    await expect(GraphSession.open(p.graph, CPU_DEVICE, loadWeight(wrong), { backend: 'cpu' })).rejects.toThrow(
      /cpu: weight '.+' is bf16\[1\], the graph declares bf16\[/,
    );
  });

  it('reads a kept value only after the runs asked for before it (a later run frees it)', async () => {
    const { device, counts } = countingDevice();
    // a download that yields before copying, as a GPU read-back does
    const slow: DeviceOps<Tensor> = {
      ...device,
      download: async (_d, t) => {
        await new Promise((r) => setTimeout(r, 5));
        if (!counts.live.has(t)) throw new Error('read a freed handle');
        return t;
      },
    };
    const session = await GraphSession.open(p.graph, slow, loadWeight(p.weights), { backend: 'cpu' });
    const id = p.outputs.streamsPerStep[3][1];
    await session.run(p.feeds, { keepOnDevice: [id] });
    const next = session.run(p.feeds, { keep: [id], keepOnDevice: [id] });
    const read = session.read(id);
    const [r, v] = await Promise.all([next, read]);
    expect(v.data).toEqual(r.values.get(id)!.data);
    await session.dispose();
  });
});

describe('GraphSession reading weights on demand, and runs handing back handles', () => {
  it('reads each weight when a node first needs it, frees it after its last use, and gives the resident bits', async () => {
    const { device, counts } = countingDevice();
    const session = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'cpu', weightsOnDemand: true });
    // nothing read at open
    expect(counts.upload).toBe(0);
    const weights = Object.values(p.graph.values).filter((v) => v.kind === 'weight').length;
    const a = await session.run(p.feeds);
    expect(counts.upload).toBe(weights + p.graph.inputs.length);
    // every weight gone after the run: none stays resident
    expect(counts.live.size).toBe(0);
    const once = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights);
    for (const id of p.graph.outputs) expect(a.values.get(id)!.data).toEqual(once.values.get(id)!.data);
    await session.dispose();
  });

  it('hands the returned values over as handles, not freed, and takes given handles for inputs', async () => {
    const { device, counts } = countingDevice();
    const session = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'cpu' });
    const uploads = counts.upload;
    const given = new Map(p.graph.inputs.map((id) => [id, p.feeds.get(id)!]));
    const held = await session.runHeld(p.feeds, { given });
    // no input uploaded, and the outputs still live on the device: the caller's now
    expect(counts.upload).toBe(uploads);
    for (const id of p.graph.outputs) expect(counts.live.has(held.values.get(id)!)).toBe(true);
    const plain = await session.run(p.feeds);
    for (const id of p.graph.outputs) expect(held.values.get(id)!.data).toEqual(plain.values.get(id)!.data);
    await session.dispose();
  });
});

describe('GraphSession row-gathered weights', () => {
  // table = [a; b] (3 + 2 rows of 2 columns), read only at the rows the ids name
  const a = Uint16Array.from([10, 11, 20, 21, 30, 31]);
  const b = Uint16Array.from([40, 41, 50, 51]);
  const g = new GraphBuilder(1);
  const ids = g.input('ids', [2, 2], 'i32');
  const table = g.weight({ name: 'table', concat: ['a', 'b'], gather: 'rows' }, [5, 2]);
  const e = g.value('e', [2, 4], 'bf16', 0);
  g.node({ op: 'pleNgramEmbed', rank: 0, inputs: [ids, table], outputs: [e], attrs: {}, scope: 'ple', layer: 0 });
  g.markOutput(e);
  const graph = g.build();
  const feeds = new Map<string, Tensor>([[ids, { dtype: 'i32', shape: [2, 2], data: Int32Array.from([4, 1, 2, 4]) }]]);
  const source = (dtype: 'bf16' | 'f32', reads: string[]): WeightSource => {
    const parts: Record<string, Uint16Array> = { a, b };
    return {
      has: (n) => n in parts,
      info: (n) => ({ shape: [parts[n].length / 2, 2], dtype }),
      read: async (n, slice) => {
        reads.push(`${n}${JSON.stringify(slice?.ranges)}`);
        const [[lo, hi]] = slice!.ranges;
        const rows = parts[n].subarray(lo * 2, hi * 2);
        return { dtype, shape: [hi - lo, 2], data: dtype === 'bf16' ? rows.slice() : Float32Array.from(rows) };
      },
    };
  };
  const open = (w: WeightSource) => GraphSession.open(graph, CPU_DEVICE, (decl, rows) => resolveWeightRows(w, decl.weight!, rows), { backend: 'cpu' });

  it('reads only the named rows, across the parts of the concatenation', async () => {
    const reads: string[] = [];
    const s = await open(source('bf16', reads));
    const r = await s.run(feeds);
    // rows 4, 1, 2, 4: b's row 1, a's rows 1 and 2, b's row 1
    expect([...(r.values.get(e)!.data as Uint16Array)]).toEqual([50, 51, 20, 21, 30, 31, 50, 51]);
    expect(reads).toEqual(['a[[1,3]]', 'b[[1,2]]']);
    await s.dispose();
  });

  it('gives a device that runs the gather itself (DeviceOps.runsHostOp) only the named rows, the ids renumbered', async () => {
    const reads: string[] = [];
    const seen: (Tensor | null)[][] = [];
    const device: DeviceOps<Tensor> = {
      ...CPU_DEVICE,
      runsHostOp: () => true,
      runNode: (n, ins, inDecls, outs) => {
        seen.push(ins);
        return CPU_DEVICE.runNode(n, ins, inDecls, outs);
      },
    };
    const s = await GraphSession.open(graph, device, (decl, rows) => resolveWeightRows(source('bf16', reads), decl.weight!, rows), { backend: 'cpu' });
    const r = await s.run(feeds);
    expect([...(r.values.get(e)!.data as Uint16Array)]).toEqual([50, 51, 20, 21, 30, 31, 50, 51]);
    expect(reads).toEqual(['a[[1,3]]', 'b[[1,2]]']);
    // the device saw the three rows read and the ids into them, not the table
    expect([...seen[0][0]!.data]).toEqual([2, 0, 1, 2]);
    expect(seen[0][1]!.shape).toEqual([3, 2]);
    await s.dispose();
  });

  it('refuses rows that do not match the declaration, naming the weight', async () => {
    const s = await open(source('f32', []));
    await expect(s.run(feeds)).rejects.toThrow("cpu: rows of weight 'table' is f32[3,2], the graph declares bf16[3,2] for 'w:table'");
    await s.dispose();
  });
});

describe('GraphSession with a device that records runs (DeviceOps.record)', () => {
  /**
   * The CPU device plus a recording: a replay runs every node synchronously with the CPU
   * kernels, in the program's order, on the weights it was given (as a native queue would,
   * later); what the loop asked is counted.
   */
  function recordingDevice(canRecord = true) {
    const calls = { record: 0, replay: 0, release: 0, runNode: 0, outputs: [] as string[][] };
    const device: DeviceOps<Tensor> = {
      ...CPU_DEVICE,
      runNode: async (...a) => {
        calls.runNode++;
        return CPU_DEVICE.runNode(...a);
      },
      record: (program, weights) => {
        calls.record++;
        calls.outputs.push([...program.outputs]);
        if (!canRecord) return null;
        const { graph } = program;
        return {
          replay: (inputs) => {
            calls.replay++;
            const env = new Map<string, Tensor>(weights);
            program.inputs.forEach((id, i) => {
              env.set(id, inputs[i]);
            });
            for (const node of graph.nodes) {
              const ins = node.inputs.map((id) => (id === null ? null : env.get(id)!));
              if (node.rank === null) {
                const ports = ins.length / graph.tp;
                const perRank = Array.from({ length: graph.tp }, (_, r) => ins.slice(r * ports, (r + 1) * ports) as Tensor[]);
                const out = cpuCollectiveKernel(node.op)(perRank, { ...node.attrs, tp: graph.tp });
                const outPorts = node.outputs.length / graph.tp;
                node.outputs.forEach((id, k) => {
                  env.set(id!, out[Math.floor(k / outPorts)][k % outPorts]);
                });
              } else {
                cpuKernel(node.op)(ins, node.attrs).forEach((t, k) => {
                  node.outputs[k] !== null && t !== null && env.set(node.outputs[k]!, t);
                });
              }
            }
            return program.outputs.map((id) => env.get(id)!);
          },
          release: () => {
            calls.release++;
          },
        };
      },
    };
    return { device, calls };
  }

  it('records once per set of returned values, replays every run in one call, and gives the node-by-node bits', async () => {
    const { device, calls } = recordingDevice();
    const session = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'recording cpu' });
    const expected = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights);
    // recorded when the session opens
    expect(calls.record).toBe(1);
    const a = await session.run(p.feeds);
    const b = await session.run(p.feeds);
    expect(calls).toMatchObject({ record: 1, replay: 2, runNode: 0 });
    expect([a.stats.engine!.recorded, b.stats.engine!.recorded]).toEqual([true, true]);
    for (const [id, t] of expected.values) {
      expect(a.values.get(id)!.data, id).toEqual(t.data);
      expect(b.values.get(id)!.data, id).toEqual(t.data);
    }
    // the same stats as the node-by-node loop's (they come from the graph)
    expect(a.stats.hcRowsPerRank).toEqual(expected.stats.hcRowsPerRank);
    expect(a.stats.commBytesPerRank).toEqual(expected.stats.commBytesPerRank);
    // another value asked for is another recording; the progress callback hears the whole run once
    const seen: number[][] = [];
    const extra = p.graph.nodes[3].outputs[0]!;
    const c = await session.run(p.feeds, { keep: [extra], onNode: (i, n) => seen.push([i, n]) });
    expect(c.values.has(extra)).toBe(true);
    expect(calls.record).toBe(2);
    expect(calls.outputs[1]).toEqual([...p.graph.outputs, extra]);
    expect(seen).toEqual([[p.graph.nodes.length, p.graph.nodes.length]]);
    await session.dispose();
    expect(calls.release).toBe(2);
  });

  it("runs node by node where the device cannot record, and for keep 'all' and syncEachNode", async () => {
    const refusing = recordingDevice(false);
    const s1 = await GraphSession.open(p.graph, refusing.device, loadWeight(p.weights), { backend: 'recording cpu' });
    await s1.run(p.feeds);
    await s1.run(p.feeds);
    // asked once: a device that cannot record is not asked again for the same run
    expect(refusing.calls).toMatchObject({ record: 1, replay: 0, runNode: 2 * p.graph.nodes.filter((n) => n.rank !== null).length });
    await s1.dispose();
    const { device, calls } = recordingDevice();
    const s2 = await GraphSession.open(p.graph, device, loadWeight(p.weights), { backend: 'recording cpu' });
    expect((await s2.run(p.feeds, { keep: 'all' })).stats.engine!.recorded).toBe(false);
    expect((await s2.run(p.feeds, { syncEachNode: true })).stats.engine!.recorded).toBe(false);
    // recorded once, when the session opened (a plain run's), and never replayed
    expect(calls).toMatchObject({ record: 1, replay: 0 });
    expect(calls.runNode).toBeGreaterThan(0);
    await s2.dispose();
  });
});
