import { allocData, bytesPerElement, numel, shapeStr, type DType, type Tensor } from '@hcsp/core';

// Tensors travel to the GPU (and over HTTP to the Chromium page) as their raw little-endian
// bytes, padded to whole u32 words: that is exactly the packed word layout of
// kernels-wgsl/kernelProgram.ts (bf16 element i in the low half of word i >> 1 when i is
// even, fp8 element i in byte i & 3 of word i >> 2), so no repacking happens anywhere.

/** Bytes of a dtype/shape in the word layout: the element bytes rounded up to 4, at least 4. */
export function wordBytesOf(dtype: DType, shape: readonly number[]): number {
  const raw = numel(shape) * bytesPerElement(dtype);
  // WebGPU buffers and copies work in multiples of 4 bytes; an empty tensor still gets a word.
  return Math.max(4, Math.ceil(raw / 4) * 4);
}

/** The tensor's bytes, zero-padded to whole words (a copy only when padding is needed). */
export function tensorWordBytes(t: Tensor): Uint8Array {
  const raw = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const padded = wordBytesOf(t.dtype, t.shape);
  if (raw.byteLength === padded) return raw;
  const out = new Uint8Array(padded);
  out.set(raw);
  return out;
}

/** A tensor of the given dtype/shape from word-layout bytes (copied: the source may be reused). */
export function tensorFromWordBytes(dtype: DType, shape: readonly number[], bytes: Uint8Array): Tensor {
  const n = numel(shape);
  const need = n * bytesPerElement(dtype);
  if (bytes.byteLength < need) {
    throw new Error(`tensor bytes: ${dtype}${shapeStr(shape)} needs ${need} bytes, got ${bytes.byteLength}`);
  }
  const data = allocData(dtype, n);
  new Uint8Array(data.buffer, data.byteOffset, need).set(bytes.subarray(0, need));
  return { dtype, shape: [...shape], data };
}
