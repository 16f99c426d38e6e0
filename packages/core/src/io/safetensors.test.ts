import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Tensor } from '../tensor/tensor.ts';
import { bufferByteSource, layoutSafetensors, SafetensorsReader, serializeSafetensors, type ByteSource } from './safetensors.ts';
import { FileByteSource, openSafetensorsFile, writeSafetensorsFile } from './safetensorsFile.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-safetensors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function f32Tensor(shape: number[], values: number[]): Tensor {
  return { dtype: 'f32', shape, data: new Float32Array(values) };
}

/** A file made of a raw header string and `dataBytes` bytes of data. */
function rawFile(header: string, dataBytes: number, declaredLength?: number): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(declaredLength ?? json.length), true);
  out.set(json, 8);
  return out;
}

/** index of the first differing byte, -1 when equal (vitest's deep equality is slow on MB arrays) */
function firstByteDifference(a: ArrayBufferView, b: ArrayBufferView): number {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (x.length !== y.length) return Math.min(x.length, y.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

function openBytes(bytes: Uint8Array): SafetensorsReader {
  return new SafetensorsReader(bufferByteSource(bytes), 'x.safetensors');
}

describe('safetensors layout matches the Hugging Face serializer byte for byte', () => {
  it('one F32 tensor (the reference test_serialization vector)', () => {
    const out = serializeSafetensors(new Map([['attn.0', f32Tensor([1, 2, 3], [0, 1, 2, 3, 4, 5])]]));
    // prettier-ignore
    expect([...out]).toEqual([
      64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97,
      112, 101, 34, 58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125,
      0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
    ]);
  });

  it('space padding to 8 bytes (the reference test_serialization_forced_alignement vector)', () => {
    const out = serializeSafetensors(new Map([['attn0', f32Tensor([1, 1, 2, 3], [0, 1, 2, 3, 4, 5])]]));
    expect(new DataView(out.buffer).getBigUint64(0, true)).toBe(72n);
    const header = new TextDecoder().decode(out.subarray(8, 80));
    expect(header).toBe('{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       ');
  });

  it('empty file, with and without metadata (the reference test_empty vectors)', () => {
    expect([...serializeSafetensors(new Map())]).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32]);
    const withMeta = serializeSafetensors(new Map(), { framework: 'pt' });
    expect(new TextDecoder().decode(withMeta.subarray(8))).toBe('{"__metadata__":{"framework":"pt"}}     ');
    expect(new DataView(withMeta.buffer).getBigUint64(0, true)).toBe(40n);
  });

  it('orders data by descending dtype, then name, so every tensor is aligned to its item size', () => {
    const layout = layoutSafetensors(
      new Map<string, Tensor>([
        ['b', { dtype: 'fp8e4m3fn', shape: [3], data: new Uint8Array(3) }],
        ['a', { dtype: 'bf16', shape: [1], data: new Uint16Array(1) }],
        ['z', { dtype: 'f32', shape: [2], data: new Float32Array(2) }],
        ['y', { dtype: 'i32', shape: [1], data: new Int32Array(1) }],
        ['c', { dtype: 'bf16', shape: [1], data: new Uint16Array(1) }],
      ]),
    );
    expect(layout.order.map((o) => o.name)).toEqual(['z', 'y', 'a', 'c', 'b']);
    expect(layout.header.length % 8).toBe(0);
  });
});

