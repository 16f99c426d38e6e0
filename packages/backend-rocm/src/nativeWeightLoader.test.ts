// The native weight loader (native/src/loader, nativeWeightLoader.ts): a rank's weights read
// from a checkpoint by the addon, bit for bit what the JavaScript path reads and only the bytes
// of the rank's slices; NaN/Inf counted per source read and handed to the weight source; a
// file that is short, gone, not a file or another file is one error naming it and the tensor, with nothing
// left allocated; on the GPU devices (fake HIP and CUDA runtimes) pinned staging buffers and
// asynchronous copies, or pageable staging where the runtime lacks them.
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  rankGraph,
  resolveWeight,
  SyntheticWeightSource,
  TINY,
  type Graph,
  type Tensor,
  type ValueDecl,
  type WeightSource,
} from '@hcsp/core';
import { openCheckpoint, SafetensorsWeightSource, writeSafetensorsFile, type CheckpointWeightSource } from '@hcsp/core/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_CUDA, FAKE_HIP, FakeGpuFolder, saveEnv } from '../../../test/support/fakeGpuLibraries.ts';
import { loadNativeAddon, type GpuDevice, type NativeTensor } from './nativeAddon.ts';
import { native } from './nativeErrors.ts';
import { loadWeightsNatively, weightLoaderMode } from './nativeWeightLoader.ts';

const addon = loadNativeAddon();
const dir = mkdtempSync(join(tmpdir(), 'hcsp-weight-loader-'));
const fake = new FakeGpuFolder('hcsp-weight-loader-gpu-');
const restoreEnv = saveEnv(['HCSP_HIP_LIB', 'HCSP_CUDA_LIB', 'FAKE_GPU_LOG']);

beforeAll(() => {
  fake.create();
  fake.compile('fakehip', FAKE_HIP);
  fake.compile('fakehip-nopin', FAKE_HIP, ['-DFAKE_NO_PINNED']);
  fake.compile('fakecuda', FAKE_CUDA);
  fake.compile('fakecuda-nopin', FAKE_CUDA, ['-DFAKE_NO_PINNED']);
}, 60_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  fake.remove();
});
afterEach(() => {
  restoreEnv();
  rmSync(fake.log(), { force: true });
});

const SPECS = modelWeightSpecs(TINY, MODEL_SUB_LAYERS);
let folders = 0;
/** the tiny config's synthetic weights as a model folder of two shards, `edit` applied first */
function checkpoint(edit: (t: Map<string, Tensor>) => void = () => {}): string {
  const d = join(dir, `m${folders++}`);
  mkdirSync(d);
  const w = new SyntheticWeightSource(SPECS, 5);
  const tensors = new Map(SPECS.map((s) => [s.name, w.tensor(s.name)]));
  edit(tensors);
  const names = [...tensors.keys()];
  const half = Math.ceil(names.length / 2);
  for (const [i, part] of [names.slice(0, half), names.slice(half)].entries()) {
    writeSafetensorsFile(join(d, `model-0000${i + 1}-of-00002.safetensors`), new Map(part.map((n) => [n, tensors.get(n)!])));
  }
  return d;
}

/** the weights a graph's session reads when it opens (GraphSession.weightIds: row-gathered ones are read per run) */
function weightDecls(g: Graph): ValueDecl[] {
  const ids = new Set<string>();
  for (const n of g.nodes) for (const id of n.inputs) if (id !== null && g.values[id].kind === 'weight' && g.values[id].weight?.gather !== 'rows') ids.add(id);
  return [...ids].map((id) => g.values[id]);
}

const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const sizeOf = (d: ValueDecl) => d.shape.reduce((a, b) => a * b, 1) * (d.dtype === 'bf16' ? 2 : 4);

function liveOn(gpu: GpuDevice | null) {
  const s = gpu ? gpu.stats() : addon.stats();
  return { tensors: s.liveTensors, bytes: s.liveBytes };
}

const tp4 = preparePrefill({ config: TINY, tokens: 8, tp: 4, sp: 'off', reduce: 'ring', seed: 0, subLayers: MODEL_SUB_LAYERS, env: {} }).graph;

