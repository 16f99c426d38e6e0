import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { commBytesOf, type GraphNode, type Tensor } from '@hcsp/core';
import { FAKE_NCCL, FakeGpuFolder, saveEnv } from '../../../../test/support/fakeGpuLibraries.ts';
import { type GpuDevice, loadNativeAddon } from '../nativeAddon.ts';
import { NativeOutOfMemoryError, NativeUnsupportedError } from '../nativeErrors.ts';
import { CollectiveWatchdog, type StuckCall } from './collectiveWatchdog.ts';
import { NCCL_UNIQUE_ID_BYTES, NcclCommunicator, NcclError, NcclUnavailableError } from './ncclCommunicator.ts';

// The nccl communicator (native/src/gpu/nccl_library.cc, nccl_communicator.cc, addon/js_nccl.cc)
// without a GPU: small fake vendor libraries compiled here, a libamdhip64 and a libcuda whose
// "device" memory is host memory (test/support/fakeGpuLibraries.ts, shared with gpuRuntime.test.ts:
// they keep the current device per thread and the stream they created) and a libnccl / librccl
// that checks what it is given (the datatype, the op, the counts, the stream against the
// runtime's, the device current on the calling thread, the unique id, nranks and rank), logs it,
// and implements one rank's semantics:
// at world size 1 each collective is a copy; in a larger world the fake's peers contribute zeros
// (all-reduce: a copy; reduce-scatter: this rank's block; all-gather: this rank's slot), which
// lets the byte accounting be checked at tp > 1. What only a GPU can show: the real libraries'
// ABI (nccl_abi.h cites the vendors' headers) and their sums (native/scripts/gpuCheck.ts runs
// one real rank).

const addon = loadNativeAddon();

const fake = new FakeGpuFolder('hcsp-nccl-');
const { lib, log, logText } = fake;

const FAKE_ENV = [
  'HCSP_HIP_LIB',
  'HCSP_CUDA_LIB',
  'HCSP_NCCL_LIBRARY',
  'FAKE_GPU_LOG',
  'FAKE_GPU_MEMORY',
  'FAKE_SYNC_ERROR',
  'FAKE_NCCL_FAIL',
  'FAKE_NCCL_ASYNC',
  'FAKE_NCCL_SLEEP_MS',
  'FAKE_NCCL_VERSION',
];
const restoreEnv = saveEnv(FAKE_ENV);

beforeAll(() => {
  fake.create();
  fake.compileRuntimes();
  fake.compile('fakercclhip', FAKE_NCCL);
  fake.compile('fakencclcuda', FAKE_NCCL, ['-DFAKE_CUDA']);
  fake.compile('fakercclnoasync', FAKE_NCCL, ['-DFAKE_NO_ASYNC']);
}, 60_000);

afterAll(() => fake.remove());

afterEach(() => {
  restoreEnv();
  rmSync(log(), { force: true });
});

/** seeded bf16 bit patterns, NaNs with payloads and both zeros included (a copy must keep them all) */
function bf16Values(n: number, seed: number): Uint16Array {
  let s = seed >>> 0;
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 16;
  }
  if (n > 3) out.set([0x7fc1, 0x8000, 0x0000, 0xff81], 0);
  return out;
}

let nextId = 1;
function node(op: 'allReduce' | 'reduceScatter' | 'allGather', tp: number, algorithm: string | null = 'ring'): GraphNode {
  return { id: nextId++, op, rank: null, inputs: [], outputs: [], attrs: algorithm === null ? { tp } : { tp, algorithm }, scope: 'test', layer: -1 };
}
const bf16 = (shape: number[], seed: number): Tensor => ({
  dtype: 'bf16',
  shape,
  data: bf16Values(
    shape.reduce((a, b) => a * b, 1),
    seed,
  ),
});
const bytesOf = (t: Tensor) => Array.from(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));

