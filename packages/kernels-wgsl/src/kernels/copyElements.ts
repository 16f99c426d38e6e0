// The exact data-movement ops as one copy kernel: output element e reads input element
//   src(e) = (e / width) * srcStride + srcStart + (e % width) % colPeriod
// or writes zero when src(e) >= srcLimit (padding rows). Bits are copied, never converted,
// so NaN payloads and subnormals pass through. Per output word (bf16: two elements).
import type { KernelDispatch, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { elementBits, isPacked16 } from '../wgsl/elementAccess.wgsl.ts';
import { flatDispatch, flatMain, numelOf, packedWordsMain, readInput, requireIntAttr, requireTensor, writeOutput } from './planParts.ts';

export interface CopyMap {
  width: number;
  srcStride: number;
  srcStart: number;
  colPeriod: number;
  srcLimit: number;
}

const COPY_FIELDS = ['n', 'width', 'srcStride', 'srcStart', 'colPeriod', 'srcLimit', 'words', 'groupsX'];

/** `wgslPreamble`: the dispatch's preamble; its text is the same for any ports, so the key holds. */
function copyWgsl(packed: boolean, wgslPreamble: string): string {
  return `
${wgslPreamble}
${elementBits('x', packed ? 'bf16' : 'f32')}
fn elem(e: u32) -> u32 {
  let src = (e / u.width) * u.srcStride + u.srcStart + (e % u.width) % u.colPeriod;
  if (src >= u.srcLimit) { return 0u; }
  return x_bits(src);
}
${packed ? packedWordsMain(64, 'elem', 'u.n', 'y') : flatMain(64, 'u.words', 'y[inv] = elem(inv);')}`;
}

/** One dispatch copying input `inPort` into output `outPort` (n elements of dtype) by `map`. */
export function copyDispatch(dtype: string, n: number, map: CopyMap, inPort = 0, outPort = 0): KernelDispatch {
  const packed = isPacked16(dtype);
  const words = packed ? Math.ceil(n / 2) : n;
  if (map.width < 1 || map.colPeriod < 1) throw new Error(`copyDispatch: width ${map.width} / colPeriod ${map.colPeriod} must be >= 1`);
  const pre = preamble(COPY_FIELDS, [buf('x', readInput(inPort)), buf('y', writeOutput(outPort))]);
  const uniforms = [n, map.width, map.srcStride, map.srcStart, map.colPeriod, map.srcLimit, words];
  return flatDispatch(`copy-${packed ? 'b16' : 'b32'}`, copyWgsl(packed, pre.wgsl), pre.bindings, words, 64, uniforms);
}

function sameDtype(x: TensorInfo, y: TensorInfo, op: string): void {
  if (x.dtype !== y.dtype) throw new Error(`${op}: output dtype '${y.dtype}' differs from input dtype '${x.dtype}'`);
}

function rowLen(shape: readonly number[]): number {
  return numelOf(shape.slice(1));
}

function plainCopy(op: string, srcStart: (x: TensorInfo, attrs: Record<string, unknown>) => number): KernelPlanner {
  return (inputs, outputs, attrs) => {
    const x = requireTensor(inputs[0], `${op}: input x`);
    const y = requireTensor(outputs[0], `${op}: output y`);
    sameDtype(x, y, op);
    if (rowLen(x.shape) !== rowLen(y.shape)) {
      throw new Error(`${op}: rows of x [${x.shape.join(',')}] and y [${y.shape.join(',')}] differ in length`);
    }
    const n = numelOf(y.shape);
    if (n === 0) return { scratch: [], dispatches: [] };
    const map = { width: n, srcStride: 0, srcStart: srcStart(x, attrs), colPeriod: n, srcLimit: numelOf(x.shape) };
    return { scratch: [], dispatches: [copyDispatch(x.dtype, n, map)] };
  };
}

/** shard: rank's rows [rank*C, (rank+1)*C), zero past T. */
export const shardPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'shard: input x');
  const y = requireTensor(outputs[0], 'shard: output y');
  const tp = requireIntAttr(attrs, 'tp', 'shard', 1);
  const rank = requireIntAttr(attrs, 'rank', 'shard');
  const chunk = requireIntAttr(attrs, 'chunk', 'shard', 1);
  if (rank >= tp) throw new Error(`shard: rank ${rank} is not in [0, ${tp})`);
  if (chunk * tp < x.shape[0]) throw new Error(`shard: chunk ${chunk} * tp ${tp} cannot hold the ${x.shape[0]} rows of x`);
  if (y.shape[0] !== chunk) throw new Error(`shard: y has ${y.shape[0]} rows, expected chunk = ${chunk}`);
  return plainCopy('shard', (xi) => rank * chunk * rowLen(xi.shape))(inputs, outputs, attrs);
};

