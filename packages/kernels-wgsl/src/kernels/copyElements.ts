// The exact data-movement ops as one copy kernel: output element e reads input element
//   src(e) = (e / width) * srcStride + srcStart + (e % width) % colPeriod
// or writes zero when src(e) >= srcLimit (padding rows). Bits are copied, never converted,
// so NaN payloads and subnormals pass through. Per output word (bf16: two elements).
import type { KernelDispatch, KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { elementBits, isPacked16 } from '../wgsl/elementAccess.wgsl.ts';
import { flatDispatch, flatMain, numelOf, packedWordsMain, readInput, writeOutput } from './planParts.ts';

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

function rowLen(shape: readonly number[]): number {
  return numelOf(shape.slice(1));
}

/** The output's elements from input element `srcStart(x, attrs)` on, zero past the input's end (y's rows are x's in length). */
function plainCopy(srcStart: (x: TensorInfo, attrs: Record<string, unknown>) => number): KernelPlanner {
  return (inputs, outputs, attrs) => {
    const x = inputs[0]!;
    const n = numelOf(outputs[0]!.shape);
    if (n === 0) return { scratch: [], dispatches: [] };
    const map = { width: n, srcStride: 0, srcStart: srcStart(x, attrs), colPeriod: n, srcLimit: numelOf(x.shape) };
    return { scratch: [], dispatches: [copyDispatch(x.dtype, n, map)] };
  };
}

/** shard: rank's rows [rank*C, (rank+1)*C), zero past T. */
export const shardPlanner = plainCopy((x, attrs) => (attrs.rank as number) * (attrs.chunk as number) * rowLen(x.shape));

/** pad: zero rows appended. */
export const padPlanner = plainCopy(() => 0);

/** trim: the first rows. */
export const trimPlanner = plainCopy(() => 0);

/** allGather over the stacked input [tp, C, ...]: the stack already is the gathered layout. */
export const allGatherPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const x = inputs[0]!;
  const y = outputs[0]!;
  const tp = attrs.tp as number;
  // the device's stacking, which no declaration describes
  if (x.shape[0] !== tp || numelOf(x.shape) !== numelOf(y.shape) || y.shape[0] !== tp * (x.shape[1] ?? 0)) {
    throw new Error(`allGather: stacked input [${x.shape.join(',')}] for tp ${tp} does not gather to [${y.shape.join(',')}]`);
  }
  const n = numelOf(y.shape);
  if (n === 0) return { scratch: [], dispatches: [] };
  return { scratch: [], dispatches: [copyDispatch(x.dtype, n, { width: n, srcStride: 0, srcStart: 0, colPeriod: n, srcLimit: n })] };
};

/** sliceCols: y = x[:, start:end]. */
export const sliceColsPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const x = inputs[0]!;
  const start = attrs.start as number;
  const end = attrs.end as number;
  const [rows, cols] = x.shape;
  if (rows === 0) return { scratch: [], dispatches: [] };
  const width = end - start;
  const map = { width, srcStride: cols, srcStart: start, colPeriod: width, srcLimit: rows * cols };
  return { scratch: [], dispatches: [copyDispatch(x.dtype, rows * width, map)] };
};

/** hcExpand: each row of e copied into the n streams of X. */
export const hcExpandPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const n = attrs.streams as number;
  const [rows, h] = inputs[0]!.shape;
  if (rows * h === 0) return { scratch: [], dispatches: [] };
  const map = { width: n * h, srcStride: h, srcStart: 0, colPeriod: h, srcLimit: rows * h };
  return { scratch: [], dispatches: [copyDispatch('bf16', rows * n * h, map)] };
};