describe('the native weight loader', () => {
  for (const device of ['host', 'emulated'] as const) {
    it(`${device}: each rank of tp 4 reads only its slices, the JavaScript path's bits`, async () => {
      const folder = checkpoint();
      const gpu = device === 'emulated' ? addon.openGpu('emulated') : null;
      for (let rank = 0; rank < 4; rank++) {
        const decls = weightDecls(rankGraph(tp4, rank));
        const mine = openCheckpoint(folder, TINY).source;
        const js = openCheckpoint(folder, TINY).source;
        const before = liveOn(gpu);
        const loaded = await loadWeightsNatively(addon, gpu, mine, decls);
        try {
          // every weight of the hf layout is stored as the graph reads it
          expect(loaded.size).toBe(decls.length);
          const sliceBytes = decls.reduce((n, d) => n + sizeOf(d), 0);
          expect(mine.bytesRead()).toBe(sliceBytes);
          for (const d of decls) {
            const want = await resolveWeight(js, d.weight!);
            expect(Buffer.from(addon.download(loaded.get(d.id)!)).equals(Buffer.from(bytesOf(want))), d.weight!.name).toBe(true);
          }
          expect(js.bytesRead()).toBe(sliceBytes);
          // the rank's slices are a part of the checkpoint: the ranks together read no more than tp copies of it
          expect(sliceBytes).toBeLessThan(SPECS.reduce((n, s) => n + sizeOf({ shape: s.shape, dtype: s.dtype } as ValueDecl), 0));
        } finally {
          for (const t of loaded.values()) addon.free(t);
          mine.close();
          js.close();
        }
        expect(liveOn(gpu)).toEqual(before);
      }
    });
  }

  it('counts NaN and Inf per source read and hands them to the source, which may refuse; FP8 bytes load as FP8', async () => {
    const file = join(dir, 'nan.safetensors');
    const a = new Uint16Array(4 * 8).fill(0x3f80);
    a[0 * 8 + 3] = 0x7fc0; // NaN in column 3
    a[1 * 8 + 1] = 0xff80; // -Inf in column 1: outside the slice below
    a[3 * 8 + 5] = 0x7f80; // Inf in column 5
    const b = new Uint16Array(2 * 8).fill(0x4000);
    b[9] = 0xffc1; // NaN
    const f = Float32Array.of(1, NaN, Infinity, -Infinity);
    const q = Uint8Array.of(0x38, 0x7f, 0xff, 0x80);
    writeSafetensorsFile(file, {
      a: { dtype: 'bf16', shape: [4, 8], data: a },
      b: { dtype: 'bf16', shape: [2, 8], data: b },
      f: { dtype: 'f32', shape: [4], data: f },
      q: { dtype: 'fp8e4m3fn', shape: [4], data: q },
    });
    const raw = SafetensorsWeightSource.open(file);
    const told: [string, string, { bytes: number; nan: number; inf: number }][] = [];
    let refuse = false;
    const source: WeightSource = {
      has: (n) => raw.has(n),
      info: (n) => raw.info(n),
      read: (n, s) => raw.read(n, s),
      filePlan: (n, s) => raw.filePlan(n, s),
      plannedRead: (n, s, found) => {
        if (refuse && found.nan > 0) throw new Error(`refused '${n}'`);
        told.push([n, JSON.stringify(s ?? null), found]);
      },
    };
    const decls: ValueDecl[] = [
      { id: 'cols', kind: 'weight', dtype: 'bf16', shape: [4, 4], weight: { name: 'a', slice: { axis: 1, ranges: [[2, 6]] } } },
      { id: 'cat', kind: 'weight', dtype: 'bf16', shape: [6, 8], weight: { name: 'ab', concat: ['a', 'b'] } },
      { id: 'f', kind: 'weight', dtype: 'f32', shape: [4], weight: { name: 'f' } },
      { id: 'q', kind: 'weight', dtype: 'fp8e4m3fn', shape: [4], weight: { name: 'q' } },
    ] as ValueDecl[];
    const loaded = await loadWeightsNatively(addon, null, source, decls);
    expect([...loaded.keys()]).toEqual(['cols', 'cat', 'f', 'q']);
    expect(told).toEqual([
      ['a', JSON.stringify({ axis: 1, ranges: [[2, 6]] }), { bytes: 4 * 4 * 2, nan: 1, inf: 1 }],
      ['a', 'null', { bytes: 64, nan: 1, inf: 2 }],
      ['b', 'null', { bytes: 32, nan: 1, inf: 0 }],
      ['f', 'null', { bytes: 16, nan: 1, inf: 2 }],
      ['q', 'null', { bytes: 4, nan: 2, inf: 0 }],
    ]);
    for (const d of decls) expect(Buffer.from(addon.download(loaded.get(d.id)!)).equals(Buffer.from(bytesOf(await resolveWeight(raw, d.weight!))))).toBe(true);
    expect(addon.download(loaded.get('q')!).byteLength).toBe(4);
    for (const t of loaded.values()) addon.free(t);
    // a refusal frees what was loaded
    refuse = true;
    const before = liveOn(null);
    await expect(loadWeightsNatively(addon, null, source, decls)).rejects.toThrow("refused 'a'");
    expect(liveOn(null)).toEqual(before);
    raw.close();
  });

  it('leaves weights that need a conversion, have no file or another shape than declared to the JavaScript path', async () => {
    const file = join(dir, 'f32.safetensors');
    writeSafetensorsFile(file, { w: { dtype: 'f32', shape: [2], data: Float32Array.of(1, 2) } });
    const folder = join(dir, 'convert');
    mkdirSync(folder);
    // a model folder whose one f32 norm weight is read as bf16: rounded on read, so not a plain copy
    const norm = SPECS.find((s) => s.dtype === 'bf16' && s.shape.length === 1)!;
    const w = new SyntheticWeightSource(SPECS, 5);
    writeSafetensorsFile(
      join(folder, 'model.safetensors'),
      new Map(
        SPECS.map(
          (s) =>
            [s.name, s.name === norm.name ? { dtype: 'f32', shape: s.shape, data: Float32Array.from({ length: s.shape[0] }, () => 1) } : w.tensor(s.name)] as [
              string,
              Tensor,
            ],
        ),
      ),
    );
    const c: CheckpointWeightSource = openCheckpoint(folder, TINY).source;
    const decl = { id: 'n', kind: 'weight', dtype: 'bf16', shape: norm.shape, weight: { name: norm.name } } as ValueDecl;
    expect((await loadWeightsNatively(addon, null, c, [decl])).size).toBe(0);
    expect((await loadWeightsNatively(addon, null, new SyntheticWeightSource(SPECS, 5), [decl])).size).toBe(0);
    // declared with another shape than stored: the JavaScript path's checkDecl names both
    const matrix = SPECS.find((x) => x.dtype === 'bf16' && x.shape.length === 2 && x.shape[0] !== x.shape[1])!;
    const transposed = { id: 't', kind: 'weight', dtype: 'bf16', shape: [matrix.shape[1], matrix.shape[0]], weight: { name: matrix.name } } as ValueDecl;
    expect((await loadWeightsNatively(addon, null, c, [transposed])).size).toBe(0);
    c.close();
  });

  for (const device of ['host', 'emulated'] as const) {
    it(`${device}: a short, vanished, replaced or swapped file is one error naming it and the tensor, with nothing left allocated`, async () => {
      const folder = checkpoint();
      const shard = join(folder, 'model-00002-of-00002.safetensors');
      const gpu = device === 'emulated' ? addon.openGpu('emulated') : null;
      const decls = weightDecls(rankGraph(tp4, 1));
      // the source opens the folder whole (headers checked), then the shard changes under it
      const attempt = async (change: () => void, what: RegExp) => {
        const original = readFileSync(shard);
        const source = openCheckpoint(folder, TINY).source;
        const before = liveOn(gpu);
        try {
          change();
          const e = (await loadWeightsNatively(addon, gpu, source, decls).catch((x: unknown) => x)) as Error;
          expect(e).toBeInstanceOf(Error);
          expect(e.message).toMatch(what);
          // the tensor named is one of the rank's weights, and it reads that file
          const name = /tensor '([^']+)'/.exec(e.message)![1];
          const d = decls.find((x) => x.weight!.name === name)!;
          expect(source.filePlan(d.weight!.name, d.weight!.slice)!.runs.some((r) => r.file === shard)).toBe(true);
        } finally {
          source.close();
          rmSync(shard, { recursive: true, force: true });
          writeFileSync(shard, original);
        }
        expect(liveOn(gpu)).toEqual(before);
      };
      const esc = shard.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const size = readFileSync(shard).length;
      await attempt(
        () => truncateSync(shard, size - 1000),
        new RegExp(`^${esc}: truncated file: tensor '[^']+' needs \\d+ bytes, the file has ${size - 1000}$`),
      );
      // gone: the loader opens files by path
      await attempt(() => rmSync(shard), new RegExp(`^${esc}: cannot open: No such file or directory \\(reading tensor '[^']+'\\)$`));
      await attempt(
        () => {
          rmSync(shard);
          mkdirSync(shard);
        },
        new RegExp(`^${esc}: not a regular file \\(reading tensor '[^']+'\\)$`),
      );
      // the same bytes in another file renamed over it: not the file whose header was checked
      await attempt(
        () => {
          writeFileSync(`${shard}.new`, readFileSync(shard));
          renameSync(`${shard}.new`, shard);
        },
        new RegExp(`^${esc}: another file is at the path since the checkpoint was opened \\(reading tensor '[^']+'\\)$`),
      );
    });
  }

  it('HCSP_WEIGHT_LOADER picks the JavaScript path, and a wrong value is an error naming it', () => {
    expect(weightLoaderMode({})).toBe('native');
    expect(weightLoaderMode({ HCSP_WEIGHT_LOADER: 'js' })).toBe('js');
    expect(() => weightLoaderMode({ HCSP_WEIGHT_LOADER: 'fast' })).toThrow("HCSP_WEIGHT_LOADER must be native or js, got 'fast'");
  });
});

