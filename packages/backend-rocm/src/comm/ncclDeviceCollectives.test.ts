import { rmSync } from 'node:fs';
import {
  commBytesOf,
  nodeLabel,
  type Communicator,
  type Graph,
  type GraphNode,
  type OpName,
  type PreparedGraph,
  RING_DEFAULT_CHANNELS,
  RING_DEFAULT_CHUNK_ELEMS,
  type RunResult,
  type Tensor,
  type ValueDecl,
} from '@hcsp/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_CUDA, FAKE_HIP, FAKE_NCCL, FakeGpuFolder, saveEnv } from '../../../../test/support/fakeGpuLibraries.ts';
import { NO_WEIGHTS } from '../../../../test/support/noWeights.ts';
import { createRocmBackend, type RocmBackend } from '../rocmBackend.ts';
import { CollectiveWatchdog, type StuckCall } from './collectiveWatchdog.ts';
import { NcclCommunicator, NcclError } from './ncclCommunicator.ts';

// A rank's collective nodes on device buffers (issue 20, item 4), over the fake HIP/CUDA
// runtimes and the fake RCCL/NCCL library (test/support/fakeGpuLibraries.ts): the rocm device
// enqueues ncclAllReduce / ncclReduceScatter / ncclAllGather on its stream with the run's own
// device tensors. The fakes log the device address of every host<->device copy
// (FAKE_LOG_ADDRESSES) and the buffers each collective is handed, so the log follows one buffer
// from the input's upload through the three collectives to the output's download: no staging
// buffer, no copy, no per-collective sync. The same graph through a communicator the device
// cannot use (host path: download, collective() on host tensors, upload) gives the same bytes.

const fake = new FakeGpuFolder('hcsp-nccl-device-');
const FAKE_ENV = ['HCSP_HIP_LIB', 'HCSP_CUDA_LIB', 'HCSP_NCCL_LIBRARY', 'FAKE_GPU_LOG', 'FAKE_LOG_ADDRESSES', 'FAKE_NCCL_ASYNC', 'FAKE_NCCL_SLEEP_MS'];
const restoreEnv = saveEnv(FAKE_ENV);
const opened: { backend: RocmBackend; comm: NcclCommunicator; sessions: PreparedGraph[] }[] = [];

beforeAll(() => {
  fake.create();
  fake.compile('fakehip', FAKE_HIP);
  fake.compile('fakecuda', FAKE_CUDA);
  fake.compile('fakercclhip', FAKE_NCCL);
  fake.compile('fakencclcuda', FAKE_NCCL, ['-DFAKE_CUDA']);
  fake.codeObjects('objects', 'gfx942', { 'basic.hsaco': ['hcsp_add_bf16'] });
  fake.codeObjects('objects', 'sm_90', { 'basic.cubin': ['hcsp_add_bf16'] });
}, 60_000);

afterAll(() => fake.remove());

afterEach(async () => {
  for (const o of opened.splice(0)) {
    for (const s of o.sessions) await s.dispose();
    if (o.comm.state() === 'open') await o.comm.destroy();
    await o.backend.dispose();
  }
  restoreEnv();
  rmSync(fake.log(), { force: true });
});

const KINDS = [
  {
    kind: 'hip' as const,
    runtimeEnv: 'HCSP_HIP_LIB',
    runtimeLib: 'fakehip.so',
    ncclLib: 'fakercclhip.so',
    device: 0,
    sync: 'hipStreamSynchronize',
    alloc: 'hipMalloc',
  },
  {
    kind: 'cuda' as const,
    runtimeEnv: 'HCSP_CUDA_LIB',
    runtimeLib: 'fakecuda.so',
    ncclLib: 'fakencclcuda.so',
    device: 1,
    sync: 'cuStreamSynchronize',
    alloc: 'cuMemAlloc',
  },
];

/**
 * Rank `rank`'s part of a tp-`tp` graph: x -> allReduce -> b -> reduceScatter -> c -> allGather -> d,
 * and e = d + d on the device; outputs d and e.
 */
