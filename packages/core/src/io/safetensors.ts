// The .safetensors format, without any file system: an 8-byte little-endian u64 header
// length N, N bytes of JSON header, then the raw little-endian tensor bytes. Everything
// here works on Uint8Arrays and a synchronous ByteSource, so a browser can use it over an
// ArrayBuffer; the Node file I/O lives in safetensorsFile.ts.
//
// Validation follows the Hugging Face Rust implementation (safetensors/src/tensor.rs):
// header at most 100 MB, entries sorted by offset must tile the data section exactly
// (no gap, no overlap, the last one ends at the end of the file), end - begin must equal
// numel * itemsize, and __metadata__ is a string -> string map. The writer reproduces its
// byte layout: tensors sorted by descending dtype (its enum is in increasing alignment
// order) then by name, compact JSON with __metadata__ first, padded with spaces to 8 bytes.
import { checkAxisSlice, type AxisSlice } from '../tensor/axisSlice.ts';
import { allocData, numel, shapeStr, type DType, type Tensor, type TensorData } from '../tensor/tensor.ts';

/** Largest header the reference implementation accepts (its MAX_HEADER_SIZE). */
export const SAFETENSORS_MAX_HEADER_BYTES = 100_000_000;

// Every dtype name the format knows (byte-sized ones; sub-byte F4/F6 packings are not
// accepted), in the reference enum's order, which is increasing alignment; FNUZ is ROCm's
// fp8 variant (numerics.md), written by AMD's tooling, ordered next to F8_E4M3.
const DTYPE_ITEM_BYTES = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  F8_E4M3FNUZ: 1,
  F8_E5M2FNUZ: 1,
  F8_E8M0: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
} as const;

export type SafetensorsDtype = keyof typeof DTYPE_ITEM_BYTES;

const DTYPE_ORDER = Object.keys(DTYPE_ITEM_BYTES) as SafetensorsDtype[];

const TO_CORE_DTYPE: Partial<Record<SafetensorsDtype, DType>> = {
  BF16: 'bf16',
  F32: 'f32',
  I32: 'i32',
  F8_E4M3: 'fp8e4m3fn',
  F8_E4M3FNUZ: 'fp8e4m3fnuz',
};

const FROM_CORE_DTYPE: Record<DType, SafetensorsDtype> = {
  bf16: 'BF16',
  f32: 'F32',
  i32: 'I32',
  fp8e4m3fn: 'F8_E4M3',
  fp8e4m3fnuz: 'F8_E4M3FNUZ',
};

export function isSafetensorsDtype(s: string): s is SafetensorsDtype {
  return Object.hasOwn(DTYPE_ITEM_BYTES, s);
}

export function safetensorsItemBytes(dtype: SafetensorsDtype): number {
  return DTYPE_ITEM_BYTES[dtype];
}

/** The core dtype a file dtype loads as, or null when hcsp has no tensor type for it. */
export function coreDtypeOf(dtype: SafetensorsDtype): DType | null {
  return TO_CORE_DTYPE[dtype] ?? null;
}

export function safetensorsDtypeOf(dtype: DType): SafetensorsDtype {
  return FROM_CORE_DTYPE[dtype];
}

// The format is little-endian and tensors are read straight into typed arrays.
const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function requireLittleEndianHost(): void {
  if (!HOST_IS_LITTLE_ENDIAN) throw new Error('safetensors: big-endian hosts are not supported (the format is little-endian)');
}

export interface SafetensorsEntry {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** byte offsets relative to the start of the data section (the byte after the header) */
  readonly begin: number;
  readonly end: number;
}

