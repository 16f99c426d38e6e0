// `hcsp weights`: the seeded synthetic weights (the ones `prefill` uses without --weights)
// written as a Hugging Face model folder: config.json, model-0000k-of-0000n.safetensors and
// model.safetensors.index.json, so tests, benchmarks and outside tools read real files.
//
// --layout hf: the HF state dict as modeling_qwen4_exp.py names it (stacked experts), bf16,
// text config at the top level. Loading it gives the synthetic tensors bit for bit.
// --layout fp8-release: the layout of the released FP8 checkpoint as ATOM's loader reads it:
// the multimodal form (text config under text_config, tensors under model.language_model.),
// every routed expert as its own gate_proj / up_proj / down_proj, FP8 e4m3fn with 128 x 128
// block scales `weight_scale_inv`, and the PLE table shards FP8 with one global
// `weight_scale`; everything else bf16. The quantization is deterministic:
//   block:  s = fl(amax / 448) (1 for an all-zero block), q = cvt(fl(w / s))
//   table:  s = fl(amax / 448) over the whole table, q = cvt(fl(w / bf(s)))
// (cvt: round to nearest even, saturating at +-448). hfCheckpoint.ts dequantizes on read,
// w' = bf(fl(q * s)) and bf(q * bf(s)), so a prefill on this folder is exactly a prefill on
// the synthetic weights with those tensors replaced by w'.
// --layout ptpc-fp8: the Qwen3.8-Flash-Next-PTPC-FP8 release, per-output-channel FP8
// (ptpcFp8Layout.ts).
//
// The folder is written to a temporary sibling and renamed into place: an error leaves
// nothing behind, and an existing non-empty folder is replaced only with --force.
import { existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import {
  bf16ToF32,
  f32ToFp8,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  numel,
  pleBuffers,
  SyntheticWeightSource,
  type ModelConfig,
  type RawFileTensor,
  type Tensor,
  type WeightSpec,
} from '@hcsp/core';
import { errnoReason, hfTextConfigJson, resolveModelConfig, writeSafetensorsFile } from '@hcsp/core/node';
import { parseIntStrict } from '../parseArgs.ts';
import { markTempFolder, sweepStaleTempFiles, TEMP_FOLDER_MARKER, tempPathFor } from '../output/tempFiles.ts';
import { onInterrupt } from '../signals.ts';
import { E4M3FN_MAX, fp8ReleaseGroups } from './fp8ReleaseGroups.ts';
import { ptpcFp8ConfigJson, ptpcFp8Groups } from './ptpcFp8Layout.ts';

export const WEIGHTS_LAYOUTS = ['hf', 'fp8-release', 'ptpc-fp8'] as const;
export type WeightsLayout = (typeof WEIGHTS_LAYOUTS)[number];

const BLOCK = 128;
// the synthetic generator holds a tensor whole, in float64 while drawing it
const MAX_TENSOR_ELEMENTS = 2 ** 27;

export interface ModelFolderOptions {
  config: ModelConfig;
  seed: number;
  out: string;
  layout: WeightsLayout;
  shards: number;
  force: boolean;
}

export interface ModelFolderSummary {
  out: string;
  files: string[];
  tensors: number;
  bytes: number;
}

/** Tensors written together (one checkpoint spec's), made only when their shard is written. */
interface Group {
  bytes: number;
  make(): [string, Tensor | RawFileTensor][];
}

/** Per 128 x 128 block of a [N, K] bf16 matrix: s = fl(amax / 448), q = cvt(fl(w / s)). */
function quantizeBlocks(w: Uint16Array, N: number, K: number): { q: Tensor; s: Tensor } {
  const sr = Math.ceil(N / BLOCK);
  const sc = Math.ceil(K / BLOCK);
  const s = new Float32Array(sr * sc);
  const q = new Uint8Array(N * K);
  for (let br = 0; br < sr; br++) {
    for (let bc = 0; bc < sc; bc++) {
      const [r0, r1, c0, c1] = [br * BLOCK, Math.min(N, (br + 1) * BLOCK), bc * BLOCK, Math.min(K, (bc + 1) * BLOCK)];
      let amax = 0;
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) amax = Math.max(amax, Math.abs(bf16ToF32(w[r * K + c])));
      const scale = amax === 0 ? 1 : Math.fround(amax / E4M3FN_MAX);
      s[br * sc + bc] = scale;
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) q[r * K + c] = f32ToFp8(Math.fround(bf16ToF32(w[r * K + c]) / scale), 'e4m3fn');
    }
  }
  return { q: { dtype: 'fp8e4m3fn', shape: [N, K], data: q }, s: { dtype: 'f32', shape: [sr, sc], data: s } };
}

