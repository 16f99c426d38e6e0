// Peak RSS of one rank of tp 8 loading its slices of one Flash-Next layer from a checkpoint
// folder (hfCheckpoint.ts), in both layouts: `hf` (bf16, stacked experts: one 3.4 GB
// gate_up_proj) and `fp8-release` (per-expert FP8 with 128 x 128 block scales). The files
// are sparse (header + holes read as zeros), so a 5 GB layer costs no disk; what is measured
// is what the loader reads and holds. Run: npx tsx scripts/checkpointSliceRss.ts [layer]
import { closeSync, mkdtempSync, openSync, rmSync, truncateSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attentionRankWeights,
  FLASH_NEXT,
  gdnRankWeights,
  hcPrefix,
  hcWeightSpecs,
  layerKind,
  MODEL_SUB_LAYERS,
  moeRankWeights,
  numel,
  resolveWeight,
  type WeightRef,
  type WeightSpec,
} from '@hcsp/core';
import { openCheckpoint } from '@hcsp/core/node';

const config = FLASH_NEXT;
const layer = Number(process.argv[2] ?? 3);
const TP = 8;
const RANK = 0;

interface Entry {
  name: string;
  dtype: 'BF16' | 'F8_E4M3' | 'F32';
  shape: number[];
}

const itemBytes = (d: Entry['dtype']) => (d === 'BF16' ? 2 : d === 'F32' ? 4 : 1);

/** A safetensors file whose data section is a hole: only the header is written. */
function sparseFile(path: string, entries: Entry[]): number {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const e of entries) {
    const n = numel(e.shape) * itemBytes(e.dtype);
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + n] };
    offset += n;
  }
  const text = JSON.stringify(header);
  const json = text.padEnd(Math.ceil(text.length / 8) * 8, ' ');
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
  const fd = openSync(path, 'w');
  writeSync(fd, prefix);
  writeSync(fd, json);
  closeSync(fd);
  truncateSync(path, 8 + json.length + offset);
  return 8 + json.length + offset;
}

function layerSpecs(): WeightSpec[] {
  return [
    ...hcWeightSpecs(config, hcPrefix(layer, 'attn'), true),
    ...hcWeightSpecs(config, hcPrefix(layer, 'mlp'), true),
    ...MODEL_SUB_LAYERS.weightSpecs(config, layer),
  ];
}

function entries(layout: 'hf' | 'fp8-release'): Entry[] {
  const out: Entry[] = [];
  for (const s of layerSpecs()) {
    const m = /^(.+\.mlp\.experts)\.(gate_up_proj|down_proj)$/.exec(s.name);
    if (layout === 'hf' || !m) {
      out.push({ name: s.name, dtype: 'BF16', shape: s.shape });
      continue;
    }
    const [E, rows, cols] = s.shape;
    const parts = m[2] === 'gate_up_proj' ? ['gate_proj', 'up_proj'] : ['down_proj'];
    const partRows = rows / parts.length;
    for (let e = 0; e < E; e++) {
      for (const p of parts) {
        out.push({ name: `${m[1]}.${e}.${p}.weight`, dtype: 'F8_E4M3', shape: [partRows, cols] });
        out.push({ name: `${m[1]}.${e}.${p}.weight_scale_inv`, dtype: 'F32', shape: [Math.ceil(partRows / 128), Math.ceil(cols / 128)] });
      }
    }
  }
  return out;
}

/** The refs rank RANK of TP reads for this layer: its sub-layer slices and the whole HC tensors. */
function rankRefs(): WeightRef[] {
  const sub = layerKind(config, layer) === 'attention' ? attentionRankWeights(config, layer, RANK, TP) : gdnRankWeights(config, layer, RANK, TP);
  const hc = [...hcWeightSpecs(config, hcPrefix(layer, 'attn'), true), ...hcWeightSpecs(config, hcPrefix(layer, 'mlp'), true)].map((s) => ({ name: s.name }));
  return [...Object.values(sub), ...Object.values(moeRankWeights(config, layer, RANK, TP)), ...hc];
}

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

async function measure(layout: 'hf' | 'fp8-release'): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), `hcsp-rss-${layout}-`));
  try {
    const fileBytes = sparseFile(join(dir, 'model.safetensors'), entries(layout));
    const before = process.resourceUsage().maxRSS * 1024;
    const rssBefore = process.memoryUsage().rss;
    const c = openCheckpoint(dir, config, { specs: layerSpecs() });
    const held = [];
    const t0 = performance.now();
    for (const ref of rankRefs()) held.push(await resolveWeight(c.source, ref));
    const seconds = (performance.now() - t0) / 1000;
    const heldBytes = held.reduce((a, t) => a + t.data.byteLength, 0);
    const result = {
      layout,
      layer,
      kind: layerKind(config, layer),
      tp: TP,
      rank: RANK,
      fileMiB: mib(fileBytes),
      bytesReadMiB: mib(c.source.bytesRead()),
      heldMiB: mib(heldBytes),
      rssBeforeMiB: mib(rssBefore),
      rssAfterMiB: mib(process.memoryUsage().rss),
      peakRssMiB: mib(process.resourceUsage().maxRSS * 1024),
      peakRssBeforeMiB: mib(before),
      seconds: Math.round(seconds * 10) / 10,
    };
    c.source.close();
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// one layout per process, so that each peak is its own
const layout = (process.argv[3] ?? 'hf') as 'hf' | 'fp8-release';
console.log(JSON.stringify(await measure(layout)));