describe('safetensors round trip through a file', () => {
  it('keeps every bit of every dtype, the shapes and the metadata', () => {
    const allBf16 = new Uint16Array(65536).map((_, i) => i); // every pattern, NaNs and -0 included
    const f32Bits = new Uint32Array([0x7fc00001, 0xff800000, 0x80000000, 0x00000001, 0x3f800000, 0x7f7fffff]);
    const tensors: Record<string, Tensor> = {
      'model.layers.0.w': { dtype: 'bf16', shape: [256, 256], data: allBf16 },
      f: { dtype: 'f32', shape: [2, 3], data: new Float32Array(f32Bits.buffer) },
      i: { dtype: 'i32', shape: [3], data: new Int32Array([-2147483648, -1, 2147483647]) },
      q: { dtype: 'fp8e4m3fn', shape: [256], data: new Uint8Array(256).map((_, k) => k) },
      u: { dtype: 'fp8e4m3fnuz', shape: [2, 0, 5], data: new Uint8Array(0) },
      s: { dtype: 'bf16', shape: [], data: new Uint16Array([0x3f80]) },
    };
    const path = join(dir, 'roundtrip.safetensors');
    writeSafetensorsFile(path, tensors, { format: 'pt', note: 'ünïcode "quoted"' });
    const file = openSafetensorsFile(path);
    try {
      expect(file.metadata).toEqual({ format: 'pt', note: 'ünïcode "quoted"' });
      expect(new Set(file.names())).toEqual(new Set(Object.keys(tensors)));
      for (const [name, t] of Object.entries(tensors)) {
        const back = file.read(name);
        expect(back.dtype, name).toBe(t.dtype);
        expect(back.shape, name).toEqual(t.shape);
        expect(back.data.constructor, name).toBe(t.data.constructor);
        expect(firstByteDifference(back.data, t.data), name).toBe(-1);
      }
      // writer and in-memory serializer agree byte for byte
      const inMemory = serializeSafetensors(new Map(Object.entries(tensors)), { format: 'pt', note: 'ünïcode "quoted"' });
      expect(firstByteDifference(readFileSync(path), inMemory)).toBe(-1);
    } finally {
      file.close();
    }
  });

  it('reads the dtype names of the format into core dtypes and refuses unsupported ones by name', () => {
    const bytes = rawFile('{"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}', 4);
    const r = openBytes(bytes);
    expect(r.entry('h').dtype).toBe('F16');
    expect(() => r.read('h')).toThrow(/tensor 'h' has dtype F16, which hcsp cannot load/);
    expect(() => r.read('nope')).toThrow(/missing tensor 'nope'/);
  });

  it('refuses bad tensors on write, naming them, and leaves no file', () => {
    const path = join(dir, 'bad-write.safetensors');
    expect(() => writeSafetensorsFile(path, { w: { dtype: 'bf16', shape: [2, 3], data: new Uint16Array(5) } })).toThrow(
      /tensor 'w': shape \[2,3\] needs 6 elements, data has 5/,
    );
    expect(() => writeSafetensorsFile(path, { w: { dtype: 'bf16', shape: [2], data: new Float32Array(2) } })).toThrow(
      /tensor 'w': dtype bf16 needs a Uint16Array, got a Float32Array/,
    );
    expect(() => writeSafetensorsFile(path, { w: f32Tensor([1], [1]) }, { n: 3 as unknown as string })).toThrow(/metadata 'n'/);
    expect(readdirSync(dir).filter((f) => f.includes('bad-write'))).toEqual([]);
  });

  it('a failure after the data is written (rename onto a directory) leaves no temp file and the target untouched', () => {
    const sub = mkdtempSync(join(dir, 'atomic-'));
    const target = join(sub, 'out.safetensors');
    mkdirSync(target);
    writeFileSync(join(target, 'keep'), 'x');
    expect(() => writeSafetensorsFile(target, { w: f32Tensor([4], [1, 2, 3, 4]) })).toThrow();
    expect(readdirSync(sub)).toEqual(['out.safetensors']);
    expect(readdirSync(target)).toEqual(['keep']);
  });

  it('overwrites an existing file only with a complete new one', () => {
    const path = join(dir, 'replace.safetensors');
    writeSafetensorsFile(path, { w: f32Tensor([1], [1]) });
    writeSafetensorsFile(path, { w: f32Tensor([2], [5, 6]) });
    const f = openSafetensorsFile(path);
    expect([...(f.read('w').data as Float32Array)]).toEqual([5, 6]);
    f.close();
  });
});