export interface SafetensorsHeader {
  /** N: the JSON header's length in bytes (padding included) */
  readonly headerBytes: number;
  /** absolute file offset of the data section: 8 + N */
  readonly dataStart: number;
  /** entries in data-offset order */
  readonly entries: readonly SafetensorsEntry[];
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * N from the first 8 bytes, checked against the file size and the reference's limit. A
 * length beyond either, with no JSON object after it (`prefix` holds the 9th byte when the
 * file has one), is another kind of file: its bytes are not shown as a length.
 */
export function parseHeaderLength(prefix: Uint8Array, fileBytes: number, label: string): number {
  if (fileBytes < 8 || prefix.length < 8) {
    throw new Error(`${label}: truncated file: the header length needs 8 bytes, has ${Math.min(fileBytes, prefix.length)}`);
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if ((n > BigInt(SAFETENSORS_MAX_HEADER_BYTES) || 8n + n > BigInt(fileBytes)) && prefix[8] !== 0x7b) {
    throw new Error(`${label}: not a safetensors file (its first 8 bytes are no header length within its ${fileBytes} bytes, and no JSON header follows them)`);
  }
  if (n > BigInt(SAFETENSORS_MAX_HEADER_BYTES)) {
    throw new Error(`${label}: malformed header: header length ${n} exceeds the ${SAFETENSORS_MAX_HEADER_BYTES}-byte limit`);
  }
  const headerBytes = Number(n);
  if (headerBytes < 2) throw new Error(`${label}: malformed header: header length ${headerBytes} is too small for a JSON object`);
  if (8 + headerBytes > fileBytes) {
    throw new Error(`${label}: truncated file: the header needs ${8 + headerBytes} bytes, the file has ${fileBytes}`);
  }
  return headerBytes;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isByteCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function parseEntry(name: string, raw: unknown, label: string): SafetensorsEntry {
  const bad = (what: string): Error => new Error(`${label}: malformed header: tensor '${name}' ${what}`);
  if (!isPlainObject(raw)) throw bad(`is ${JSON.stringify(raw)}, not an object`);
  const { dtype, shape, data_offsets: offsets } = raw;
  if (typeof dtype !== 'string' || !isSafetensorsDtype(dtype)) {
    throw bad(`has unknown dtype ${JSON.stringify(dtype)} (known: ${DTYPE_ORDER.join(', ')})`);
  }
  if (!Array.isArray(shape) || !shape.every(isByteCount)) throw bad(`has shape ${JSON.stringify(shape)}, not a list of non-negative integers`);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isByteCount)) {
    throw bad(`has data_offsets ${JSON.stringify(offsets)}, not [begin, end] non-negative integers`);
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin) throw bad(`has data_offsets [${begin},${end}] with end before begin`);
  const bytes = numel(shape) * DTYPE_ITEM_BYTES[dtype];
  if (!Number.isSafeInteger(bytes)) throw bad(`has shape ${shapeStr(shape)} too large to address`);
  if (end - begin !== bytes) {
    throw bad(`has ${end - begin} data bytes (data_offsets [${begin},${end}]) but ${dtype} ${shapeStr(shape)} needs ${bytes}`);
  }
  return { name, dtype, shape: [...shape], begin, end };
}

/**
 * Parse and fully validate a header: `json` is the N header bytes, `fileBytes` the whole
 * file's size (so a truncated or over-long data section is caught before any tensor read).
 */
export function parseSafetensorsHeader(json: Uint8Array, fileBytes: number, label: string): SafetensorsHeader {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(json);
  } catch {
    throw new Error(`${label}: malformed header: not valid UTF-8`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new Error(`${label}: malformed header: not valid JSON (${(e as Error).message})`);
  }
  if (!isPlainObject(parsed)) throw new Error(`${label}: malformed header: the JSON is not an object`);

  let metadata: Record<string, string> = {};
  const entries: SafetensorsEntry[] = [];
  for (const [name, raw] of Object.entries(parsed)) {
    if (name === '__metadata__') {
      if (!isPlainObject(raw) || !Object.values(raw).every((v) => typeof v === 'string')) {
        throw new Error(`${label}: malformed header: __metadata__ must map strings to strings, got ${JSON.stringify(raw)}`);
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    entries.push(parseEntry(name, raw, label));
  }
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);

  const dataStart = 8 + json.length;
  const dataBytes = fileBytes - dataStart;
  let cursor = 0;
  let previous: SafetensorsEntry | null = null;
  for (const e of entries) {
    if (e.begin < cursor) {
      throw new Error(
        `${label}: malformed header: tensor '${e.name}' (bytes [${e.begin},${e.end})) overlaps tensor '${previous?.name}' (bytes [${previous?.begin},${previous?.end}))`,
      );
    }
    if (e.begin > cursor) {
      throw new Error(`${label}: malformed header: tensor '${e.name}' starts at data byte ${e.begin}, leaving a gap after byte ${cursor}`);
    }
    if (e.end > dataBytes) {
      throw new Error(`${label}: truncated file: tensor '${e.name}' needs ${dataStart + e.end} bytes, the file has ${fileBytes}`);
    }
    cursor = e.end;
    previous = e;
  }
  if (cursor !== dataBytes) {
    throw new Error(`${label}: malformed file: the tensors cover ${cursor} data bytes but the file holds ${dataBytes} after the header`);
  }
  return { headerBytes: json.length, dataStart, entries, metadata };
}

/** Synchronous positioned reads: a file (Node), an in-memory buffer (anywhere). */
export interface ByteSource {
  readonly size: number;
  /** fill `target` completely with the bytes at `offset`, or throw */
  readInto(offset: number, target: Uint8Array): void;
}

export function bufferByteSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    readInto(offset, target) {
      if (offset + target.length > bytes.length) {
        throw new Error(`truncated buffer: needs ${offset + target.length} bytes, has ${bytes.length}`);
      }
      target.set(bytes.subarray(offset, offset + target.length));
    },
  };
}

