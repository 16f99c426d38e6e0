// A tensor is a dtype, a row-major shape and a typed array. bf16 is stored as raw 16-bit
// patterns (Uint16Array) so that every stored value has exactly one, known rounding.
export type DType = 'bf16' | 'f32' | 'i32' | 'fp8e4m3fn' | 'fp8e4m3fnuz';

export type TensorData = Uint16Array | Float32Array | Int32Array | Uint8Array;

export interface Tensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly data: TensorData;
}

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function bytesPerElement(dtype: DType): number {
  switch (dtype) {
    case 'bf16':
      return 2;
    case 'f32':
    case 'i32':
      return 4;
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return 1;
  }
}

export function allocData(dtype: DType, n: number): TensorData {
  switch (dtype) {
    case 'bf16':
      return new Uint16Array(n);
    case 'f32':
      return new Float32Array(n);
    case 'i32':
      return new Int32Array(n);
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return new Uint8Array(n);
  }
}

export function zeros(dtype: DType, shape: readonly number[]): Tensor {
  return { dtype, shape: [...shape], data: allocData(dtype, numel(shape)) };
}

export function tensor(dtype: DType, shape: readonly number[], data: TensorData): Tensor {
  const n = numel(shape);
  if (data.length !== n) {
    throw new Error(`tensor: shape [${shape.join(',')}] needs ${n} elements, data has ${data.length}`);
  }
  return { dtype, shape: [...shape], data };
}

export function bf16Tensor(shape: readonly number[], data?: Uint16Array): Tensor {
  return data ? tensor('bf16', shape, data) : zeros('bf16', shape);
}

/** Rows of a 2-D (or higher, leading-dim) tensor as a view: no copy. */
export function rowView(t: Tensor, start: number, end: number): Tensor {
  const rowLen = numel(t.shape.slice(1));
  const data = t.data.subarray(start * rowLen, end * rowLen) as TensorData;
  return { dtype: t.dtype, shape: [end - start, ...t.shape.slice(1)], data };
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}