type Kind = 'hip' | 'cuda';
const KINDS: {
  kind: Kind;
  vendor: 'RCCL' | 'NCCL';
  arch: string;
  ext: string;
  runtimeEnv: string;
  runtimeLib: string;
  ncclLib: string;
  defaults: string[];
  version: string;
}[] = [
  {
    kind: 'hip',
    vendor: 'RCCL',
    arch: 'gfx942',
    ext: 'hsaco',
    runtimeEnv: 'HCSP_HIP_LIB',
    runtimeLib: 'fakehip.so',
    ncclLib: 'fakercclhip.so',
    defaults: ['librccl.so.1', 'librccl.so'],
    version: 'RCCL 2.18.5',
  },
  {
    kind: 'cuda',
    vendor: 'NCCL',
    arch: 'sm_90',
    ext: 'cubin',
    runtimeEnv: 'HCSP_CUDA_LIB',
    runtimeLib: 'fakecuda.so',
    ncclLib: 'fakencclcuda.so',
    defaults: ['libnccl.so.2', 'libnccl.so'],
    version: 'NCCL 2.7.8',
  },
];

describe('the nccl communicator refuses the emulated device', () => {
  it('with a clear, typed error, before loading any library', async () => {
    const gpu = addon.openGpu('emulated');
    const message =
      "the nccl communicator needs a hip or cuda GPU device, not 'emulated' (the emulated device has no RCCL/NCCL: use the sim or mpi communicator)";
    expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(NativeUnsupportedError);
    expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(message);
    const e = await NcclCommunicator.open({ gpu, rank: 0, size: 1, uniqueId: new Uint8Array(128) }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NativeUnsupportedError);
    expect((e as Error).message).toBe(message);
  });
});

