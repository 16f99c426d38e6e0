// A kernel's generated preamble (after TF.js's): the uniform struct U, one storage binding per
// buffer in dispatch order, the uniform block last, and the bf16 accessors, all from the one
// list that also gives the dispatch its `bindings`, so the WGSL binding indices and access
// modes cannot drift from what the executor binds.
import type { KernelBinding } from '../kernelProgram.ts';
import { bf16Element } from './elementAccess.wgsl.ts';

export interface BufferDecl {
  /** WGSL name of the buffer */
  name: string;
  /** what it is bound to; its access is the WGSL access mode */
  from: KernelBinding;
  /** array element type */
  type: 'u32' | 'f32' | 'i32' | 'vec4<u32>' | 'atomic<u32>';
  /** name of the bf16 element accessor `fn <accessor>(i: u32) -> f32` to declare, if any */
  accessor?: string;
}

/** A buffer of `type` elements (u32 words by default). */
export function buf(name: string, from: KernelBinding, type: BufferDecl['type'] = 'u32'): BufferDecl {
  return { name, from, type };
}

/** A packed bf16 buffer (u32 words) with its element accessor, `<name>_f32` by default. */
export function bf16Buf(name: string, from: KernelBinding, accessor = `${name}_f32`): BufferDecl {
  return { name, from, type: 'u32', accessor };
}

export interface Preamble {
  wgsl: string;
  /** the dispatch's bindings, in binding order */
  bindings: KernelBinding[];
}

/** `fields`: struct U's fields in order, each `name` (a u32) or `name: <type>`. */
export function preamble(fields: readonly string[], buffers: readonly BufferDecl[]): Preamble {
  const lines = [`struct U { ${fields.map((f) => (f.includes(':') ? f : `${f}: u32`)).join(', ')} }`];
  buffers.forEach((b, i) => {
    lines.push(`@group(0) @binding(${i}) var<storage, ${b.from.access}> ${b.name}: array<${b.type}>;`);
  });
  lines.push(`@group(0) @binding(${buffers.length}) var<uniform> u: U;`);
  for (const b of buffers) if (b.accessor) lines.push(bf16Element(b.name, b.accessor));
  return { wgsl: lines.join('\n'), bindings: buffers.map((b) => b.from) };
}
