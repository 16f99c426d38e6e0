// FP8 weights with one scale per output channel, the PTPC-FP8 release's layout
// (docs/ptpc-fp8-release.md): `X.weight` F8_E4M3 [N, K] and `X.weight_scale` F32 [N, 1]
// (ATOM's per_Token LinearBase/FusedMoE parameter; ATOM's canonical PTPC quantizer checks
// that shape) or F32 [N]. Read as bf16: w[o, k] = bf(fl(dec(q[o, k]) * s[o])), the fp32
// product rounded once to the model's bf16, as the block reader does per block.
// Also the tensors the reference keeps in bf16 whatever the checkpoint's quantization:
// an FP8 one there is refused (ATOM would refuse or mis-load it).
import type { WeightSlice } from '../graph/graph.ts';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { fp8ArrayToF32, type Fp8Format } from '../numerics/fp8.ts';
import { sameShape, shapeStr } from '../tensor/tensor.ts';
import type { CheckpointProblem } from './checkpointProblem.ts';
import type { SafetensorsWeightSource } from './safetensorsWeights.ts';

/** The bf16 result of each of the 256 fp8 bit patterns times one scale: bf(fl(q * s)). */
export function fp8ScaledTable(format: Fp8Format, scale: number): Uint16Array {
  const values = fp8ArrayToF32(
    Uint8Array.from({ length: 256 }, (_, b) => b),
    format,
  );
  return Uint16Array.from(values, (v) => f32ToBf16(Math.fround(v * scale)));
}

/** Whether a scale of `scaleShape` is one per output channel of a 2-D FP8 weight `weightShape`. */
export function isPerChannelScaleShape(scaleShape: readonly number[], weightShape: readonly number[]): boolean {
  if (weightShape.length !== 2) return false;
  const n = weightShape[0];
  // [1] stays the global (PLE table) form; [1, 1] is a one-row weight's channel scale
  return sameShape(scaleShape, [n, 1]) || (n > 1 && sameShape(scaleShape, [n]));
}

/** Why a per-channel scale tensor does not fit its weight (the scales asked for, those found, the weight), or null. */
export function perChannelScaleProblem(
  scaleDtype: string,
  scaleShape: readonly number[],
  weightDtype: string,
  weightShape: readonly number[],
): Pick<CheckpointProblem, 'expected' | 'found' | 'context'> | null {
  if (scaleDtype === 'F32' && isPerChannelScaleShape(scaleShape, weightShape)) return null;
  return {
    expected: `F32${shapeStr([weightShape[0], 1])} (or F32${shapeStr([weightShape[0]])})`,
    found: `${scaleDtype}${shapeStr(scaleShape)}`,
    context: `${weightDtype}${shapeStr(weightShape)}`,
  };
}

/** Whether config.json's quantization_config (top level or text_config) declares block FP8. */
export function configDeclaresBlocks(json: unknown): boolean {
  const top = (json ?? {}) as Record<string, unknown>;
  const text = (top.text_config ?? {}) as Record<string, unknown>;
  const q = (top.quantization_config ?? text.quantization_config) as Record<string, unknown> | undefined | null;
  return q !== undefined && q !== null && q.weight_block_size !== undefined && q.weight_block_size !== null;
}

/** The value of a one-element F32 or BF16 scale tensor from its stored bytes (little-endian). */
export function globalScaleValue(bytes: Uint8Array, dtype: 'F32' | 'BF16' | string): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return dtype === 'BF16' ? bf16ToF32(view.getUint16(0, true)) : view.getFloat32(0, true);
}

/** e4m3fn bytes as e4m3fnuz (ATOM normalize_e4m3fn_to_e4m3fnuz): the same bits, 0x80 (-0; fnuz's NaN) -> 0. */
export function fnBytesAsFnuz(t: { shape: readonly number[]; data: unknown }): { shape: number[]; data: Uint8Array } {
  return { shape: [...t.shape], data: Uint8Array.from(t.data as Uint8Array, (b) => (b === 0x80 ? 0 : b)) };
}

function rangeList(ranges: readonly [number, number][]): number[] {
  return ranges.flatMap(([a, b]) => Array.from({ length: b - a }, (_, i) => a + i));
}

/** Every per-channel scale finite and > 0, or an error naming the scale tensor, its file and the row. */
export function checkPerChannelScales(raw: SafetensorsWeightSource, scaleName: string, s: Float32Array): void {
  const bad = s.findIndex((v) => !(v > 0 && v < Infinity));
  if (bad >= 0)
    throw new Error(`${raw.fileOfTensor(scaleName)}: tensor '${scaleName}' holds ${s[bad]} at row ${bad}: per-channel FP8 scales must be finite and > 0`);
}

/**
 * Reads `stored` (FP8 [N, K]) with its per-channel scale tensor as bf16, a slice reading
 * only the bytes it covers. Every scale must be finite and > 0 (a zero row's scale is 1 in
 * ATOM's quantizer), checked when read; the error names the scale tensor and its file.
 */
export async function readFp8PerChannel(
  raw: SafetensorsWeightSource,
  stored: string,
  scaleName: string,
  format: Fp8Format,
  slice?: WeightSlice,
): Promise<{ shape: number[]; data: Uint16Array }> {
  const [N, K] = raw.entry(stored).shape;
  const q = (await raw.read(stored, slice)).data as Uint8Array;
  const s = (await raw.read(scaleName)).data as Float32Array;
  checkPerChannelScales(raw, scaleName, s);
  const rows = slice?.axis === 0 ? rangeList(slice.ranges) : rangeList([[0, N]]);
  const cols = slice?.axis === 1 ? rangeList(slice.ranges).length : K;
  const out = new Uint16Array(rows.length * cols);
  rows.forEach((r, i) => {
    const t = fp8ScaledTable(format, s[r]);
    const o = i * cols;
    for (let j = 0; j < cols; j++) out[o + j] = t[q[o + j]];
  });
  return { shape: [rows.length, cols], data: out };
}

// Tensors the reference computes in bf16 whatever the checkpoint's quantization_config
// (ATOM atom/models/qwen4_exp.py and atom/model_ops/qwen4_exp/*): the router and the
// shared expert's gate (MergedReplicatedLinear, quant_config=None), the GDN input
// projections (refused when quantized: "Published FP8 weights exclude GDN"), the QSA
// indexer ("checkpoint keeps the indexer in BF16"), the hyper-connections, embeddings and
// lm_head (built without a quant_config), and every norm and conv weight.
const BF16_ONLY: readonly RegExp[] = [
  /\.mlp\.gate\.weight$/,
  /\.mlp\.shared_expert_gate\.weight$/,
  /\.linear_attn\.in_proj_(qkv|z|a|b)\.weight$/,
  /\.indexer\.index_qk_proj\.weight$/,
  /hyper_connection(_mixer)?\./,
  /(^|\.)embed_tokens\.weight$/,
  /^lm_head\.weight$/,
  /norm[^.]*\.weight$/,
  /\.conv1d\.weight$/,
];

/** Why an FP8 tensor of this (model) name is refused, or null when FP8 may stand there. */
export function fp8WhereBf16Problem(name: string): string | null {
  return BF16_ONLY.some((re) => re.test(name)) ? 'a tensor the reference (ATOM qwen4_exp) keeps in bf16 in every FP8 checkpoint' : null;
}
