// A Hugging Face checkpoint (model folder, index, one file or a folder of shards) served
// under the names the model reads (HF modeling_qwen4_exp.py's state dict):
// - `model.language_model.X` (the multimodal checkpoint) is read as `model.X`, as ATOM's
//   weights_mapping does; `model.visual.*` and anything else the model does not read is
//   reported once as unused.
// - the FP8 release's per-expert tensors `mlp.experts.{e}.{gate,up,down}_proj.weight` are
//   served as the stacked `mlp.experts.gate_up_proj` [E, 2I, H] (gate rows, then up rows:
//   HF chunks dim 1 in two) and `mlp.experts.down_proj` [E, H, I]; a slice of the stack
//   reads only the experts (and rows/columns) it covers.
// - FP8 tensors are dequantized to bf16 on read, per their scale tensor:
//   `weight_scale_inv` [ceil(N/bn), ceil(K/bk)] fp32 block scales (config.json's
//   quantization_config.weight_block_size, default 128 x 128):  w = bf(fl(q * s[block]))
//   (the dequantization of DeepSeek-style block FP8: an fp32 product, then the model's
//   bf16); one global `weight_scale` [1] (the PLE table, ATOM _fp8_embedding_kernel):
//   w = bf(q * bf(s)), the product of two bf16 values exact in fp32; per-channel
//   `weight_scale` [N, 1] (the PTPC-FP8 release, fp8PerChannel.ts): w = bf(fl(q * s[o])).
//   e4m3fn and e4m3fnuz decode exactly (numerics/fp8.ts). An FP8 tensor where the
//   reference keeps bf16 (the router, GDN input projections, ...) is refused.
// - fp32 tensors the model reads as bf16 (A_log, norm weights may be stored in fp32) are
//   rounded to bf16 to nearest even, as HF's and ATOM's loaders do when they copy them into
//   bf16 parameters; bf16 tensors read as fp32 widen exactly.
// - the PLE's int64 buffers, when present, must equal their derivation (ATOM _verify_derived).
// Opening reads headers only (and those few int64 values); every read is a positioned
// read of the bytes it needs.
import { lstatSync, readdirSync, statSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseHfConfig, readJsonFile } from '../config/hfConfig.ts';
import type { ModelConfig } from '../config/modelConfig.ts';
import type { WeightSlice } from '../graph/graph.ts';
import { errnoReason } from '../io/fileErrors.ts';
import { coreDtypeOf, type SafetensorsDtype } from '../io/safetensors.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { pleBuffers } from '../layers/ple/pleWeights.ts';
import { bf16ToF32, f32ToBf16, roundBf16 } from '../numerics/bf16.ts';
import type { Fp8Format } from '../numerics/fp8.ts';
import { checkAxisSlice } from '../tensor/axisSlice.ts';
import { numel, sameShape, shapeStr, type DType, type Tensor } from '../tensor/tensor.ts';
import {
  checkPerChannelScales,
  configDeclaresBlocks,
  fnBytesAsFnuz,
  fp8ScaledTable as scaledTable,
  fp8WhereBf16Problem,
  globalScaleValue,
  isPerChannelScaleShape,
  perChannelScaleProblem,
  readFp8PerChannel,
} from './fp8PerChannel.ts';
import { formatCheckpointProblem, type CheckpointProblem } from './checkpointProblem.ts';
import type { Fp8WeightLookup, Fp8WeightParts } from './fp8WeightLinears.ts';
import { modelWeightSpecs } from './modelWeights.ts';
import { SafetensorsWeightSource } from './safetensorsWeights.ts';
import type { PlannedReadFindings, WeightFilePlan, WeightInfo, WeightSource } from './weightSource.ts';
import type { WeightSpec } from './weightSpec.ts';