describe('the native weight loader on GPU devices (fake runtimes)', () => {
  // 20,000 bytes of a file: a bf16 tensor read whole, and a column slice (one range per row)
  const file = () => {
    const path = join(dir, 'gpu.bin');
    const data = Uint8Array.from({ length: 20_000 }, (_, i) => (i * 7 + 3) & 0x7f);
    writeFileSync(path, data);
    return { path, data };
  };
  const request = (rows: number, cols: number, keep: [number, number]) => {
    const ranges: number[] = [];
    for (let r = 0; r < rows; r++) ranges.push(0, 8000 + (r * cols + keep[0]) * 2, (keep[1] - keep[0]) * 2, 0);
    return { name: 'cols', dtype: 'bf16', shape: [rows, keep[1] - keep[0]], ranges: Float64Array.from(ranges), parts: 1 };
  };
  const kinds = [
    {
      kind: 'hip' as const,
      env: 'HCSP_HIP_LIB',
      arch: 'gfx942',
      ext: 'hsaco',
      lib: 'fakehip',
      alloc: 'hipHostMalloc',
      free: 'hipHostFree',
      async: 'hipMemcpyAsync',
      sync: /^hipMemcpy \d+ kind=1$/gm,
    },
    {
      kind: 'cuda' as const,
      env: 'HCSP_CUDA_LIB',
      arch: 'sm_90',
      ext: 'cubin',
      lib: 'fakecuda',
      alloc: 'cuMemHostAlloc',
      free: 'cuMemFreeHost',
      async: 'cuMemcpyHtoDAsync',
      sync: null,
    },
  ];
  for (const K of kinds) {
    for (const pinned of [true, false]) {
      it(`${K.kind}${pinned ? '' : ' without pinned-memory entry points'}: ${pinned ? "pinned staging, asynchronous copies on the lanes' streams" : "pageable staging, the device's own copies"}; the bytes arrive`, async () => {
        process.env[K.env] = fake.lib(`${K.lib}${pinned ? '' : '-nopin'}.so`);
        process.env.FAKE_GPU_LOG = fake.log();
        const gpu = addon.openGpu(K.kind, { codeObjects: fake.codeObjects(`co-${K.kind}`, K.arch, { [`basic.${K.ext}`]: ['hcsp_add_bf16'] }) });
        const { path, data } = file();
        const whole = { name: 'whole', dtype: 'bf16', shape: [4000], ranges: Float64Array.of(0, 0, 8000, 0), parts: 1 };
        const before = addon.counters(gpu);
        const r = await native(() => addon.loadWeights([path], [whole, request(20, 150, [10, 60])], gpu, { chunkBytes: 4096, lanes: 2 }));
        try {
          expect(r.staging).toBe(pinned ? 'pinned' : 'pageable');
          expect(r.bytesRead).toBe(8000 + 20 * 50 * 2);
          // 8000 bytes in two chunks; the slice's 20 ranges (none adjacent) in one
          expect(r.ranges).toBe(21);
          expect(r.chunks).toBe(3);
          expect(Buffer.from(addon.download(r.tensors[0])).equals(Buffer.from(data.subarray(0, 8000)))).toBe(true);
          const cols = Buffer.concat(
            Array.from({ length: 20 }, (_, row) => Buffer.from(data.subarray(8000 + (row * 150 + 10) * 2, 8000 + (row * 150 + 60) * 2))),
          );
          expect(Buffer.from(addon.download(r.tensors[1])).equals(cols)).toBe(true);
          const log = fake.logText();
          const count = (re: RegExp) => (log.match(re) ?? []).length;
          const after = addon.counters(gpu);
          expect(after.bytesToDevice - before.bytesToDevice).toBe(r.bytesRead);
          expect(after.copiesToDevice - before.copiesToDevice).toBe(3);
          if (pinned) {
            expect(count(new RegExp(`^${K.alloc} 4096 flags=0$`, 'gm'))).toBe(2 * r.lanes);
            expect(count(new RegExp(`^${K.free}$`, 'gm'))).toBe(2 * r.lanes);
            expect(count(new RegExp(`^${K.async} \\d+`, 'gm'))).toBe(3);
            if (K.sync) expect(count(K.sync)).toBe(0);
          } else {
            expect(log).not.toContain(K.alloc);
            if (K.sync) expect(count(K.sync)).toBe(3);
          }
        } finally {
          for (const t of r.tensors) addon.free(t as NativeTensor);
        }
        expect(gpu.stats().liveTensors).toBe(0);
      });
    }
  }
});
