import { type Fp8Format, fp8Info } from '../../numerics/fp8.ts';
import type { DType } from '../../tensor/tensor.ts';

/** a value's shape and dtype, as the rules see an input or give an output */
export interface ValueInfo {
  shape: readonly number[];
  dtype: DType;
}

// Building blocks of the ops' output rules (OpDef.shape). Each failure names the op, the
// port and what was expected, so a bad graph is refused where it is built.
export class ShapeRule {
  constructor(readonly op: string) {}

  fail(msg: string): never {
    throw new Error(`op ${this.op}: ${msg}`);
  }

  /** A present input port. */
  port(inputs: readonly (ValueInfo | null)[], i: number, name: string): ValueInfo {
    const v = inputs[i];
    if (!v) this.fail(`input '${name}' is missing`);
    return v;
  }

  /** [rows, cols] of a 2-D input, with its columns checked when `cols` is given. */
  matrix(v: ValueInfo, name: string, cols?: number): [number, number] {
    if (v.shape.length !== 2) this.fail(`input '${name}' must be 2-D, got [${v.shape.join(',')}]`);
    if (cols !== undefined && v.shape[1] !== cols) this.fail(`input '${name}' is [${v.shape.join(',')}], expected [rows,${cols}]`);
    return [v.shape[0], v.shape[1]];
  }

  /** [rows, cols] of the present 2-D input port i, its columns and rows checked when given. */
  mat(inputs: readonly (ValueInfo | null)[], i: number, name: string, cols?: number, rows?: number): [number, number] {
    const v = this.port(inputs, i, name);
    const dims = this.matrix(v, name, cols);
    if (rows !== undefined) this.rows(v, name, rows);
    return dims;
  }

  /** The present 2-D input port i and its [rows, cols], its columns checked when `cols` is given. */
  matrixPort(inputs: readonly (ValueInfo | null)[], i: number, name: string, cols?: number): [ValueInfo, number, number] {
    const v = this.port(inputs, i, name);
    const [rows, c] = this.matrix(v, name, cols);
    return [v, rows, c];
  }

  /** The present input port i must have the shape of `like`. */
  sameAs(inputs: readonly (ValueInfo | null)[], i: number, name: string, like: ValueInfo): void {
    this.same(this.port(inputs, i, name), like, name);
  }

  /** An FP8 input must carry `dtype`, the one the op's `format` attribute names (fp8Dtype). */
  fp8(v: ValueInfo, name: string, dtype: DType, attrs: Readonly<Record<string, unknown>>): void {
    if (v.dtype !== dtype) this.fail(`input '${name}' is ${v.dtype}, expected ${dtype} (format '${String(attrs.format)}')`);
  }

  /** The present input port i must be a vector of `length` elements. */
  vec(inputs: readonly (ValueInfo | null)[], i: number, name: string, length: number): void {
    const v = this.port(inputs, i, name);
    if (v.shape.length !== 1 || v.shape[0] !== length) this.fail(`input '${name}' is [${v.shape.join(',')}], expected [${length}]`);
  }

  /** Rows of a 2-D input that must have `rows` rows. */
  rows(v: ValueInfo, name: string, rows: number): void {
    if (v.shape[0] !== rows) this.fail(`input '${name}' has ${v.shape[0]} rows, expected ${rows}`);
  }

  same(v: ValueInfo, like: ValueInfo, name: string): void {
    if (v.shape.join(',') !== like.shape.join(',')) this.fail(`input '${name}' is [${v.shape.join(',')}], expected [${like.shape.join(',')}]`);
  }

  /** cols / parts, which must divide. */
  split(cols: number, parts: number, what: string): number {
    if (!(parts >= 1) || cols % parts !== 0) this.fail(`${what}: ${cols} columns do not split into ${parts} equal parts`);
    return cols / parts;
  }
}

export function info(shape: readonly number[], dtype: DType): ValueInfo {
  return { shape, dtype };
}

export function num(attrs: Readonly<Record<string, unknown>>, name: string): number {
  return attrs[name] as number;
}

/** `x` with `rows` rows (its other axes kept), of `dtype` (default x's). */
export function withRows(x: ValueInfo, rows: number, dtype: DType = x.dtype): ValueInfo {
  return info([rows, ...x.shape.slice(1)], dtype);
}

/** The fp8 dtype named by an op's `format` attribute. */
export function fp8Dtype(attrs: Readonly<Record<string, unknown>>): DType {
  return fp8Info(attrs.format as Fp8Format).dtype;
}