const MULTIMODAL_PREFIX = 'model.language_model.';
const PER_EXPERT = /^(.+\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$/;
const SCALE_SUFFIXES = ['.weight_scale_inv', '.weight_scale', '.input_scale'];
const FP8_FORMAT: Partial<Record<SafetensorsDtype, Fp8Format>> = { F8_E4M3: 'e4m3fn', F8_E4M3FNUZ: 'e4m3fnuz' };
const DEFAULT_BLOCK: [number, number] = [128, 128];
const MAX_PROBLEMS_SHOWN = 8;

/** One tensor the model can read: what it is, which checkpoint tensors it comes from, how to read a slice. */
interface Provider {
  readonly info: WeightInfo;
  /** checkpoint tensor names (as stored) it reads */
  readonly stored: readonly string[];
  read(slice?: WeightSlice): Promise<Tensor>;
  /** read(slice) as file byte runs, for a plain copy of stored bytes (absent: the read converts) */
  plan?(slice?: WeightSlice): WeightFilePlan | null;
}

/** The model's view of a checkpoint; close() when done. */
export class CheckpointWeightSource implements WeightSource, Fp8WeightLookup {
  constructor(
    private readonly raw: SafetensorsWeightSource,
    private readonly providers: ReadonlyMap<string, Provider>,
    private readonly fp8Parts: ReadonlyMap<string, Fp8WeightParts> = new Map(),
  ) {}

  /**
   * where a per-channel FP8 weight's bytes and scales are served (keepFp8Weights), as stored
   * or in `format`, or null: e4m3fn converts to e4m3fnuz as ATOM's
   * normalize_e4m3fn_to_e4m3fnuz does (the same bits, 0x80 -> 0, scales x2: exact)
   */
  fp8PerChannel(name: string, format?: Fp8Format): Fp8WeightParts | null {
    const p = this.fp8Parts.get(name);
    if (!p || format === undefined || format === p.format) return p ?? null;
    if (p.format === 'e4m3fn' && format === 'e4m3fnuz') return { q: `${name}#fp8_e4m3fnuz`, scale: `${name}#fp8_e4m3fnuz_scale`, format };
    throw new Error(`checkpoint tensor '${name}' is ${p.format} FP8: it cannot run as ${format} (only e4m3fn converts to e4m3fnuz, as in ATOM)`);
  }

  has(name: string): boolean {
    return this.providers.has(name);
  }

  names(): string[] {
    return [...this.providers.keys()];
  }

  info(name: string): WeightInfo {
    return this.provider(name).info;
  }

  read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const p = this.provider(name);
    if (slice) checkAxisSlice(p.info.shape, slice, `checkpoint tensor '${name}'`);
    return p.read(slice);
  }

  /** read(name, slice) as file byte runs when it copies stored bytes as they are; null when it converts them */
  filePlan(name: string, slice?: WeightSlice): WeightFilePlan | null {
    const p = this.provider(name);
    if (slice) checkAxisSlice(p.info.shape, slice, `checkpoint tensor '${name}'`);
    return p.plan?.(slice) ?? null;
  }

  /** a loader read filePlan(name, slice) itself: counted as read */
  plannedRead(name: string, slice: WeightSlice | undefined, found: PlannedReadFindings): void {
    this.raw.plannedRead(name, slice, found);
  }

  /** checkpoint bytes read so far, every file together */
  bytesRead(): number {
    return this.raw.bytesRead();
  }

  close(): void {
    this.raw.close();
  }

  private provider(name: string): Provider {
    const p = this.providers.get(name);
    if (!p) throw new Error(`checkpoint: no tensor '${name}' (files: ${this.raw.fileNames().join(', ')})`);
    return p;
  }
}

export interface CheckpointOptions {
  /** the tensors the model reads, validated at open (default: the decoder's, modelWeightSpecs) */
  specs?: readonly WeightSpec[];
}

export interface OpenedCheckpoint {
  source: CheckpointWeightSource;
  /** checkpoint tensors the model does not read, as stored, sorted: print once as a warning */
  unused: string[];
  /** the conversions applied on read, one line each (fp8 dequantization, fp32 -> bf16) */
  conversions: string[];
  /** the .safetensors files opened */
  files: string[];
  /** every file opening read (index, config.json, shards): what an output must not replace */
  inputs: string[];
}

/** The .safetensors file(s) or index a path names: a file, an index, or a model folder. */
export function locateCheckpoint(path: string): string | string[] {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new Error(`${path}: no such checkpoint file or model folder`);
    throw new Error(`${path}: ${errnoReason(e)}`);
  }
  if (!st.isDirectory()) {
    if (path.endsWith('.safetensors') || path.endsWith('.index.json')) return path;
    throw new Error(`${path}: not a .safetensors file, a *.index.json or a model folder`);
  }
  // present even when a link to nowhere or a loop: opening it then says which
  const index = join(path, 'model.safetensors.index.json');
  if (lstatOrNull(index)) return index;
  const single = join(path, 'model.safetensors');
  if (lstatOrNull(single)) return single;
  // hidden files are other writers' temporaries
  const shards = readdirSync(path)
    .filter((f) => f.endsWith('.safetensors') && !f.startsWith('.'))
    .sort();
  if (shards.length === 0) throw new Error(`${path}: the model folder has no .safetensors files and no model.safetensors.index.json`);
  return shards.map((f) => join(path, f));
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** The checkpoint's own config.json, if the path sits in (or is) a model folder. */
function folderConfigPath(path: string): string | null {
  const candidate = statSync(path).isDirectory() ? join(path, 'config.json') : join(dirname(path), 'config.json');
  return lstatOrNull(candidate) ? candidate : null;
}