for (const K of KINDS) {
  describe(`the ${K.vendor} communicator on the ${K.kind} device (fake libraries)`, () => {
    const open = (): GpuDevice => {
      process.env[K.runtimeEnv] = lib(K.runtimeLib);
      process.env.FAKE_GPU_LOG = log();
      const root = fake.codeObjects(`${K.kind}-objects`, K.arch, { [`basic.${K.ext}`]: ['hcsp_add_bf16'] });
      return addon.openGpu(K.kind, { device: 0, codeObjects: root });
    };
    const useFake = (name = K.ncclLib) => {
      process.env.HCSP_NCCL_LIBRARY = lib(name);
    };
    const world = async (gpu: GpuDevice, size = 1, rank = 0) => {
      useFake();
      return NcclCommunicator.open({ gpu, rank, size, uniqueId: NcclCommunicator.uniqueId(gpu) });
    };

    it("no library: a typed error listing every name tried, with the loader's reason", () => {
      const gpu = open();
      const missing = join(fake.dir, 'nonexistent', `lib${K.vendor.toLowerCase()}.so`);
      process.env.HCSP_NCCL_LIBRARY = missing;
      const e = (() => {
        try {
          return NcclCommunicator.libraryOf(gpu);
        } catch (x) {
          return x;
        }
      })();
      expect(e).toBeInstanceOf(NcclUnavailableError);
      expect((e as NcclUnavailableError).tried).toEqual([missing]);
      expect((e as Error).message).toBe(
        `no ${K.vendor} library found: tried ${missing} (${missing}: cannot open shared object file: No such file or directory) (HCSP_NCCL_LIBRARY names it)`,
      );
      // the default names, where this machine has no such library
      delete process.env.HCSP_NCCL_LIBRARY;
      let found: { path: string } | null = null;
      try {
        found = NcclCommunicator.libraryOf(gpu);
      } catch (x) {
        expect(x).toBeInstanceOf(NcclUnavailableError);
        expect((x as NcclUnavailableError).tried).toEqual(K.defaults);
        expect((x as Error).message).toMatch(
          new RegExp(
            `^no ${K.vendor} library found: tried ${K.defaults[0].replace(/\./g, '\\.')} \\(.+\\), ${K.defaults[1].replace(/\./g, '\\.')} \\(.+\\) \\(set HCSP_NCCL_LIBRARY to the library's path\\)$`,
          ),
        );
      }
      if (found) expect(K.defaults).toContain(found.path);
    });

    it('a library without one of the calls is refused naming the symbol and the file', () => {
      const gpu = open();
      useFake('fakercclnoasync.so');
      expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(NcclUnavailableError);
      expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(
        `the ${K.vendor} library ${lib('fakercclnoasync.so')} has no ncclCommGetAsyncError (not an ${K.vendor} library, or one too old?)`,
      );
    });

    it('loads the fake: its version decoded, a 128-byte unique id made with the device current', () => {
      const gpu = open();
      useFake();
      expect(NcclCommunicator.libraryOf(gpu)).toEqual({ library: K.version, vendor: K.vendor, code: K.kind === 'hip' ? 21805 : 2708, path: lib(K.ncclLib) });
      const id = NcclCommunicator.uniqueId(gpu);
      expect(id).toBeInstanceOf(Uint8Array);
      expect(id.byteLength).toBe(NCCL_UNIQUE_ID_BYTES);
      expect(Array.from(id)).toEqual(Array.from({ length: 128 }, (_, i) => (i * 7 + 3) & 0xff));
      expect(logText()).toMatch(/ncclGetUniqueId device=(0|1)\n/);
    });

    it('a world of one: every layout through collective() gives the input back bit for bit, with the right shapes and arguments', async () => {
      const gpu = open();
      const comm = await world(gpu);
      expect(comm.library()).toBe(K.version);
      expect(comm.rank).toBe(0);
      expect(comm.tp).toBe(1);
      expect(logText()).toMatch(/ncclCommInitRank nranks=1 rank=0 device=(0|1) id=ok\n/);
      const x = bf16([6, 40], 1);
      const [ar] = await comm.collective(node('allReduce', 1), [x]);
      expect(ar.dtype).toBe('bf16');
      expect(ar.shape).toEqual([6, 40]);
      expect(bytesOf(ar)).toEqual(bytesOf(x));
      const [rs] = await comm.collective(node('reduceScatter', 1, 'oneshot'), [x]);
      expect(rs.shape).toEqual([6, 40]);
      expect(bytesOf(rs)).toEqual(bytesOf(x));
      const [ag] = await comm.collective(node('allGather', 1, null), [x]);
      expect(ag.shape).toEqual([6, 40]);
      expect(bytesOf(ag)).toEqual(bytesOf(x));
      const f: Tensor = { dtype: 'f32', shape: [3, 5], data: Float32Array.from({ length: 15 }, (_, i) => i / 3 - 2) };
      const [agf] = await comm.collective(node('allGather', 1, null), [f]);
      expect(agf.dtype).toBe('f32');
      expect(bytesOf(agf)).toEqual(bytesOf(f));
      const ids: Tensor = { dtype: 'i32', shape: [7], data: Int32Array.from({ length: 7 }, (_, i) => i * 1000 - 3000) };
      const [agi] = await comm.collective(node('allGather', 1, null), [ids]);
      expect(agi.dtype).toBe('i32');
      expect(Array.from(agi.data)).toEqual(Array.from(ids.data));
      const text = logText();
      const dev = K.kind === 'hip' ? 0 : 1;
      expect(text).toContain(`ncclAllReduce send=240 recv=240 type=9 op=0 stream=runtime nranks=1 rank=0 device=${dev}`);
      expect(text).toContain(`ncclReduceScatter send=240 recv=240 type=9 op=0 stream=runtime nranks=1 rank=0 device=${dev}`);
      expect(text).toContain(`ncclAllGather send=240 recv=240 type=9 op=0 stream=runtime nranks=1 rank=0 device=${dev}`);
      expect(text).toContain(`ncclAllGather send=15 recv=15 type=7 op=0`);
      expect(text).toContain(`ncclAllGather send=7 recv=7 type=2 op=0`);
      // the runtime's stream is synchronized after each call, and the staging buffers are given back
      expect(text).toMatch(K.kind === 'hip' ? /ncclAllReduce .*\nhipStreamSynchronize / : /ncclAllReduce .*\ncuStreamSynchronize /);
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0 });
      expect(comm.bytesSent()).toEqual({ allReduce: 0, allGather: 0, reduceScatter: 0 });
      await comm.destroy();
      expect(comm.state()).toBe('destroyed');
      expect(logText()).toContain('ncclCommDestroy rank=0');
      await expect(comm.collective(node('allReduce', 1), [x])).rejects.toThrow(/ncclAllReduce: the communicator .* was destroyed/);
    });

    it("bytes sent follow core's ring accounting for the same nodes (tp 4, the fake's peers add zeros)", async () => {
      const gpu = open();
      const tp = 4;
      const comm = await world(gpu, tp, 1);
      expect(logText()).toMatch(/ncclCommInitRank nranks=4 rank=1 /);
      const x = bf16([8, 12], 2);
      const [ar] = await comm.collective(node('allReduce', tp), [x]);
      expect(bytesOf(ar)).toEqual(bytesOf(x));
      const [rs] = await comm.collective(node('reduceScatter', tp, 'ordered'), [x]);
      expect(rs.shape).toEqual([2, 12]);
      expect(Array.from(rs.data)).toEqual(Array.from((x.data as Uint16Array).subarray(24, 48)));
      const shard = bf16([3, 12], 3);
      const [ag] = await comm.collective(node('allGather', tp, null), [shard]);
      expect(ag.shape).toEqual([12, 12]);
      expect(Array.from((ag.data as Uint16Array).subarray(36, 72))).toEqual(Array.from(shard.data));
      expect(logText()).toContain('ncclReduceScatter send=96 recv=24 type=9 op=0 stream=runtime nranks=4 rank=1');
      expect(logText()).toContain('ncclAllGather send=36 recv=144 type=9 op=0 stream=runtime nranks=4 rank=1');
      expect(comm.bytesSent()).toEqual({
        allReduce: commBytesOf('allReduce', 'ring', 192, 192, tp),
        reduceScatter: commBytesOf('reduceScatter', 'ordered', 192, 48, tp),
        allGather: commBytesOf('allGather', null, 72, 288, tp),
      });
      await expect(comm.collective(node('reduceScatter', tp), [bf16([6, 2], 4)])).rejects.toThrow(
        'reduceScatter: 6 rows of shape [6,2] are not divisible by tp 4',
      );
      await comm.destroy();
    });

    it('a failed call is an NcclError naming the call, the ncclResult and its text; later calls are refused', async () => {
      const gpu = open();
      const comm = await world(gpu);
      process.env.FAKE_NCCL_FAIL = 'ncclAllReduce';
      const e = await comm.collective(node('allReduce', 1), [bf16([2, 4], 5)]).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NcclError);
      expect((e as NcclError).call).toBe('ncclAllReduce');
      expect((e as NcclError).ncclResult).toBe('ncclInvalidArgument');
      expect((e as NcclError).ncclResultCode).toBe(4);
      expect((e as Error).message).toBe(
        `ncclAllReduce failed: ncclInvalidArgument (4): invalid argument (run with NCCL_DEBUG=WARN for details) (8 bf16 elements, sum; ${K.version}, ${K.kind}:0, rank 0 of 1)`,
      );
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0 });
      delete process.env.FAKE_NCCL_FAIL;
      await expect(comm.collective(node('allGather', 1, null), [bf16([2, 4], 5)])).rejects.toThrow(
        /^NCCL communicator of rank 0: refused node \d+ \(allGather test\): an earlier collective failed \(ncclAllReduce failed: ncclInvalidArgument/,
      );
      await comm.destroy();
      // an asynchronous error found after the stream synchronized
      const other = await world(gpu);
      process.env.FAKE_NCCL_ASYNC = '6';
      const a = await other.collective(node('reduceScatter', 1), [bf16([2, 4], 6)]).catch((x: unknown) => x);
      expect(a).toBeInstanceOf(NcclError);
      expect((a as NcclError).ncclResult).toBe('ncclRemoteError');
      expect((a as Error).message).toMatch(
        /^ncclReduceScatter failed: ncclRemoteError \(6\): remote process exited or there was a network error \(asynchronous error; /,
      );
      delete process.env.FAKE_NCCL_ASYNC;
      // init and the unique id name their calls too
      process.env.FAKE_NCCL_FAIL = 'ncclCommInitRank';
      const init = await NcclCommunicator.open({ gpu, rank: 0, size: 1, uniqueId: new Uint8Array(128) }).catch((x: unknown) => x);
      expect(init).toBeInstanceOf(NcclError);
      expect((init as Error).message).toMatch(/^ncclCommInitRank failed: ncclInvalidArgument \(4\): invalid argument/);
      process.env.FAKE_NCCL_FAIL = 'ncclGetUniqueId';
      expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(NcclError);
      expect(() => NcclCommunicator.uniqueId(gpu)).toThrow(/^ncclGetUniqueId failed: ncclInvalidArgument \(4\)/);
    });

    it("the staging buffers are the device's memory: counted against its limit", async () => {
      const gpu = open();
      const comm = await world(gpu);
      gpu.setMemoryLimit(100);
      const e = await comm.collective(node('allReduce', 1), [bf16([10, 10], 7)]).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NativeOutOfMemoryError);
      expect((e as Error).message).toMatch(new RegExp(`^${K.kind}:0 device out of memory: 200 bytes requested for the ncclAllReduce send buffer`));
      gpu.setMemoryLimit(0);
      expect(gpu.stats()).toMatchObject({ liveBytes: 0 });
    });

    it('collectives run off the JavaScript thread, and abort() ends the communicator at once', async () => {
      const gpu = open();
      const comm = await world(gpu);
      process.env.FAKE_NCCL_SLEEP_MS = '400';
      let ticks = 0;
      const timer = setInterval(() => ticks++, 20);
      const t0 = performance.now();
      const pending = comm.collective(node('allReduce', 1), [bf16([4, 4], 8)]);
      await new Promise((r) => setTimeout(r, 200));
      const ticksWhileWaiting = ticks;
      await pending;
      clearInterval(timer);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(390);
      expect(ticksWhileWaiting).toBeGreaterThanOrEqual(3);
      delete process.env.FAKE_NCCL_SLEEP_MS;
      comm.abort();
      expect(comm.state()).toBe('aborted');
      expect(logText()).toContain('ncclCommAbort rank=0');
      await expect(comm.collective(node('allReduce', 1), [bf16([4, 4], 8)])).rejects.toThrow(
        /refused node \d+ \(allReduce test\): an earlier collective failed \(the communicator was aborted\)/,
      );
      await comm.destroy();
      expect(logText()).not.toContain('ncclCommDestroy');
    });

    it('the watchdog fires while a collective blocks off the JavaScript thread, naming its node; its abort ends the call', async () => {
      const gpu = open();
      useFake();
      const stuck: (StuckCall & { at: number })[] = [];
      const holder: { comm: NcclCommunicator | null } = { comm: null };
      // as TORCH_NCCL_ASYNC_ERROR_HANDLING: the communicator aborted, the waiting call fails
      const watchdog = new CollectiveWatchdog(300, (c) => {
        stuck.push({ ...c, at: performance.now() });
        holder.comm!.abort();
      });
      const comm = await NcclCommunicator.open({ gpu, rank: 0, size: 1, uniqueId: NcclCommunicator.uniqueId(gpu), watchdog });
      holder.comm = comm;
      // calls in time do not fire it
      await comm.collective(node('allGather', 1, null), [bf16([2, 4], 1)]);
      await comm.collective(node('reduceScatter', 1), [bf16([2, 4], 2)]);
      expect(stuck).toEqual([]);
      process.env.FAKE_NCCL_SLEEP_MS = '1500';
      const n = node('allReduce', 1);
      const t0 = performance.now();
      const e = await comm.collective(n, [bf16([4, 4], 9)]).catch((x: unknown) => x);
      expect(stuck).toHaveLength(1);
      expect(stuck[0].what).toBe(`node ${n.id} (allReduce test)`);
      expect(stuck[0].waitedMs).toBeGreaterThanOrEqual(299);
      // it fired while the library still held the call (the fake sleeps 1.5 s in ncclAllReduce)
      expect(stuck[0].at - t0).toBeLessThan(1400);
      expect((e as Error).message).toMatch(/^ncclAllReduce: the communicator was aborted while the call ran/);
      expect(comm.state()).toBe('aborted');
      expect(logText()).toContain('ncclCommAbort rank=0');
      expect(gpu.stats()).toMatchObject({ liveTensors: 0, liveBytes: 0 });
    });

    it('refuses bad arguments before any call: dtypes, a wrong-sized unique id, a rank outside the world', async () => {
      const gpu = open();
      useFake();
      await expect(NcclCommunicator.open({ gpu, rank: 0, size: 1, uniqueId: new Uint8Array(64) })).rejects.toThrow(
        'NcclCommunicator.open: the unique id must be 128 bytes (NcclCommunicator.uniqueId), got 64',
      );
      await expect(NcclCommunicator.open({ gpu, rank: 2, size: 2, uniqueId: new Uint8Array(128) })).rejects.toThrow(
        'NcclCommunicator.open: rank 2 is not in [0, 2)',
      );
      const comm = await world(gpu);
      await expect(comm.collective(node('allReduce', 1), [{ dtype: 'f32', shape: [2], data: new Float32Array(2) }])).rejects.toThrow(
        'allReduce: rank 0 has dtype f32; expected one of bf16',
      );
      const other = await world(gpu);
      await expect(other.collective(node('allReduce', 1, 'fastest'), [bf16([2], 1)])).rejects.toThrow(/unknown reduction algorithm "fastest"/);
      expect(logText()).not.toContain('ncclAllReduce');
    });
  });
}