function rankPart(tp: number, rank: number, rows: number, cols: number): Graph {
  const v = (id: string, shape: number[], kind: ValueDecl['kind'], r: number | null): ValueDecl => ({ id, shape, dtype: 'bf16', rank: r, kind });
  const values: Record<string, ValueDecl> = {
    x: v('x', [rows, cols], 'input', null),
    b: v('b', [rows, cols], 'intermediate', rank),
    c: v('c', [rows / tp, cols], 'intermediate', rank),
    d: v('d', [rows, cols], 'intermediate', rank),
    e: v('e', [rows, cols], 'intermediate', rank),
  };
  const node = (id: number, op: OpName, inputs: string[], outputs: string[], attrs: Record<string, unknown>, r: number | null, scope: string): GraphNode => ({
    id,
    op,
    rank: r,
    inputs,
    outputs,
    attrs,
    scope,
    layer: 0,
  });
  return {
    tp,
    rank,
    values,
    nodes: [
      node(1, 'allReduce', ['x'], ['b'], { algorithm: 'ring', channels: RING_DEFAULT_CHANNELS, chunkElems: RING_DEFAULT_CHUNK_ELEMS }, null, 'test.ar'),
      node(2, 'reduceScatter', ['b'], ['c'], { algorithm: 'ordered' }, null, 'test.rs'),
      node(3, 'allGather', ['c'], ['d'], {}, null, 'test.ag'),
      node(4, 'add', ['d', 'd'], ['e'], {}, rank, 'test.add'),
    ],
    inputs: ['x'],
    outputs: ['d', 'e'],
    meta: {},
  };
}

function bf16(shape: number[], seed: number): Tensor {
  let s = seed >>> 0;
  const data = new Uint16Array(shape.reduce((a, b) => a * b, 1));
  // finite values (the add kernel sums them), of both signs
  for (let i = 0; i < data.length; i++) data[i] = (((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) >>> 16) & 0x3fff) | (i % 3 === 0 ? 0x8000 : 0) | 0x3c00;
  return { dtype: 'bf16', shape, data };
}
const bytes = (t: Tensor | undefined) => Array.from(new Uint8Array(t!.data.buffer, t!.data.byteOffset, t!.data.byteLength));