/** Leaf fields where two configs differ, as "path: a vs b" (names ignored). */
function configDifferences(a: unknown, b: unknown, path = ''): string[] {
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    return Object.keys(a).flatMap((k) => (path === '' && k === 'name' ? [] : configDifferences((a as never)[k], (b as never)[k], path ? `${path}.${k}` : k)));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${path} ${JSON.stringify(a)} vs ${JSON.stringify(b)}`];
}

/** The FP8 block shape from quantization_config (quant_method fp8), or the default. */
function blockShape(json: unknown, file: string): [number, number] {
  const top = json as Record<string, unknown>;
  const text = (top.text_config ?? {}) as Record<string, unknown>;
  const q = (top.quantization_config ?? text.quantization_config) as Record<string, unknown> | undefined;
  if (q === undefined || q === null) return DEFAULT_BLOCK;
  if (q.quant_method !== 'fp8') throw new Error(`${file}: quantization_config.quant_method ${JSON.stringify(q.quant_method)} is not supported (fp8 only)`);
  const b = q.weight_block_size;
  if (b === undefined || b === null) return DEFAULT_BLOCK;
  if (!Array.isArray(b) || b.length !== 2 || !b.every((v) => Number.isSafeInteger(v) && v > 0)) {
    throw new Error(`${file}: quantization_config.weight_block_size must be two positive integers, got ${JSON.stringify(b)}`);
  }
  return [b[0], b[1]];
}

function expand(ranges: readonly [number, number][]): number[] {
  return ranges.flatMap(([a, b]) => Array.from({ length: b - a }, (_, i) => a + i));
}

function plain(raw: SafetensorsWeightSource, stored: string): Provider {
  return { info: raw.info(stored), stored: [stored], read: (slice) => raw.read(stored, slice), plan: (slice) => raw.filePlan(stored, slice) };
}

/** A provider read as another dtype: fp32 -> bf16 by RNE, bf16 -> fp32 exactly. */
function converted(p: Provider, to: DType): Provider {
  const from = p.info.dtype;
  if (from === to) return p;
  const convert = (t: Tensor): Tensor => {
    if (from === 'f32' && to === 'bf16') return { dtype: 'bf16', shape: t.shape, data: Uint16Array.from(t.data as Float32Array, f32ToBf16) };
    return { dtype: 'f32', shape: t.shape, data: Float32Array.from(t.data as Uint16Array, bf16ToF32) };
  };
  return { info: { shape: p.info.shape, dtype: to }, stored: p.stored, read: async (slice) => convert(await p.read(slice)) };
}

/**
 * FP8 with 2-D block scales: w[r, c] = bf(fl(q[r, c] * s[r / bn, c / bk])), through one
 * 256-entry table per block (the same arithmetic, done once per bit pattern).
 */
function fp8Blocks(raw: SafetensorsWeightSource, stored: string, scaleName: string, format: Fp8Format, block: [number, number]): Provider {
  const [N, K] = raw.entry(stored).shape;
  const [bn, bk] = block;
  const sc = Math.ceil(K / bk);
  return {
    info: { shape: [N, K], dtype: 'bf16' },
    stored: [stored, scaleName],
    async read(slice) {
      const q = (await raw.read(stored, slice)).data as Uint8Array;
      const s = (await raw.read(scaleName)).data as Float32Array;
      const bad = s.findIndex((v) => !(v >= 0 && v < Infinity));
      if (bad >= 0) throw new Error(`${raw.fileOfTensor(scaleName)}: tensor '${scaleName}' holds ${s[bad]} at ${bad}: block scales must be finite and >= 0`);
      const rows = slice?.axis === 0 ? expand(slice.ranges) : expand([[0, N]]);
      const cols = slice?.axis === 1 ? expand(slice.ranges) : expand([[0, K]]);
      const colBlock = cols.map((c) => Math.floor(c / bk) * 256);
      // tables of the row blocks met so far: sc tables of 256 entries each
      const tables = new Map<number, Uint16Array>();
      const out = new Uint16Array(rows.length * cols.length);
      rows.forEach((r, i) => {
        const rb = Math.floor(r / bn);
        let t = tables.get(rb);
        if (!t) {
          t = new Uint16Array(sc * 256);
          for (let b = 0; b < sc; b++) t.set(scaledTable(format, s[rb * sc + b]), b * 256);
          tables.set(rb, t);
        }
        const o = i * cols.length;
        for (let j = 0; j < cols.length; j++) out[o + j] = t[colBlock[j] + q[o + j]];
      });
      return { dtype: 'bf16', shape: [rows.length, cols.length], data: out };
    },
  };
}

/** FP8 with one scale per output channel (per-channel `weight_scale`): w[o, k] = bf(fl(q[o, k] * s[o])). */
function fp8PerChannel(raw: SafetensorsWeightSource, stored: string, scaleName: string, format: Fp8Format): Provider {
  return {
    info: { shape: raw.entry(stored).shape, dtype: 'bf16' },
    stored: [stored, scaleName],
    read: async (slice) => ({ dtype: 'bf16', ...(await readFp8PerChannel(raw, stored, scaleName, format, slice)) }),
  };
}

/** A per-channel FP8 weight's scales as F32 [N] (stored [N, 1] or [N]), checked when read. */
function perChannelScaleProvider(raw: SafetensorsWeightSource, scaleName: string, n: number): Provider {
  return {
    info: { shape: [n], dtype: 'f32' },
    stored: [scaleName],
    async read(slice) {
      const s = (await raw.read(scaleName)).data as Float32Array;
      checkPerChannelScales(raw, scaleName, s);
      const rows = slice ? slice.ranges.flatMap(([a, b]) => [...s.subarray(a, b)]) : [...s];
      return { dtype: 'f32', shape: [rows.length], data: Float32Array.from(rows) };
    },
  };
}

/** e4m3fn bytes read as e4m3fnuz: the same bits (each value halves), -0 (0x80, fnuz's NaN) -> 0. */
function asFnuz(p: Provider): Provider {
  return {
    info: { shape: p.info.shape, dtype: 'fp8e4m3fnuz' },
    stored: p.stored,
    read: async (slice) => ({ dtype: 'fp8e4m3fnuz', ...fnBytesAsFnuz(await p.read(slice)) }),
  };
}

/** Scales times 2 (exact): the e4m3fnuz weights' scales. */
function doubled(p: Provider): Provider {
  return {
    info: p.info,
    stored: p.stored,
    async read(slice) {
      const t = await p.read(slice);
      return { ...t, data: Float32Array.from(t.data as Float32Array, (v) => v * 2) };
    },
  };
}

/** FP8 with one global scale: w = bf(q * bf(s)) (the product of two bf16 values is exact in fp32). */
function fp8Global(raw: SafetensorsWeightSource, stored: string, scaleName: string, format: Fp8Format, scale: number): Provider {
  const table = scaledTable(format, roundBf16(scale));
  return {
    info: { shape: raw.entry(stored).shape, dtype: 'bf16' },
    stored: [stored, scaleName],
    async read(slice) {
      const t = await raw.read(stored, slice);
      return { dtype: 'bf16', shape: t.shape, data: Uint16Array.from(t.data as Uint8Array, (b) => table[b]) };
    },
  };
}

/**
 * Per-expert parts stacked as [E, rows, cols]: parts[e] are expert e's tensors along the
 * rows (gate, up for gate_up_proj; down for down_proj). A slice reads only what it covers.
 */
function stacked(parts: readonly Provider[][]): Provider {
  const first = parts[0];
  const partRows = first.map((p) => p.info.shape[0]);
  const rows = partRows.reduce((a, b) => a + b, 0);
  const cols = first[0].info.shape[1];
  const dtype = first[0].info.dtype;
  /** the part reads a slice is made of, in order, and its shape */
  const pieces = (slice?: WeightSlice): { shape: number[]; reads: { part: Provider; slice?: WeightSlice }[] } => {
    const experts = slice?.axis === 0 ? expand(slice.ranges) : expand([[0, parts.length]]);
    const rowRanges = slice?.axis === 1 ? slice.ranges : [[0, rows] as [number, number]];
    const colSlice = slice?.axis === 2 ? { axis: 1, ranges: slice.ranges } : undefined;
    const keptRows = rowRanges.reduce((acc, [a, b]) => acc + b - a, 0);
    const keptCols = colSlice ? colSlice.ranges.reduce((acc, [a, b]) => acc + b - a, 0) : cols;
    const reads: { part: Provider; slice?: WeightSlice }[] = [];
    for (const e of experts) {
      for (const [a, b] of rowRanges) {
        let offset = 0;
        for (let i = 0; i < parts[e].length; i++) {
          const lo = Math.max(a, offset);
          const hi = Math.min(b, offset + partRows[i]);
          const whole = lo === offset && hi === offset + partRows[i];
          if (lo < hi) reads.push({ part: parts[e][i], slice: colSlice ?? (whole ? undefined : { axis: 0, ranges: [[lo - offset, hi - offset]] }) });
          offset += partRows[i];
        }
      }
    }
    return { shape: [experts.length, keptRows, keptCols], reads };
  };
  return {
    info: { shape: [parts.length, rows, cols], dtype },
    stored: parts.flatMap((e) => e.flatMap((p) => p.stored)),
    async read(slice) {
      const { shape, reads } = pieces(slice);
      // one piece at a time, straight into the result: at most one part is held besides it
      const out = new Uint16Array(numel(shape));
      let o = 0;
      for (const r of reads) {
        const t = await r.part.read(r.slice);
        out.set(t.data as Uint16Array, o);
        o += t.data.length;
      }
      return { dtype, shape, data: out };
    },
    plan(slice) {
      const { shape, reads } = pieces(slice);
      const runs: WeightFilePlan['runs'] = [];
      for (const r of reads) {
        const p = r.part.plan?.(r.slice);
        if (!p) return null;
        runs.push(...p.runs);
      }
      return { dtype, shape, runs };
    },
  };
}

function bigints(bytes: Uint8Array): bigint[] {
  return [...new BigInt64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8)];
}

/** A checkpoint that does not fit the config: every problem found, so a caller can list them all. */
export class CheckpointProblemsError extends Error {
  constructor(readonly problems: readonly CheckpointProblem[]) {
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).map(formatCheckpointProblem).join('; ');
    const more = problems.length > MAX_PROBLEMS_SHOWN ? `; and ${problems.length - MAX_PROBLEMS_SHOWN} more` : '';
    super(`checkpoint: ${problems.length} problem${problems.length > 1 ? 's' : ''}: ${shown}${more}`);
    this.name = 'CheckpointProblemsError';
  }
}

/**
 * Opens a checkpoint for `config`: `path` is a model folder (model.safetensors.index.json,
 * model.safetensors, or every *.safetensors in it), an index, or one .safetensors file.
 * Checks every tensor the model reads (present, shape, dtype) and, when the folder has a
 * config.json, that it describes the same model; one error lists every problem, naming
 * tensor and file. Nothing but headers is read until a tensor is asked for.
 */
export function openCheckpoint(path: string, config: ModelConfig, options: CheckpointOptions = {}): OpenedCheckpoint {
  const located = locateCheckpoint(path);
  const configFile = folderConfigPath(path);
  let block = DEFAULT_BLOCK;
  // the config.json that declares block FP8, if one does
  let blocksDeclaredBy: string | null = null;
  if (configFile) {
    const json = readJsonFile(configFile);
    const own = parseHfConfig(json, configFile);
    const diffs = configDifferences(config, own);
    if (diffs.length > 0) {
      throw new Error(
        `config/checkpoint mismatch: ${configFile} describes another model than config '${config.name}' (${config.name} vs checkpoint): ${diffs.join(', ')}`,
      );
    }
    block = blockShape(json, configFile);
    if (configDeclaresBlocks(json)) blocksDeclaredBy = configFile;
  }
  const raw = SafetensorsWeightSource.open(located);
  try {
    const opened = build(raw, path, config, options.specs ?? modelWeightSpecs(config, MODEL_SUB_LAYERS), block, blocksDeclaredBy);
    const index = typeof located === 'string' && located.endsWith('.index.json') ? [located] : [];
    return { ...opened, inputs: [...index, ...(configFile ? [configFile] : []), ...opened.files] };
  } catch (e) {
    raw.close();
    throw e;
  }
}

function build(
  raw: SafetensorsWeightSource,
  path: string,
  config: ModelConfig,
  specs: readonly WeightSpec[],
  block: [number, number],
  blocksDeclaredBy: string | null,
): Omit<OpenedCheckpoint, 'inputs'> {
  const problems: CheckpointProblem[] = [];
  // a stored tensor, located
  const at = (stored: string) => ({ tensor: stored, file: raw.fileOfTensor(stored) });
  const forConfig = `config '${config.name}'`;

  // model name -> stored name
  const byModel = new Map<string, string>();
  for (const stored of raw.names()) {
    const name = stored.startsWith(MULTIMODAL_PREFIX) ? `model.${stored.slice(MULTIMODAL_PREFIX.length)}` : stored;
    const other = byModel.get(name);
    if (other !== undefined) problems.push({ kind: 'duplicate name', ...at(stored), expected: name, found: `${raw.fileOfTensor(other)}: tensor '${other}'` });
    byModel.set(name, stored);
  }
  const storedOf = (name: string) => byModel.get(name);

  const fail = (problem: CheckpointProblem): null => {
    problems.push(problem);
    return null;
  };
  const globalScales = new Map<string, number>();
  const perChannelScales = new Set<string>();
  const fp8Parts = new Map<string, Fp8WeightParts>();
  const fp8Providers = new Map<string, Provider>();
  // tensors hcsp has no dtype for (the PLE's int64 buffers, F16, ...): only checked or unused
  const unloadable = new Map<string, string>();
  const baseProvider = (name: string, stored: string): Provider | null => {
    const e = raw.entry(stored);
    const format = FP8_FORMAT[e.dtype];
    if (!format) {
      if (coreDtypeOf(e.dtype) !== null) return plain(raw, stored);
      unloadable.set(name, stored);
      return null;
    }
    const bf16Only = fp8WhereBf16Problem(name);
    if (bf16Only) return fail({ kind: 'fp8 where bf16', ...at(stored), expected: 'bf16', found: e.dtype, context: bf16Only });
    const base = name.replace(/\.weight$/, '');
    const inv = storedOf(`${base}.weight_scale_inv`);
    const own = storedOf(`${base}.weight_scale`);
    // the PLE table's shards share the table's one scale
    const global = own ?? storedOf(`${name.replace(/\.shard_\d+\.weight$/, '')}.weight_scale`);
    if (inv !== undefined) {
      const s = raw.entry(inv);
      const want = e.shape.length === 2 ? [Math.ceil(e.shape[0] / block[0]), Math.ceil(e.shape[1] / block[1])] : null;
      if (!want) return fail({ kind: 'block scales need 2-D', ...at(stored), expected: '2-D', found: `${e.dtype} ${shapeStr(e.shape)}` });
      if (s.dtype !== 'F32' || !sameShape(s.shape, want)) {
        return fail({
          kind: 'wrong block scales',
          ...at(inv),
          expected: `F32${shapeStr(want)}`,
          found: `${s.dtype}${shapeStr(s.shape)}`,
          context: `${e.dtype}${shapeStr(e.shape)} in ${block[0]}x${block[1]} blocks`,
        });
      }
      return fp8Blocks(raw, stored, inv, format, block);
    }
    if (
      own !== undefined &&
      e.shape.length === 2 &&
      (isPerChannelScaleShape(raw.entry(own).shape, e.shape) || (numel(raw.entry(own).shape) === e.shape[0] && e.shape[0] > 1))
    ) {
      const s = raw.entry(own);
      const problem = perChannelScaleProblem(s.dtype, s.shape, e.dtype, e.shape);
      if (problem) return fail({ kind: 'wrong channel scales', ...at(own), ...problem });
      if (blocksDeclaredBy)
        return fail({
          kind: 'scale layout conflict',
          ...at(own),
          expected: `${block[0]}x${block[1]}`,
          found: 'per-channel FP8 scales',
          context: blocksDeclaredBy,
        });
      perChannelScales.add(own);
      const parts = { q: `${name}#fp8`, scale: `${name}#fp8_scale`, format };
      fp8Parts.set(name, parts);
      fp8Providers.set(parts.q, plain(raw, stored)).set(parts.scale, perChannelScaleProvider(raw, own, e.shape[0]));
      if (format === 'e4m3fn')
        fp8Providers
          .set(`${name}#fp8_e4m3fnuz`, asFnuz(plain(raw, stored)))
          .set(`${name}#fp8_e4m3fnuz_scale`, doubled(perChannelScaleProvider(raw, own, e.shape[0])));
      return fp8PerChannel(raw, stored, own, format);
    }
    if (global !== undefined) {
      const s = raw.entry(global);
      const perChannel =
        e.shape.length === 2 && global === own ? `; per-channel scales of ${e.dtype}${shapeStr(e.shape)} are F32${shapeStr([e.shape[0], 1])}` : '';
      // BF16 in the Qwen/Qwen3.8-Flash-Next-FP8 release; ATOM copies either into an F32 parameter
      if ((s.dtype !== 'F32' && s.dtype !== 'BF16') || numel(s.shape) !== 1)
        return fail({
          kind: 'wrong global scale',
          ...at(global),
          expected: 'one F32 or BF16 value',
          found: `${s.dtype}${shapeStr(s.shape)}`,
          context: perChannel,
        });
      const value = globalScales.get(global) ?? globalScaleValue(raw.readRawBytes(global), s.dtype);
      globalScales.set(global, value);
      if (!(value > 0 && value < Infinity)) return fail({ kind: 'bad scale value', ...at(global), expected: 'finite and positive', found: String(value) });
      return fp8Global(raw, stored, global, format, value);
    }
    return fail({ kind: 'no scale', ...at(stored), expected: `'${base}.weight_scale_inv' or '.weight_scale'`, found: e.dtype });
  };

  const providers = new Map<string, Provider>();
  const refused = new Set<string>();
  const groups = new Map<string, Map<number, Partial<Record<'gate_proj' | 'up_proj' | 'down_proj', Provider>>>>();
  for (const [name, stored] of byModel) {
    if (SCALE_SUFFIXES.some((s) => name.endsWith(s))) continue;
    const m = PER_EXPERT.exec(name);
    const before = problems.length;
    const p = baseProvider(name, stored);
    // already said why: not also 'missing'
    if (!p && problems.length > before) refused.add(name);
    if (!p) continue;
    if (!m) {
      providers.set(name, p);
      continue;
    }
    const experts = groups.get(m[1]) ?? new Map();
    groups.set(m[1], experts);
    const parts = experts.get(Number(m[2])) ?? {};
    experts.set(Number(m[2]), parts);
    parts[m[3] as 'gate_proj'] = p;
  }

  const groupProblem = new Set<string>();
  const E = config.moe.numExperts;
  for (const [g, experts] of groups) {
    const before = problems.length;
    for (const stackName of [`${g}.gate_up_proj`, `${g}.down_proj`]) {
      const stack = byModel.get(stackName);
      if (stack !== undefined) problems.push({ kind: 'mixed expert layout', ...at(stack), expected: `${g}.{e}.* are per-expert`, found: 'stacked' });
    }
    for (const e of experts.keys())
      if (e >= E) problems.push({ kind: 'extra expert', tensor: `${g}.${e}.*`, expected: String(E), found: `expert ${e}`, context: forConfig });
    const rows: Provider[][] = [];
    const down: Provider[][] = [];
    for (let e = 0; e < E; e++) {
      const parts = experts.get(e) ?? {};
      const missing = (['gate_proj', 'up_proj', 'down_proj'] as const).filter((k) => !parts[k]);
      if (missing.length > 0) {
        const part = `${g}.${e}.${missing[0]}.weight`;
        if (!refused.has(part))
          problems.push({ kind: 'missing', tensor: part, expected: 'present', found: 'absent', context: `the per-expert layout of ${g} in ${path}` });
        break;
      }
      const [gate, up, dn] = [parts.gate_proj!, parts.up_proj!, parts.down_proj!];
      const odd = [gate, up, dn].find((q) => q.info.dtype !== 'bf16' && q.info.dtype !== 'f32');
      if (odd) {
        problems.push({ kind: 'wrong expert dtype', ...at(odd.stored[0]), expected: 'bf16 or f32', found: raw.entry(odd.stored[0]).dtype });
        break;
      }
      if (!sameShape(gate.info.shape, up.info.shape) || gate.info.shape.length !== 2 || !sameShape(dn.info.shape, [gate.info.shape[1], gate.info.shape[0]])) {
        problems.push({
          kind: 'wrong expert shapes',
          ...at(up.stored[0]),
          expected: '[I,H], [I,H], [H,I]',
          found: `gate_proj ${shapeStr(gate.info.shape)}, up_proj ${shapeStr(up.info.shape)} and down_proj ${shapeStr(dn.info.shape)}`,
          context: `expert ${e}'s`,
        });
        break;
      }
      rows.push([converted(gate, 'bf16'), converted(up, 'bf16')]);
      down.push([converted(dn, 'bf16')]);
    }
    if (problems.length > before || rows.length < E) {
      groupProblem.add(`${g}.gate_up_proj`).add(`${g}.down_proj`);
      continue;
    }
    providers.set(`${g}.gate_up_proj`, stacked(rows));
    providers.set(`${g}.down_proj`, stacked(down));
  }

  // the tensors the model reads: present, right shape, a dtype it can be read as
  let roundedF32 = 0;
  const used = new Set<string>();
  for (const spec of specs) {
    const p = providers.get(spec.name);
    const odd = unloadable.get(spec.name);
    if (odd !== undefined) problems.push({ kind: 'wrong dtype', ...at(odd), expected: spec.dtype, found: raw.entry(odd).dtype });
    else if (!p && !groupProblem.has(spec.name) && !refused.has(spec.name))
      problems.push({ kind: 'missing', tensor: spec.name, expected: 'present', found: 'absent', context: `in ${path}` });
    if (!p) continue;
    const label = p.stored.length === 1 ? at(p.stored[0]) : { tensor: spec.name, sources: p.stored.length };
    if (!sameShape(p.info.shape, spec.shape)) {
      problems.push({ kind: 'wrong shape', ...label, expected: shapeStr(spec.shape), found: shapeStr(p.info.shape), context: forConfig });
      continue;
    }
    if (!['bf16', 'f32'].includes(p.info.dtype)) {
      problems.push({ kind: 'wrong dtype', ...label, expected: spec.dtype, found: raw.entry(p.stored[0]).dtype });
      continue;
    }
    if (p.info.dtype === 'f32' && spec.dtype === 'bf16') roundedF32++;
    providers.set(spec.name, converted(p, spec.dtype));
    for (const s of p.stored) used.add(s);
  }

  // the PLE's derived buffers, if stored, must be what the config derives
  for (const layer of config.ple.layerIds) {
    for (const buf of pleBuffers(config, layer)) {
      const stored = storedOf(buf.name);
      if (stored === undefined) continue;
      const e = raw.entry(stored);
      if (e.dtype !== 'I64' || !sameShape(e.shape, buf.shape)) {
        problems.push({ kind: 'wrong buffer', ...at(stored), expected: `I64${shapeStr(buf.shape)}`, found: `${e.dtype}${shapeStr(e.shape)}` });
        continue;
      }
      const got = bigints(raw.readRawBytes(stored));
      const want = [...buf.values];
      if (got.some((v, i) => v !== want[i])) {
        problems.push({ kind: 'wrong buffer values', ...at(stored), expected: `[${want.join(', ')}]`, found: `[${got.join(', ')}]`, context: forConfig });
        continue;
      }
      used.add(stored);
    }
  }

  if (problems.length > 0) throw new CheckpointProblemsError(problems);
  const fp8Used = [...used].filter((st) => FP8_FORMAT[raw.entry(st).dtype] !== undefined).length;
  const blockScaled = [...used].filter((st) => st.endsWith('.weight_scale_inv')).length;
  const channelScaled = [...used].filter((st) => perChannelScales.has(st)).length;
  const fp8Count = { blocks: blockScaled, channels: channelScaled, global: fp8Used - blockScaled - channelScaled };
  const conversions: string[] = [];
  if (fp8Count.blocks > 0) conversions.push(`${fp8Count.blocks} FP8 tensors with ${block[0]}x${block[1]} block scales dequantized to bf16 as bf(fl(q * s))`);
  if (fp8Count.channels > 0) conversions.push(`${fp8Count.channels} FP8 tensors with per-channel scales dequantized to bf16 as bf(fl(q * s[o]))`);
  if (fp8Count.global > 0) conversions.push(`${fp8Count.global} FP8 tensors with a global scale dequantized to bf16 as bf(q * bf(s))`);
  if (roundedF32 > 0) conversions.push(`${roundedF32} fp32 tensors read as bf16 (round to nearest even)`);
  return {
    source: new CheckpointWeightSource(raw, new Map([...providers, ...fp8Providers]), fp8Parts),
    unused: raw
      .names()
      .filter((s) => !used.has(s))
      .sort(),
    conversions,
    files: raw.fileNames(),
  };
}

/** The warning for tensors the model does not read (the caller prefixes 'warning:'), or null when there are none. */
export function unusedTensorsWarning(unused: readonly string[]): string | null {
  if (unused.length === 0) return null;
  const shown = unused.slice(0, MAX_PROBLEMS_SHOWN).join(', ');
  const more = unused.length > MAX_PROBLEMS_SHOWN ? `, and ${unused.length - MAX_PROBLEMS_SHOWN} more` : '';
  return `${unused.length} checkpoint tensor${unused.length > 1 ? 's are' : ' is'} not used by the model: ${shown}${more}`;
}
