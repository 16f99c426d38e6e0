// Element bits of tensors and of the kernels' storage words (kernels-wgsl/kernelProgram.ts:
// the element bytes in order, the last word zero-padded), and the count of elements whose
// bits differ: the kernel tests compare GPU and CPU results bit for bit with these.
import type { Tensor } from '@hcsp/core';
import { storageWords, type TensorInfo } from '@hcsp/kernels-wgsl';

/** Raw element bits: 8-bit for fp8, 16-bit for bf16, 32-bit for f32 and i32. */
export type ElementBits = Uint8Array | Uint16Array | Uint32Array;

export function tensorInfo(t: Tensor): TensorInfo {
  return { shape: t.shape, dtype: t.dtype };
}

/** A tensor's elements as storage words. */
export function tensorWords(t: Tensor): Uint32Array {
  const words = new Uint32Array(storageWords(t.dtype, t.data.length));
  new Uint8Array(words.buffer).set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return words;
}

/** The element bits of a tensor of `info`'s shape and dtype from its storage words. */
export function elementBits(words: Uint32Array, info: TensorInfo): ElementBits {
  const n = info.shape.reduce((a, b) => a * b, 1);
  switch (info.dtype) {
    case 'bf16':
      return new Uint16Array(words.buffer, words.byteOffset, n).slice();
    case 'f32':
    case 'i32':
      return words.slice(0, n);
    case 'fp8e4m3fn':
    case 'fp8e4m3fnuz':
      return new Uint8Array(words.buffer, words.byteOffset, n).slice();
    default:
      throw new Error(`elementBits: no storage layout for dtype '${info.dtype}'`);
  }
}

/** The element bits of a CPU tensor, in the same form as elementBits. */
export function tensorBits(t: Tensor): ElementBits {
  if (t.dtype === 'f32' || t.dtype === 'i32') return new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length);
  return t.data as Uint16Array | Uint8Array;
}

export interface BitDiff {
  differing: number;
  /** the first differing element, for the failure message */
  first: string;
}

/** Elements whose bits differ (NaN patterns included: the GPU must give the CPU's NaN bits too). */
export function bitDiff(got: ArrayLike<number>, want: ArrayLike<number>): BitDiff {
  if (got.length !== want.length) throw new Error(`bitDiff: ${got.length} elements against ${want.length}`);
  let differing = 0;
  let first = '';
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want[i]) {
      if (!first) first = `element ${i}: gpu 0x${got[i].toString(16)} cpu 0x${want[i].toString(16)}`;
      differing++;
    }
  }
  return { differing, first };
}
