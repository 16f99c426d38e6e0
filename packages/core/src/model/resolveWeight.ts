import type { WeightRef, WeightSlice } from '../graph/graph.ts';
import { checkAxisSlice, sliceTensor } from '../tensor/axisSlice.ts';
import { allocData, numel, shapeStr, type DType, type Tensor } from '../tensor/tensor.ts';
import type { FileRun, WeightSource } from './weightSource.ts';

function concatRows(parts: Tensor[], label: string): Tensor {
  const first = parts[0];
  const inner = first.shape.slice(1);
  for (const p of parts) {
    if (p.dtype !== first.dtype || shapeStr(p.shape.slice(1)) !== shapeStr(inner)) {
      throw new Error(`${label}: cannot concatenate ${p.dtype}${shapeStr(p.shape)} with ${first.dtype}${shapeStr(first.shape)}`);
    }
  }
  const rows = parts.reduce((acc, p) => acc + p.shape[0], 0);
  const out = allocData(first.dtype, rows * numel(inner));
  let o = 0;
  for (const p of parts) {
    out.set(p.data as never, o);
    o += p.data.length;
  }
  return { dtype: first.dtype, shape: [rows, ...inner], data: out };
}

/** The ref's reshape, if any: a view with the new shape over the same elements (no copy). */
function reshaped(t: Tensor, ref: WeightRef): Tensor {
  if (!ref.reshape) return t;
  if (numel(ref.reshape) !== t.data.length) {
    throw new Error(`${ref.name}: cannot view ${t.dtype}${shapeStr(t.shape)} as ${shapeStr(ref.reshape)}: element counts differ`);
  }
  return { dtype: t.dtype, shape: [...ref.reshape], data: t.data };
}

/** The tensor a weight ref stands for, from whole tensors in memory: concatenated, then sliced, then reshaped. */
export function resolveWeightInMemory(get: (name: string) => Tensor, ref: WeightRef): Tensor {
  const full = ref.concat ? concatRows(ref.concat.map(get), ref.name) : get(ref.name);
  return reshaped(ref.slice ? sliceTensor(full, ref.slice) : full, ref);
}

/** Rows [a, b) of the concatenation of parts with these row counts, as (part, local range) pieces. */
function rowPieces(partRows: readonly number[], a: number, b: number): { part: number; range: [number, number] }[] {
  const pieces: { part: number; range: [number, number] }[] = [];
  let start = 0;
  partRows.forEach((rows, part) => {
    const lo = Math.max(a, start);
    const hi = Math.min(b, start + rows);
    if (lo < hi) pieces.push({ part, range: [lo - start, hi - start] });
    start += rows;
  });
  return pieces;
}

/**
 * The tensor a graph weight value stands for: checkpoint tensor(s), concatenated along
 * rows, sliced, reshaped. Only the slice is read from the source: row slices of a
 * concatenation are mapped onto the parts they fall in.
 */
export async function resolveWeight(source: WeightSource, ref: WeightRef): Promise<Tensor> {
  return reshaped(await resolveSliced(source, ref), ref);
}

async function resolveSliced(source: WeightSource, ref: WeightRef): Promise<Tensor> {
  if (!ref.concat) return source.read(ref.name, ref.slice);
  const parts = ref.concat;
  if (!ref.slice) return concatRows(await Promise.all(parts.map((n) => source.read(n))), ref.name);
  const infos = parts.map((n) => source.info(n));
  const rows = infos.reduce((acc, i) => acc + i.shape[0], 0);
  checkAxisSlice([rows, ...infos[0].shape.slice(1)], ref.slice, ref.name);
  if (ref.slice.axis > 0) return concatRows(await Promise.all(parts.map((n) => source.read(n, ref.slice))), ref.name);
  const pieces = ref.slice.ranges.flatMap(([a, b]) =>
    rowPieces(
      infos.map((i) => i.shape[0]),
      a,
      b,
    ),
  );
  return concatRows(await Promise.all(pieces.map((p) => source.read(parts[p.part], { axis: 0, ranges: [p.range] }))), ref.name);
}

/** A weight value's tensor, or only the row ranges `rows` of it (a row-gathered weight). */
export function resolveWeightRows(source: WeightSource, ref: WeightRef, rows?: [number, number][]): Promise<Tensor> {
  if (!rows) return resolveWeight(source, ref);
  if (ref.slice) throw new Error(`weight '${ref.name}': a row-gathered weight cannot also be sliced`);
  return resolveWeight(source, { ...ref, slice: { axis: 0, ranges: rows } });
}

/** One source read a weight value is made of, and the file runs it copies. */
export interface PlannedSourceRead {
  name: string;
  slice?: WeightSlice;
  runs: FileRun[];
}

/** A weight value's tensor as file runs: the reads' runs, concatenated in order, are its bytes. */
export interface WeightReadPlan {
  dtype: DType;
  shape: number[];
  reads: PlannedSourceRead[];
}

/**
 * resolveWeight(source, ref) as the file runs it would copy, when every source read it makes
 * is a plain copy (WeightSource.filePlan); null when one converts, the source has no files, or
 * the parts do not fit together (resolveWeight then says why).
 */
export function planWeightRead(source: WeightSource, ref: WeightRef): WeightReadPlan | null {
  if (!source.filePlan) return null;
  let reads: { name: string; slice?: WeightSlice }[];
  if (!ref.concat) reads = [{ name: ref.name, slice: ref.slice }];
  else if (!ref.slice) reads = ref.concat.map((name) => ({ name }));
  else if (ref.slice.axis > 0) reads = ref.concat.map((name) => ({ name, slice: ref.slice }));
  else {
    const parts = ref.concat;
    const rows = parts.map((n) => source.info(n).shape[0]);
    const total = rows.reduce((a, b) => a + b, 0);
    if (!ref.slice.ranges.every(([a, b]) => Number.isInteger(a) && Number.isInteger(b) && a >= 0 && a < b && b <= total)) return null;
    reads = ref.slice.ranges.flatMap(([a, b]) => rowPieces(rows, a, b)).map((p) => ({ name: parts[p.part], slice: { axis: 0, ranges: [p.range] } }));
  }
  const plans = reads.map((r) => source.filePlan!(r.name, r.slice));
  if (plans.some((p) => p === null)) return null;
  const first = plans[0]!;
  const inner = shapeStr(first.shape.slice(1));
  if (!plans.every((p) => p!.dtype === first.dtype && shapeStr(p!.shape.slice(1)) === inner)) return null;
  let shape = [plans.reduce((n, p) => n + p!.shape[0], 0), ...first.shape.slice(1)];
  if (!ref.concat) shape = first.shape;
  if (ref.reshape) {
    if (numel(ref.reshape) !== numel(shape)) return null;
    shape = [...ref.reshape];
  }
  return { dtype: first.dtype, shape, reads: reads.map((r, i) => ({ ...r, runs: plans[i]!.runs })) };
}