/** The header of a source, validated; reads only the first 8 + N bytes. */
export function readSafetensorsHeader(source: ByteSource, label: string): SafetensorsHeader {
  let prefix = new Uint8Array(8);
  if (source.size >= 8) source.readInto(0, prefix);
  const n = new DataView(prefix.buffer).getBigUint64(0, true);
  if (source.size > 8 && (n > BigInt(SAFETENSORS_MAX_HEADER_BYTES) || 8n + n > BigInt(source.size))) {
    // an implausible length: the byte after it tells a truncated file from another kind of file
    prefix = new Uint8Array(9);
    source.readInto(0, prefix);
  }
  const headerBytes = parseHeaderLength(prefix, source.size, label);
  const json = new Uint8Array(headerBytes);
  source.readInto(8, json);
  return parseSafetensorsHeader(json, source.size, label);
}

/** Random access to the tensors of one safetensors source; each read touches only that tensor's bytes. */
export class SafetensorsReader {
  readonly header: SafetensorsHeader;
  /** tensor bytes read so far (slice reads count only their runs) */
  bytesRead = 0;
  private readonly byName: Map<string, SafetensorsEntry>;

  constructor(
    private readonly source: ByteSource,
    readonly label: string,
  ) {
    this.header = readSafetensorsHeader(source, label);
    this.byName = new Map(this.header.entries.map((e) => [e.name, e]));
  }

  get metadata(): Readonly<Record<string, string>> {
    return this.header.metadata;
  }

