// The WGSL planners of the LM/MTP head ops (core graph/ops/headOps.ts). sliceRows and reshape
// are the shared copy kernel; rowBlocksToCols and mtpDraftIds map each output element to
// one input element; argmax compares order-preserving integer keys of the bf16 bits, so
// NaN and the signed zeros follow torch.argmax exactly whatever the device's float rules
// (WGSL lets implementations assume there are no NaNs).
import type { KernelsFor } from '@hcsp/core';
import type { KernelPlanner } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { elementBits } from '../wgsl/elementAccess.wgsl.ts';
import { copyDispatch } from './copyElements.ts';
import { flatDispatch, flatMain, packedWordsMain, readInput, writeOutput } from './planParts.ts';

const WG = 64;
const NONE = { scratch: [], dispatches: [] };

function numel(shape: readonly number[]): number {
  return shape.reduce((a, d) => a * d, 1);
}

/** sliceRows: a contiguous run of whole rows. */
export const sliceRowsPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = inputs[0]!;
  const start = attrs.start as number;
  const row = numel(x.shape.slice(1));
  const n = numel(outputs[0]!.shape);
  if (n === 0) return NONE;
  return { scratch: [], dispatches: [copyDispatch(x.dtype, n, { width: n, srcStride: 0, srcStart: start * row, colPeriod: n, srcLimit: numel(x.shape) })] };
};

/** reshape: the same elements in the same order. */
export const reshapePlanner: KernelPlanner = (inputs) => {
  const x = inputs[0]!;
  const n = numel(x.shape);
  if (n === 0) return NONE;
  return { scratch: [], dispatches: [copyDispatch(x.dtype, n, { width: n, srcStride: 0, srcStart: 0, colPeriod: n, srcLimit: n })] };
};

/** rowBlocksToCols: output element (t, p*C + j) reads input element ((p*R + t), j); per output word. */
export const rowBlocksToColsPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const parts = attrs.parts as number;
  const [rows, cols] = inputs[0]!.shape;
  const n = rows * cols;
  if (n === 0) return NONE;
  const words = Math.ceil(n / 2);
  const pre = preamble(['n', 'r', 'c', 'parts', 'words', 'groupsX'], [buf('x', readInput(0)), buf('y', writeOutput(0))]);
  const wgsl = `
${pre.wgsl}
${elementBits('x', 'bf16')}
fn elem(e: u32) -> u32 {
  let wide = u.parts * u.c;
  let t = e / wide;
  let p = (e % wide) / u.c;
  return x_bits((p * u.r + t) * u.c + e % u.c);
}
${packedWordsMain(WG, 'elem', 'u.n', 'y')}`;
  return { scratch: [], dispatches: [flatDispatch('row-blocks-to-cols', wgsl, pre.bindings, words, WG, [n, rows / parts, cols, parts, words])] };
};

/** mtpDraftIds: y[i] = ids[i + 1], the last element next[0]; one invocation per id. */
export const mtpDraftIdsPlanner: KernelPlanner = (inputs) => {
  const [T] = inputs[0]!.shape;
  const pre = preamble(['t', 'groupsX'], [buf('ids', readInput(0)), buf('next', readInput(1)), buf('y', writeOutput(0))]);
  const wgsl = `
${pre.wgsl}
${flatMain(WG, 'u.t', 'if (inv + 1u < u.t) { y[inv] = ids[inv + 1u]; } else { y[inv] = next[0]; }')}`;
  return { scratch: [], dispatches: [flatDispatch('mtp-draft-ids', wgsl, pre.bindings, T, WG, [T])] };
};

// argmax: one workgroup per row. Key of bf16 bits b: NaN -> 0x10000 (above every number),
// else -|v| -> 0x8000 - mag, +|v| and both zeros -> 0x8000 + mag: ordered like the values,
// with -0 = +0. Each invocation keeps the first index of its largest key over a strided
// scan, then a tree over (key, index) keeps the larger key and, on equal keys, the lower
// index: the first maximum, the first NaN.
const ARGMAX = preamble(['rows', 'vocab', 'groupsX'], [buf('logits', readInput(0)), buf('ids', writeOutput(0))]);
const ARGMAX_WGSL = `
${ARGMAX.wgsl}
${elementBits('logits', 'bf16')}
var<workgroup> keys: array<u32, ${WG}>;
var<workgroup> idxs: array<u32, ${WG}>;
fn order_key(b: u32) -> u32 {
  let mag = b & 0x7fffu;
  if (mag > 0x7f80u) { return 0x10000u; }
  if ((b & 0x8000u) != 0u && mag != 0u) { return 0x8000u - mag; }
  return 0x8000u + mag;
}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + wid.y * u.groupsX;
  if (row >= u.rows) { return; }
  var bestKey = 0u;
  var bestIdx = 0xffffffffu;
  for (var v = lid; v < u.vocab; v = v + ${WG}u) {
    let k = order_key(logits_bits(row * u.vocab + v));
    if (bestIdx == 0xffffffffu || k > bestKey) { bestKey = k; bestIdx = v; }
  }
  keys[lid] = bestKey;
  idxs[lid] = bestIdx;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      let k = keys[lid + s];
      let i = idxs[lid + s];
      if (i != 0xffffffffu && (idxs[lid] == 0xffffffffu || k > keys[lid] || (k == keys[lid] && i < idxs[lid]))) {
        keys[lid] = k;
        idxs[lid] = i;
      }
    }
    workgroupBarrier();
  }
  if (lid == 0u) { ids[row] = idxs[0]; }
}`;

export const argmaxPlanner: KernelPlanner = (inputs) => {
  const [rows, vocab] = inputs[0]!.shape;
  if (rows === 0) return NONE;
  // one workgroup per row
  return { scratch: [], dispatches: [flatDispatch('argmax-bf16', ARGMAX_WGSL, ARGMAX.bindings, rows * WG, WG, [rows, vocab])] };
};

export const HEAD_WGSL_KERNELS: KernelsFor<KernelPlanner> = {
  sliceRows: sliceRowsPlanner,
  reshape: reshapePlanner,
  rowBlocksToCols: rowBlocksToColsPlanner,
  argmax: argmaxPlanner,
  mtpDraftIds: mtpDraftIdsPlanner,
};