/** pad: zero rows appended. */
export const padPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const rows = requireIntAttr(attrs, 'rows', 'pad');
  const x = requireTensor(inputs[0], 'pad: input x');
  const y = requireTensor(outputs[0], 'pad: output y');
  if (rows < x.shape[0] || y.shape[0] !== rows) throw new Error(`pad: rows ${rows} must be >= x's ${x.shape[0]} rows and equal y's ${y.shape[0]}`);
  return plainCopy('pad', () => 0)(inputs, outputs, attrs);
};

/** trim: the first rows. */
export const trimPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const rows = requireIntAttr(attrs, 'rows', 'trim');
  const x = requireTensor(inputs[0], 'trim: input x');
  const y = requireTensor(outputs[0], 'trim: output y');
  if (rows > x.shape[0] || y.shape[0] !== rows) throw new Error(`trim: rows ${rows} must be <= x's ${x.shape[0]} rows and equal y's ${y.shape[0]}`);
  return plainCopy('trim', () => 0)(inputs, outputs, attrs);
};

/** allGather over the stacked input [tp, C, ...]: the stack already is the gathered layout. */
export const allGatherPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'allGather: input x');
  const y = requireTensor(outputs[0], 'allGather: output y');
  const tp = requireIntAttr(attrs, 'tp', 'allGather', 1);
  if (x.shape[0] !== tp || numelOf(x.shape) !== numelOf(y.shape) || y.shape[0] !== tp * (x.shape[1] ?? 0)) {
    throw new Error(`allGather: stacked input [${x.shape.join(',')}] for tp ${tp} does not gather to [${y.shape.join(',')}]`);
  }
  sameDtype(x, y, 'allGather');
  const n = numelOf(y.shape);
  if (n === 0) return { scratch: [], dispatches: [] };
  return { scratch: [], dispatches: [copyDispatch(x.dtype, n, { width: n, srcStride: 0, srcStart: 0, colPeriod: n, srcLimit: n })] };
};

/** sliceCols: y = x[:, start:end]. */
export const sliceColsPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = requireTensor(inputs[0], 'sliceCols: input x');
  const y = requireTensor(outputs[0], 'sliceCols: output y');
  sameDtype(x, y, 'sliceCols');
  const start = requireIntAttr(attrs, 'start', 'sliceCols');
  const end = requireIntAttr(attrs, 'end', 'sliceCols');
  if (x.shape.length !== 2) throw new Error(`sliceCols: x must be 2-D, got [${x.shape.join(',')}]`);
  const [rows, cols] = x.shape;
  if (!(start < end && end <= cols)) throw new Error(`sliceCols: [${start}, ${end}) is outside [0, ${cols})`);
  if (y.shape[0] !== rows || y.shape[1] !== end - start) throw new Error(`sliceCols: y [${y.shape.join(',')}] should be [${rows},${end - start}]`);
  if (rows === 0) return { scratch: [], dispatches: [] };
  const width = end - start;
  const map = { width, srcStride: cols, srcStart: start, colPeriod: width, srcLimit: rows * cols };
  return { scratch: [], dispatches: [copyDispatch(x.dtype, rows * width, map)] };
};

/** hcExpand: each row of e copied into the n streams of X. */
export const hcExpandPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const e = requireTensor(inputs[0], 'hcExpand: input e');
  const x = requireTensor(outputs[0], 'hcExpand: output x');
  const n = requireIntAttr(attrs, 'streams', 'hcExpand', 1);
  if (e.shape.length !== 2) throw new Error(`hcExpand: e must be [rows,H], got [${e.shape.join(',')}]`);
  const [rows, h] = e.shape;
  if (x.shape[0] !== rows || x.shape[1] !== n * h) throw new Error(`hcExpand: x [${x.shape.join(',')}] should be [${rows},${n * h}]`);
  if (rows * h === 0) return { scratch: [], dispatches: [] };
  const map = { width: n * h, srcStride: h, srcStart: 0, colPeriod: h, srcLimit: rows * h };
  return { scratch: [], dispatches: [copyDispatch('bf16', rows * n * h, map)] };
};