/** The HF state dict: the specs' tensors and the int64 buffers HF persists (the PLE's `nn.Buffer`s, modeling_qwen4_exp.py). */
function hfGroups(config: ModelConfig, specs: readonly WeightSpec[], w: SyntheticWeightSource): Group[] {
  const buffers = config.ple.layerIds
    .flatMap((layer) => pleBuffers(config, layer))
    .map(
      (b): Group => ({
        bytes: b.values.byteLength,
        make: () => [[b.name, { fileDtype: 'I64', shape: b.shape, bytes: new Uint8Array(b.values.buffer, b.values.byteOffset, b.values.byteLength) }]],
      }),
    );
  return [
    ...specs.map((s) => ({ bytes: numel(s.shape) * (s.dtype === 'f32' ? 4 : 2), make: (): [string, Tensor][] => [[s.name, w.tensor(s.name)]] })),
    ...buffers,
  ];
}

/** The fp8-release layout: the routed experts' parts with 128 x 128 block scales (`weight_scale_inv`). */
function blockFp8Groups(specs: readonly WeightSpec[], w: SyntheticWeightSource): Group[] {
  return fp8ReleaseGroups(specs, w, {
    expertPart: (base, data, rows, cols) => {
      const { q, s } = quantizeBlocks(data, rows, cols);
      return [
        [`${base}.weight`, q],
        [`${base}.weight_scale_inv`, s],
      ];
    },
    expertPartBytes: (rows, cols) => rows * cols + Math.ceil(rows / BLOCK) * Math.ceil(cols / BLOCK) * 4,
  });
}

/** Consecutive groups per shard, by bytes, none empty. */
function assignShards(groups: readonly Group[], shards: number): number[] {
  if (shards > groups.length) throw new Error(`--shards ${shards} exceeds the ${groups.length} tensor groups to write`);
  const total = groups.reduce((a, g) => a + g.bytes, 0);
  const out: number[] = [];
  let shard = 0;
  let inShard = 0;
  let before = 0;
  groups.forEach((g, i) => {
    const mustMove = groups.length - i === shards - shard - 1;
    if (inShard > 0 && shard < shards - 1 && (before >= (total * (shard + 1)) / shards || mustMove)) {
      shard++;
      inShard = 0;
    }
    out.push(shard);
    inShard++;
    before += g.bytes;
  });
  return out;
}

