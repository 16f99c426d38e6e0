// A .safetensors file written byte by byte from the format (any dtype, int64 included), not
// through the project's writer: the checkpoint readers' tests build well-formed and malformed
// files with it, so a writer bug cannot hide a reader bug.
import { writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { safetensorsItemBytes, type SafetensorsDtype } from '../../packages/core/src/io/safetensors.ts';
import { numel } from '../../packages/core/src/tensor/tensor.ts';

export interface RawEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  bytes: Uint8Array;
}

export function writeRawSafetensors(path: string, entries: RawEntry[]): void {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const e of entries) {
    expect(e.bytes.length).toBe(numel(e.shape) * safetensorsItemBytes(e.dtype));
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + e.bytes.length] };
    offset += e.bytes.length;
  }
  const text = JSON.stringify(header);
  const json = new TextEncoder().encode(text.padEnd(Math.ceil(text.length / 8) * 8, ' '));
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const e of entries) {
    out.set(e.bytes, at);
    at += e.bytes.length;
  }
  writeFileSync(path, out);
}