describe('safetensors header validation names the problem', () => {
  const ok = '{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
  const cases: [string, Uint8Array, RegExp][] = [
    ['file shorter than the length prefix', new Uint8Array(5), /truncated file: the header length needs 8 bytes, has 5/],
    ['header length past the end of the file', rawFile(ok, 8, 500), /truncated file: the header needs 508 bytes, the file has \d+/],
    ['header length over the 100 MB limit', rawFile(ok, 8, 200_000_000), /header length 200000000 exceeds/],
    ['header that is not JSON', rawFile('{"a": [1,', 0), /malformed header: not valid JSON/],
    [
      'header that is not UTF-8',
      (() => {
        const b = rawFile('{"a":1}', 0);
        b[10] = 0xff;
        return b;
      })(),
      /malformed header: not valid UTF-8/,
    ],
    ['header that is a JSON array', rawFile('[1,2]', 0), /malformed header: the JSON is not an object/],
    ['unknown dtype', rawFile('{"a":{"dtype":"F12","shape":[2],"data_offsets":[0,4]}}', 4), /tensor 'a' has unknown dtype "F12"/],
    ['fractional shape', rawFile('{"a":{"dtype":"BF16","shape":[1.5],"data_offsets":[0,3]}}', 3), /tensor 'a' has shape \[1.5\], not a list/],
    ['negative shape', rawFile('{"a":{"dtype":"BF16","shape":[-2],"data_offsets":[0,4]}}', 4), /tensor 'a' has shape \[-2\]/],
    ['offsets not a pair', rawFile('{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0]}}', 4), /tensor 'a' has data_offsets \[0\]/],
    ['end before begin', rawFile('{"a":{"dtype":"BF16","shape":[0],"data_offsets":[4,0]}}', 4), /tensor 'a' has data_offsets \[4,0\] with end before begin/],
    [
      'byte count not numel*itemsize',
      rawFile('{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}', 4),
      /tensor 'a' has 4 data bytes .* BF16 \[3\] needs 6/,
    ],
    [
      'overlapping tensors',
      rawFile('{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}', 6),
      /tensor 'b' \(bytes \[2,6\)\) overlaps tensor 'a'/,
    ],
    ['a gap between tensors', rawFile('{"a":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}', 6), /tensor 'a' starts at data byte 2, leaving a gap/],
    ['truncated data', rawFile(ok, 6), /truncated file: tensor 'b' needs \d+ bytes, the file has \d+/],
    ['trailing bytes after the last tensor', rawFile(ok, 12), /the tensors cover 8 data bytes but the file holds 12/],
    ['non-string metadata', rawFile('{"__metadata__":{"k":1}}', 0), /__metadata__ must map strings to strings/],
    ['a tensor entry that is not an object', rawFile('{"a":5}', 0), /tensor 'a' is 5, not an object/],
  ];
  for (const [what, bytes, message] of cases) {
    it(what, () => {
      expect(() => openBytes(bytes)).toThrow(message);
    });
  }

  it('accepts the well-formed variant of the same header', () => {
    const r = openBytes(rawFile(ok, 8));
    expect(r.names()).toEqual(['a', 'b']);
    expect(r.read('b').shape).toEqual([1]);
  });

  it('a file truncated after opening is reported when the tensor is read', () => {
    const path = join(dir, 'shrinks.safetensors');
    writeSafetensorsFile(path, { w: f32Tensor([4], [1, 2, 3, 4]) });
    const f = openSafetensorsFile(path);
    writeFileSync(path, readFileSync(path).subarray(0, statSync(path).size - 4));
    expect(() => f.read('w')).toThrow(/truncated file: needs \d+ bytes, has \d+/);
    f.close();
  });
});

describe('reading one tensor of a large file reads only its bytes', () => {
  it('200 MB on disk, one 4 MB tensor read: bytes read = header + that tensor', () => {
    const chunkElems = 2 * 1024 * 1024; // 4 MB of bf16 per tensor
    const filler = new Uint16Array(chunkElems).fill(0x3f80);
    const target = new Uint16Array(chunkElems).map((_, i) => (i * 2654435761) >>> 16);
    const tensors = new Map<string, Tensor>();
    for (let k = 0; k < 50; k++) {
      // names sort so that 'layer.37' sits in the middle of the data section
      tensors.set(`layer.${String(k).padStart(2, '0')}`, { dtype: 'bf16', shape: [chunkElems], data: k === 37 ? target : filler });
    }
    const path = join(dir, 'large.safetensors');
    writeSafetensorsFile(path, tensors);
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(200 * 1024 * 1024);

    const file = new FileByteSource(path);
    let bytesRead = 0;
    const counting: ByteSource = {
      size: file.size,
      readInto(offset, into) {
        bytesRead += into.length;
        file.readInto(offset, into);
      },
    };
    const before = process.memoryUsage().arrayBuffers;
    const reader = new SafetensorsReader(counting, path);
    const headerRead = bytesRead;
    const t = reader.read('layer.37');
    const grown = process.memoryUsage().arrayBuffers - before;
    file.close();

    expect(headerRead).toBe(reader.header.dataStart);
    expect(bytesRead).toBe(reader.header.dataStart + chunkElems * 2);
    expect(grown).toBeLessThan(16 * 1024 * 1024);
    expect(t.shape).toEqual([chunkElems]);
    expect(firstByteDifference(t.data, target)).toBe(-1);
  });
});