  /** tensor names in data-offset order */
  names(): string[] {
    return this.header.entries.map((e) => e.name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  entry(name: string): SafetensorsEntry {
    const e = this.byName.get(name);
    if (!e) throw new Error(`${this.label}: missing tensor '${name}'`);
    return e;
  }

  read(name: string): Tensor {
    const { e, dtype } = this.loadable(name);
    const data = allocData(dtype, numel(e.shape));
    this.readBytes(this.header.dataStart + e.begin, bytesOf(data));
    return { dtype, shape: [...e.shape], data };
  }

  /**
   * Only `slice` of a tensor: one positioned read per contiguous run (a row slice is one
   * run; a column slice one run per row), so a rank reads only its own bytes.
   */
  readSlice(name: string, slice: AxisSlice): Tensor {
    const { dtype, shape, runs } = this.runs(name, slice);
    const data = allocData(dtype, numel(shape));
    const out = bytesOf(data);
    let o = 0;
    for (const r of runs) {
      this.readBytes(r.offset, out.subarray(o, o + r.bytes));
      o += r.bytes;
    }
    return { dtype, shape, data };
  }

  /**
   * The file byte runs (absolute offsets) read(name) or readSlice(name, slice) reads, in
   * order: a native loader reads the same bytes itself.
   */
  runs(name: string, slice?: AxisSlice): { dtype: DType; shape: number[]; runs: { offset: number; bytes: number }[] } {
    const { e, dtype } = this.loadable(name);
    if (!slice) return { dtype, shape: [...e.shape], runs: [{ offset: this.header.dataStart + e.begin, bytes: e.end - e.begin }] };
    checkAxisSlice(e.shape, slice, `${this.label}: tensor '${name}'`);
    const item = safetensorsItemBytes(e.dtype);
    const dim = e.shape[slice.axis];
    const outer = numel(e.shape.slice(0, slice.axis));
    const inner = numel(e.shape.slice(slice.axis + 1));
    const shape = [...e.shape];
    shape[slice.axis] = slice.ranges.reduce((acc, [a, b]) => acc + b - a, 0);
    const runs: { offset: number; bytes: number }[] = [];
    for (let i = 0; i < outer; i++) {
      for (const [a, b] of slice.ranges) {
        runs.push({ offset: this.header.dataStart + e.begin + (i * dim + a) * inner * item, bytes: (b - a) * inner * item });
      }
    }
    return { dtype, shape, runs };
  }

  /** An I64 tensor (token ids in a golden dump) as i32: a value outside int32 is an error naming it. */
  readInt64AsI32(name: string): Tensor {
    requireLittleEndianHost();
    const e = this.entry(name);
    if (e.dtype !== 'I64') throw new Error(`${this.label}: tensor '${name}' has dtype ${e.dtype}, expected I64`);
    const wide = new BigInt64Array(numel(e.shape));
    this.readBytes(this.header.dataStart + e.begin, new Uint8Array(wide.buffer));
    const data = new Int32Array(wide.length);
    for (let i = 0; i < wide.length; i++) {
      const v = wide[i];
      if (v < -2147483648n || v > 2147483647n) throw new Error(`${this.label}: tensor '${name}' element ${i} is ${v}, outside int32`);
      data[i] = Number(v);
    }
    return { dtype: 'i32', shape: [...e.shape], data };
  }

  private loadable(name: string): { e: SafetensorsEntry; dtype: DType } {
    requireLittleEndianHost();
    const e = this.entry(name);
    const dtype = coreDtypeOf(e.dtype);
    if (dtype === null) {
      throw new Error(`${this.label}: tensor '${name}' has dtype ${e.dtype}, which hcsp cannot load (supported: ${Object.keys(TO_CORE_DTYPE).join(', ')})`);
    }
    return { e, dtype };
  }

  private readBytes(offset: number, target: Uint8Array): void {
    this.source.readInto(offset, target);
    this.bytesRead += target.length;
  }
}

function bytesOf(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

const ARRAY_TYPE: Record<DType, new (length: number) => TensorData> = {
  bf16: Uint16Array,
  f32: Float32Array,
  i32: Int32Array,
  fp8e4m3fn: Uint8Array,
  fp8e4m3fnuz: Uint8Array,
};

/** A tensor's raw little-endian bytes: a view over its data, no copy. */
export function tensorBytes(name: string, t: Tensor): Uint8Array {
  requireLittleEndianHost();
  const arrayType = ARRAY_TYPE[t.dtype];
  if (!(t.data instanceof arrayType)) {
    throw new Error(`tensor '${name}': dtype ${t.dtype} needs a ${arrayType.name}, got a ${t.data.constructor.name}`);
  }
  if (!t.shape.every(isByteCount)) throw new Error(`tensor '${name}': shape ${JSON.stringify(t.shape)} is not a list of non-negative integers`);
  const n = numel(t.shape);
  if (t.data.length !== n) throw new Error(`tensor '${name}': shape ${shapeStr(t.shape)} needs ${n} elements, data has ${t.data.length}`);
  return bytesOf(t.data);
}

export interface SafetensorsLayout {
  /** the first 8 + N bytes of the file: length prefix and space-padded JSON */
  readonly header: Uint8Array;
  /** tensors in the order their bytes follow the header */
  readonly order: readonly { name: string; bytes: Uint8Array }[];
  readonly fileBytes: number;
}

/**
 * A tensor of a file dtype hcsp computes with no tensor type for (int64 ids in a dump, the
 * PLE's int64 buffers): its little-endian bytes as they go into the file.
 */
export interface RawFileTensor {
  fileDtype: SafetensorsDtype;
  shape: readonly number[];
  bytes: Uint8Array;
}

/** int64 values as a RawFileTensor. */
export function int64FileTensor(shape: readonly number[], values: ArrayLike<number>): RawFileTensor {
  requireLittleEndianHost();
  const data = BigInt64Array.from(Array.from(values, (v) => BigInt(v)));
  if (data.length !== numel(shape)) throw new Error(`int64 tensor: ${data.length} values for shape ${shapeStr(shape)}`);
  return { fileDtype: 'I64', shape, bytes: new Uint8Array(data.buffer) };
}

function fileBytesOf(name: string, t: Tensor | RawFileTensor): { st: SafetensorsDtype; bytes: Uint8Array } {
  if ('fileDtype' in t) {
    if (t.bytes.length !== numel(t.shape) * safetensorsItemBytes(t.fileDtype))
      throw new Error(`tensor '${name}': ${t.bytes.length} bytes for ${t.fileDtype}${shapeStr(t.shape)}`);
    return { st: t.fileDtype, bytes: t.bytes };
  }
  return { st: FROM_CORE_DTYPE[t.dtype], bytes: tensorBytes(name, t) };
}

/** Header and data order for a set of tensors, laid out as the reference serializer does. */
export function layoutSafetensors(tensors: ReadonlyMap<string, Tensor | RawFileTensor>, metadata: Readonly<Record<string, string>> = {}): SafetensorsLayout {
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== 'string') throw new Error(`safetensors metadata '${k}': value must be a string, got ${JSON.stringify(v)}`);
  }
  const items = [...tensors].map(([name, t]) => {
    if (name === '' || name === '__metadata__') throw new Error(`tensor name ${JSON.stringify(name)} is not allowed`);
    return { name, t, ...fileBytesOf(name, t) };
  });
  const rank = (d: SafetensorsDtype): number => DTYPE_ORDER.indexOf(d);
  items.sort((a, b) => rank(b.st) - rank(a.st) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const json: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) json.__metadata__ = metadata;
  let offset = 0;
  for (const { name, t, st, bytes } of items) {
    json[name] = { dtype: st, shape: [...t.shape], data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
  }
  const text = new TextEncoder().encode(JSON.stringify(json));
  const padded = Math.ceil(text.length / 8) * 8;
  const header = new Uint8Array(8 + padded).fill(0x20, 8 + text.length);
  new DataView(header.buffer).setBigUint64(0, BigInt(padded), true);
  header.set(text, 8);
  return { header, order: items.map(({ name, bytes }) => ({ name, bytes })), fileBytes: header.length + offset };
}

/** The whole file in memory (small files, browsers); large files go through safetensorsFile.ts. */
export function serializeSafetensors(tensors: ReadonlyMap<string, Tensor | RawFileTensor>, metadata?: Readonly<Record<string, string>>): Uint8Array {
  const layout = layoutSafetensors(tensors, metadata);
  const out = new Uint8Array(layout.fileBytes);
  out.set(layout.header, 0);
  let at = layout.header.length;
  for (const { bytes } of layout.order) {
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}