for (const K of KINDS) {
  describe(`collectives on device buffers: NCCL on the ${K.kind} device (fake libraries)`, () => {
    const setUp = async (tp = 1, rank = 0, watchdog?: CollectiveWatchdog) => {
      Object.assign(process.env, {
        [K.runtimeEnv]: fake.lib(K.runtimeLib),
        HCSP_NCCL_LIBRARY: fake.lib(K.ncclLib),
        FAKE_GPU_LOG: fake.log(),
        FAKE_LOG_ADDRESSES: '1',
      });
      const backend = await createRocmBackend({ device: K.kind, codeObjects: fake.lib('objects') });
      const gpu = backend.gpu!;
      const comm = await NcclCommunicator.open({ gpu, rank, size: tp, uniqueId: NcclCommunicator.uniqueId(gpu), watchdog });
      const o = { backend, comm, sessions: [] as PreparedGraph[] };
      opened.push(o);
      const open = async (graph: Graph, communicator: Communicator) => {
        const s = await backend.prepare(graph, NO_WEIGHTS, { communicator });
        o.sessions.push(s);
        return s;
      };
      return { backend, comm, open };
    };
    /** the log's lines written while fn ran */
    const logged = async <T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[] }> => {
      const before = fake.logText().length;
      const result = await fn();
      return { result, lines: fake.logText().slice(before).split('\n').filter(Boolean) };
    };
    const field = (line: string | undefined, name: string) => line?.match(new RegExp(`${name}=(\\S+)`))?.[1];

    it("a world of one: the collectives get the planned buffers on the device's stream, no staging, one sync; results equal the host path's", async () => {
      const { comm, open } = await setUp();
      const graph = rankPart(1, 0, 4, 8);
      const x = bf16([4, 8], 11);
      const device = await open(graph, comm);
      const runs: { result: RunResult; lines: string[] }[] = [];
      for (let i = 0; i < 2; i++) runs.push(await logged(() => device.run(new Map([['x', x]]))));
      for (const { result, lines } of runs) {
        const up = lines.filter((l) => l.startsWith('copy kind=1'));
        const down = lines.filter((l) => l.startsWith('copy kind=2'));
        const ar = lines.find((l) => l.startsWith('ncclAllReduce '));
        const rs = lines.find((l) => l.startsWith('ncclReduceScatter '));
        const ag = lines.find((l) => l.startsWith('ncclAllGather '));
        expect(ar).toContain(`ncclAllReduce send=32 recv=32 type=9 op=0 stream=runtime nranks=1 rank=0 device=${K.device} `);
        expect(rs).toContain(`ncclReduceScatter send=32 recv=32 type=9 op=0 stream=runtime nranks=1 rank=0 device=${K.device} `);
        expect(ag).toContain(`ncclAllGather send=32 recv=32 type=9 op=0 stream=runtime nranks=1 rank=0 device=${K.device} `);
        // one buffer followed: the input's upload -> allReduce -> reduceScatter -> allGather -> d's download
        expect(up).toHaveLength(1);
        expect(field(ar, 'sendbuf')).toBe(field(up[0], 'device'));
        expect(field(rs, 'sendbuf')).toBe(field(ar, 'recvbuf'));
        expect(field(ag, 'sendbuf')).toBe(field(rs, 'recvbuf'));
        expect(down.map((l) => field(l, 'device'))).toContain(field(ag, 'recvbuf'));
        // nothing allocated for them (the pool's blocks), no stream sync before the last of them (the
        // run's one comes after; hostSyncs below), whose copy back the download's own then waits for
        expect(lines.filter((l) => l.startsWith(K.alloc))).toEqual([]);
        expect(lines.findIndex((l) => l.startsWith(K.sync))).toBeGreaterThan(lines.indexOf(ag!));
        const engine = result.stats.engine!;
        expect(engine.transfers).toEqual({ inputBytes: 64, outputBytes: 128, stagingToDeviceBytes: 0, stagingFromDeviceBytes: 0 });
        expect(engine.device).toMatchObject({ copiesToDevice: 1, bytesToDevice: 64, copiesFromDevice: 2, bytesFromDevice: 128, hostSyncs: 1 });
        expect(bytes(result.values.get('d'))).toEqual(bytes(x));
      }
      expect(runs[1].result.stats.engine!.device).toMatchObject({ deviceAllocations: 0, deviceFrees: 0 });
      // the host path: the same communicator behind an interface the device cannot use
      const hosted = await open(graph, { rank: 0, tp: 1, collective: (n, ins) => comm.collective(n, ins) });
      const { result: host, lines } = await logged(() => hosted.run(new Map([['x', x]])));
      expect(host.stats.engine!.transfers.stagingFromDeviceBytes).toBe(3 * 64);
      expect(lines.filter((l) => l.startsWith(K.alloc)).length).toBeGreaterThan(0);
      for (const id of ['d', 'e']) expect(bytes(runs[1].result.values.get(id))).toEqual(bytes(host.values.get(id)));
      expect(comm.bytesSent()).toEqual({ allReduce: 0, allGather: 0, reduceScatter: 0 });
    });

    it("tp 4 (the fake's peers add zeros): the same results as the host path, bytes sent by core's ring accounting", async () => {
      const tp = 4;
      const { comm, open } = await setUp(tp, 1);
      const graph = rankPart(tp, 1, 8, 12);
      const x = bf16([8, 12], 5);
      const device = await open(graph, comm);
      const { result, lines } = await logged(() => device.run(new Map([['x', x]])));
      expect(lines.find((l) => l.startsWith('ncclReduceScatter '))).toContain('ncclReduceScatter send=96 recv=24 type=9 op=0 stream=runtime nranks=4 rank=1');
      expect(lines.find((l) => l.startsWith('ncclAllGather '))).toContain('ncclAllGather send=24 recv=96 type=9 op=0 stream=runtime nranks=4 rank=1');
      expect(result.stats.engine!.transfers).toMatchObject({ stagingToDeviceBytes: 0, stagingFromDeviceBytes: 0 });
      const once = {
        allReduce: commBytesOf('allReduce', 'ring', 192, 192, tp),
        reduceScatter: commBytesOf('reduceScatter', 'ordered', 192, 48, tp),
        allGather: commBytesOf('allGather', null, 48, 192, tp),
      };
      expect(comm.bytesSent()).toEqual(once);
      const hosted = await open(graph, { rank: 1, tp, collective: (n, ins) => comm.collective(n, ins) });
      const host = await hosted.run(new Map([['x', x]]));
      for (const id of ['d', 'e']) expect(bytes(result.values.get(id))).toEqual(bytes(host.values.get(id)));
      // rank 1's block of x in its slot, the peers' zeros elsewhere
      const d = result.values.get('d')!.data as Uint16Array;
      expect(Array.from(d.subarray(24, 48))).toEqual(Array.from((x.data as Uint16Array).subarray(24, 48)));
      expect(d.subarray(0, 24).every((b) => b === 0)).toBe(true);
      expect(comm.bytesSent()).toEqual({ allReduce: 2 * once.allReduce, reduceScatter: 2 * once.reduceScatter, allGather: 2 * once.allGather });
    });

    it('a collective the declarations do not fit is refused naming the node, before its call (when the session records its run, at open)', async () => {
      const tp = 4;
      const { comm, open } = await setUp(tp, 1);
      const uneven = rankPart(tp, 1, 8, 12);
      uneven.values.x.shape = [6, 12];
      uneven.values.b.shape = [6, 12];
      const a = await open(uneven, comm).catch((x: unknown) => x);
      expect((a as Error).message).toBe('rocm: node 2 (reduceScatter at test.rs): op reduceScatter: 6 rows do not split into tp 4 equal blocks (pad first)');
      const misdeclared = rankPart(tp, 1, 8, 12);
      misdeclared.values.d.shape = [4, 12];
      misdeclared.values.e.shape = [4, 12];
      const b = await open(misdeclared, comm).catch((x: unknown) => x);
      expect((b as Error).message).toBe("rocm: node 3 (allGather at test.ag): op allGather: output 'y' ('d') is declared bf16[4,12], the op gives bf16[8,12]");
      expect(fake.logText()).not.toMatch(/^ncclReduceScatter .*send=72/m);
      expect(fake.logText()).not.toMatch(/^ncclAllGather /m);
    });

    it("NCCL's asynchronous error is raised at the run's sync, naming the first collective node; later collectives are refused", async () => {
      const { backend, comm, open } = await setUp();
      const graph = rankPart(1, 0, 4, 8);
      const device = await open(graph, comm);
      process.env.FAKE_NCCL_ASYNC = '6';
      const e = await device.run(new Map([['x', bf16([4, 8], 1)]])).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NcclError);
      expect((e as NcclError).call).toBe('ncclAllReduce');
      expect((e as NcclError).ncclResult).toBe('ncclRemoteError');
      expect((e as Error).message).toMatch(
        new RegExp(
          `^${nodeLabel(graph.nodes[0]).replace(/[()]/g, '\\$&')}: ncclAllReduce failed: ncclRemoteError \\(6\\): remote process exited or there was a network error \\(asynchronous error at the run's sync; `,
        ),
      );
      expect(backend.gpu!.stats()).toMatchObject({ liveTensors: 0 });
      delete process.env.FAKE_NCCL_ASYNC;
      await expect(device.run(new Map([['x', bf16([4, 8], 1)]]))).rejects.toThrow(
        /^test\.ar \(allReduce\): NCCL communicator of rank 0: refused node 1 \(allReduce test\.ar\): an earlier collective failed \(test\.ar \(allReduce\): ncclAllReduce failed/,
      );
    });

    it("the watchdog times the run's sync: a collective that never completes is named as the sync after its node, and its abort ends the run", async () => {
      const stuck: StuckCall[] = [];
      const holder: { comm: NcclCommunicator | null } = { comm: null };
      const watchdog = new CollectiveWatchdog(300, (c) => {
        stuck.push(c);
        holder.comm!.abort();
      });
      const { comm, open } = await setUp(1, 0, watchdog);
      holder.comm = comm;
      const device = await open(rankPart(1, 0, 4, 8), comm);
      await device.run(new Map([['x', bf16([4, 8], 2)]]));
      expect(stuck).toEqual([]);
      process.env.FAKE_NCCL_SLEEP_MS = '1500';
      const t0 = performance.now();
      const e = await device.run(new Map([['x', bf16([4, 8], 2)]])).catch((x: unknown) => x);
      expect(stuck).toHaveLength(1);
      expect(stuck[0].what).toBe("the run's sync after test.ar (allReduce)");
      expect(performance.now() - t0).toBeLessThan(5000);
      expect((e as Error).message).toMatch(/^test\.ar \(allReduce\): ncclAllReduce: the communicator was aborted while the call ran/);
      expect(comm.state()).toBe('aborted');
    });
  });
}
