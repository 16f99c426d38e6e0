// Checkpoint weights from .safetensors files: one file, a list of shards, or Hugging
// Face's model.safetensors.index.json. Only headers are read when opening; read() reads one
// tensor's bytes, or only a slice's, on demand (no cache: callers that reuse a weight keep it).
import { coreDtypeOf, type SafetensorsEntry } from '../io/safetensors.ts';
import { JSON_LIMITS, JsonInputError, readJsonInput } from '../io/jsonFile.ts';
import { confinedShards } from './indexShards.ts';
import { FileByteSource, openSafetensorsFile, type SafetensorsFile } from '../io/safetensorsFile.ts';
import { sameShape, shapeStr, type DType, type Tensor } from '../tensor/tensor.ts';
import type { WeightSlice } from '../graph/graph.ts';
import type { PlannedReadFindings, WeightFilePlan, WeightInfo, WeightSource } from './weightSource.ts';

/** What a caller expects of one tensor (model/weightSpec.ts's WeightSpec fits). */
export interface ExpectedTensor {
  name: string;
  shape: readonly number[];
  dtype: DType;
}

export class SafetensorsWeightSource implements WeightSource {
  private readonly fileOf = new Map<string, SafetensorsFile>();
  private rawBytes = 0;

  private constructor(private readonly files: readonly SafetensorsFile[]) {
    for (const f of files) {
      for (const name of f.names()) {
        const other = this.fileOf.get(name);
        if (other) throw new Error(`tensor '${name}' is in two shards: ${other.label} and ${f.label}`);
        this.fileOf.set(name, f);
      }
    }
  }

  /** `paths`: one .safetensors file, a list of shards, or a *.index.json naming the shards. */
  static open(paths: string | readonly string[]): SafetensorsWeightSource {
    if (typeof paths === 'string' && paths.endsWith('.index.json')) return SafetensorsWeightSource.openIndex(paths);
    const list = typeof paths === 'string' ? [paths] : paths;
    if (list.length === 0) throw new Error('SafetensorsWeightSource: no files given');
    const files: SafetensorsFile[] = [];
    try {
      for (const p of list) files.push(openSafetensorsFile(p));
      return new SafetensorsWeightSource(files);
    } catch (e) {
      for (const f of files) f.close();
      throw e;
    }
  }

  private static openIndex(indexPath: string): SafetensorsWeightSource {
    let weightMap: unknown;
    try {
      weightMap = (readJsonInput(indexPath, JSON_LIMITS.index) as { weight_map?: unknown } | null)?.weight_map;
    } catch (e) {
      throw new Error(`${indexPath}: malformed index: ${e instanceof JsonInputError ? e.reason : (e as Error).message}`);
    }
    if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap) || !Object.values(weightMap).every((v) => typeof v === 'string')) {
      throw new Error(`${indexPath}: malformed index: weight_map must map tensor names to shard file names`);
    }
    const mapping = weightMap as Record<string, string>;
    if (Object.keys(mapping).length === 0) throw new Error(`${indexPath}: the index's weight_map is empty: it names no tensors`);
    const shardOf = confinedShards(indexPath, mapping);
    const shards = [...new Set(shardOf.values())];
    const source = SafetensorsWeightSource.open(shards);
    // The index is a claim about the shards: hold it to them.
    for (const [name, expected] of shardOf) {
      const actual = source.fileOf.get(name);
      if (actual?.label !== expected) {
        source.close();
        throw new Error(`${indexPath}: tensor '${name}' is indexed in ${expected} but ${actual ? `found in ${actual.label}` : 'is in no shard'}`);
      }
    }
    return source;
  }

  names(): string[] {
    return [...this.fileOf.keys()];
  }

  has(name: string): boolean {
    return this.fileOf.has(name);
  }

  /** dtype, shape and offsets from the header, without reading data */
  entry(name: string): SafetensorsEntry {
    return this.fileFor(name).entry(name);
  }

  /** the files opened, in order */
  fileNames(): string[] {
    return this.files.map((f) => f.label);
  }

  /** the file holding a tensor */
  fileOfTensor(name: string): string {
    return this.fileFor(name).label;
  }

  /** A tensor's raw little-endian bytes, whatever its dtype (int64 buffers have no core dtype). */
  readRawBytes(name: string): Uint8Array {
    const f = this.fileFor(name);
    const e = f.entry(name);
    const out = new Uint8Array(e.end - e.begin);
    const file = new FileByteSource(f.label);
    try {
      file.readInto(f.header.dataStart + e.begin, out);
    } finally {
      file.close();
    }
    this.rawBytes += out.length;
    return out;
  }

  info(name: string): WeightInfo {
    const e = this.fileFor(name).entry(name);
    const dtype = coreDtypeOf(e.dtype);
    if (dtype === null) throw new Error(`${this.fileFor(name).label}: tensor '${name}' has dtype ${e.dtype}, which hcsp cannot load`);
    return { shape: e.shape, dtype };
  }

  async read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const f = this.fileFor(name);
    return slice ? f.readSlice(name, slice) : f.read(name);
  }

  /** read(name, slice) as the file byte runs it reads (every loadable dtype is a plain copy) */
  filePlan(name: string, slice?: WeightSlice): WeightFilePlan {
    const f = this.fileFor(name);
    const { dtype, shape, runs } = f.runs(name, slice);
    return { dtype, shape, runs: runs.map((r) => ({ file: f.label, identity: f.identity, ...r })) };
  }

  /** a loader read filePlan(name, slice) itself: its bytes count as read */
  plannedRead(_name: string, _slice: WeightSlice | undefined, found: PlannedReadFindings): void {
    this.rawBytes += found.bytes;
  }

  /** tensor bytes read from every shard so far */
  bytesRead(): number {
    return this.files.reduce((acc, f) => acc + f.bytesRead, this.rawBytes);
  }

  /** Check every expected tensor's presence, shape and dtype; one error listing every problem. */
  validateAgainst(specs: readonly ExpectedTensor[]): void {
    const problems: string[] = [];
    for (const spec of specs) {
      const file = this.fileOf.get(spec.name);
      if (!file) {
        problems.push(`missing tensor '${spec.name}'`);
        continue;
      }
      const e = file.entry(spec.name);
      const dtype = coreDtypeOf(e.dtype);
      if (dtype !== spec.dtype) {
        problems.push(`tensor '${spec.name}': wrong dtype: expected ${spec.dtype}, got ${dtype ?? e.dtype}`);
      }
      if (!sameShape(e.shape, spec.shape)) {
        problems.push(`tensor '${spec.name}': wrong shape: expected ${shapeStr(spec.shape)}, got ${shapeStr(e.shape)}`);
      }
    }
    if (problems.length > 0) {
      const where = this.files.map((f) => f.label).join(', ');
      throw new Error(`${where}: ${problems.length} tensor problem${problems.length > 1 ? 's' : ''}: ${problems.join('; ')}`);
    }
  }

  close(): void {
    for (const f of this.files) f.close();
  }

  private fileFor(name: string): SafetensorsFile {
    const f = this.fileOf.get(name);
    if (!f) throw new Error(`${this.files.map((x) => x.label).join(', ')}: missing tensor '${name}'`);
    return f;
  }
}