function configJson(config: ModelConfig, layout: WeightsLayout): unknown {
  // an hf folder names its layers as HF's configuration accepts them; the releases as they ship
  const text = hfTextConfigJson(config, layout === 'hf' ? 'hf' : 'release');
  if (layout === 'hf') return text;
  if (layout === 'ptpc-fp8') return ptpcFp8ConfigJson(text);
  const { architectures: _, ...inner } = text;
  return {
    architectures: ['Qwen4ExpForConditionalGeneration'],
    model_type: 'qwen4_exp',
    tie_word_embeddings: false,
    quantization_config: { quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic', weight_block_size: [BLOCK, BLOCK] },
    text_config: inner,
  };
}

/** Checks the target before any work: absent, an empty folder, or (with force) a folder to replace; never a link. */
function checkOut(out: string, given: string, force: boolean): void {
  const st = lstatSync(out, { throwIfNoEntry: false });
  if (!st) return;
  // Replacing by rename would put a folder where the link was, and leave its target as it was.
  if (st.isSymbolicLink()) throw new Error(`--out ${given} is a symbolic link (to ${readlinkSync(out)}); give the folder itself`);
  if (!st.isDirectory()) throw new Error(`--out ${given} exists and is not a folder`);
  if (readdirSync(out).length > 0 && !force) throw new Error(`--out ${given} is not empty (--force replaces it)`);
}

/** A folder made for --out (its parents, or the temporary folder), errors naming --out and the cause. */
function makeFolder(path: string, given: string, recursive: boolean): void {
  try {
    mkdirSync(path, { recursive });
  } catch (e) {
    const where = dirname(path);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EROFS') throw new Error(`--out ${given}: cannot write the folder: ${where} is on a read-only file system`);
    throw new Error(`--out ${given}: cannot create a folder in ${where}: ${errnoReason(e)}`);
  }
}

/**
 * Writes the model folder; see the file comment for the layouts. Each tensor group is made
 * and written between turns of the event loop, so a signal is handled (the temporary folder
 * removed, the exit reported as an interruption) rather than waiting for the whole folder.
 */
export async function writeModelFolder(o: ModelFolderOptions): Promise<ModelFolderSummary> {
  const out = resolve(o.out);
  checkOut(out, o.out, o.force);
  try {
    if (existsSync(dirname(out))) sweepStaleTempFiles(dirname(out));
  } catch {
    // best effort: an unreadable folder must not stop the write
  }
  const specs = modelWeightSpecs(o.config, MODEL_SUB_LAYERS);
  const largest = specs.reduce((a, s) => (numel(s.shape) > numel(a.shape) ? s : a));
  if (numel(largest.shape) > MAX_TENSOR_ELEMENTS) {
    throw new Error(
      `config '${o.config.name}': tensor '${largest.name}' has ${numel(largest.shape)} elements; the synthetic generator holds a tensor whole, at most ${MAX_TENSOR_ELEMENTS}`,
    );
  }
  const synthetic = new SyntheticWeightSource(specs, o.seed);
  const groups =
    o.layout === 'hf' ? hfGroups(o.config, specs, synthetic) : o.layout === 'ptpc-fp8' ? ptpcFp8Groups(specs, synthetic) : blockFp8Groups(specs, synthetic);
  const shardOf = assignShards(groups, o.shards);
  const files = Array.from({ length: o.shards }, (_, k) => `model-${String(k + 1).padStart(5, '0')}-of-${String(o.shards).padStart(5, '0')}.safetensors`);

  makeFolder(dirname(out), o.out, true);
  const tmp = tempPathFor(out);
  // registered before the folder exists: a signal right after it appears is handled
  const release = onInterrupt(() => rmSync(tmp, { recursive: true, force: true }));
  let tensors = 0;
  let bytes = 0;
  try {
    makeFolder(tmp, o.out, false);
    markTempFolder(tmp);
    const weightMap: Record<string, string> = {};
    for (let k = 0; k < o.shards; k++) {
      const shard = new Map<string, Tensor | RawFileTensor>();
      for (const [i, g] of groups.entries()) {
        if (shardOf[i] !== k) continue;
        for (const [name, t] of g.make()) shard.set(name, t);
        await new Promise<void>((r) => setImmediate(r));
      }
      writeSafetensorsFile(join(tmp, files[k]), shard, { format: 'pt' });
      for (const [name, t] of shard) {
        weightMap[name] = files[k];
        bytes += 'fileDtype' in t ? t.bytes.byteLength : t.data.byteLength;
      }
      tensors += shard.size;
    }
    const sorted = Object.fromEntries(Object.entries(weightMap).sort(([a], [b]) => (a < b ? -1 : 1)));
    writeFileSync(join(tmp, 'model.safetensors.index.json'), `${JSON.stringify({ metadata: { total_size: bytes }, weight_map: sorted }, null, 2)}\n`);
    writeFileSync(join(tmp, 'config.json'), `${JSON.stringify(configJson(o.config, o.layout), null, 2)}\n`);
    // The marker goes last, in the same synchronous stretch as the renames.
    rmSync(join(tmp, TEMP_FOLDER_MARKER));
    if (existsSync(out)) {
      const old = tempPathFor(out, 'old');
      renameSync(out, old);
      renameSync(tmp, out);
      // marked, so that a removal cut short (SIGKILL) is swept by a later run
      markTempFolder(old);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, out);
    }
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  } finally {
    release();
  }
  return { out, files: files.map((f) => join(out, f)), tensors, bytes };
}

interface WeightsOptions {
  config: string;
  seed: string;
  out: string;
  layout: string;
  shards: string;
  force?: boolean;
}

/** The command's work; returns the line it prints. */
export async function runWeightsCommand(opts: WeightsOptions): Promise<string> {
  const config = resolveModelConfig(opts.config);
  const seed = parseIntStrict(opts.seed, '--seed', { min: 0 });
  const shards = parseIntStrict(opts.shards, '--shards', { min: 1, max: 99999 });
  if (!(WEIGHTS_LAYOUTS as readonly string[]).includes(opts.layout))
    throw new Error(`--layout must be ${WEIGHTS_LAYOUTS.join(' or ')}, got ${JSON.stringify(opts.layout)}`);
  const s = await writeModelFolder({ config, seed, out: opts.out, layout: opts.layout as WeightsLayout, shards, force: opts.force ?? false });
  return `wrote ${s.out}: ${s.tensors} tensors, ${s.bytes} bytes in ${s.files.length} shard${s.files.length > 1 ? 's' : ''} (layout ${opts.layout}, config ${config.name}, seed ${seed})\n`;
}

export function registerWeights(program: Command): void {
  program
    .command('weights')
    .description('write the seeded synthetic weights as a Hugging Face model folder (config.json, sharded safetensors, index)')
    .requiredOption('--config <name|path>', 'a preset (flash-next, small, tiny), a config.json or a model folder')
    .requiredOption('--out <dir>', 'the model folder to write (must not exist or be empty, unless --force)')
    .option('--seed <n>', 'seed of the synthetic weights (prefill --seed uses the same)', '0')
    .option(
      '--layout <layout>',
      'hf (stacked experts, bf16) | fp8-release (per-expert FP8 with block scales, FP8 PLE table) | ptpc-fp8 (FP8 with per-channel scales, FP8 PLE table)',
      'hf',
    )
    .option('--shards <n>', 'number of .safetensors shards', '1')
    .option('--force', 'replace a non-empty --out folder')
    .action(async (opts: WeightsOptions) => {
      process.stdout.write(await runWeightsCommand(opts));
    });
}
