// Small pieces every planner uses: port bindings, the uniform block (f32 values as bits), a
// 2-D dispatch grid for invocation counts past the 65535-workgroups-per-dimension limit, and
// the flat and packed-word WGSL mains. The ports' dtypes, shapes and the attributes are the
// op declaration's to check (checkedPlanner.ts). The WGSL binding declarations come from
// wgsl/bindings.wgsl.ts.
import type { KernelBinding, KernelDispatch } from '../kernelProgram.ts';

export const MAX_GROUPS_PER_DIM = 65535;

export function readInput(port: number): KernelBinding {
  return { target: { kind: 'input', port }, access: 'read' };
}

export function writeOutput(port: number): KernelBinding {
  return { target: { kind: 'output', port }, access: 'read_write' };
}

export function readScratch(name: string): KernelBinding {
  return { target: { kind: 'scratch', name }, access: 'read' };
}

export function writeScratch(name: string): KernelBinding {
  return { target: { kind: 'scratch', name }, access: 'read_write' };
}

/** Uniform words padded to whole 16-byte rows (uniform buffers are read in vec4 units). */
export function uniformWords(values: number[]): Uint32Array {
  const out = new Uint32Array(Math.max(4, Math.ceil(values.length / 4) * 4));
  values.forEach((v, i) => {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`uniformWords: value ${v} at ${i} is not a u32`);
    out[i] = v;
  });
  return out;
}

const bitsView = new DataView(new ArrayBuffer(4));

/** The bit pattern of fround(x), for f32 uniform words (read with bitcast<f32>) and WGSL literals. */
export function f32Bits(x: number): number {
  bitsView.setFloat32(0, x);
  return bitsView.getUint32(0);
}

export interface Grid {
  workgroups: [number, number, number];
  /** workgroups along x: the flat workgroup index is wid.x + wid.y * groupsX */
  groupsX: number;
}

/** A grid of workgroups of `wgSize` invocations covering `invocations` (at least one group). */
export function gridFor(invocations: number, wgSize: number): Grid {
  const groups = Math.max(1, Math.ceil(invocations / wgSize));
  const groupsX = Math.min(groups, MAX_GROUPS_PER_DIM);
  const groupsY = Math.ceil(groups / groupsX);
  if (groupsY > MAX_GROUPS_PER_DIM) throw new Error(`gridFor: ${invocations} invocations need too many workgroups`);
  return { workgroups: [groupsX, groupsY, 1], groupsX };
}

/** WGSL main() parameters and the flat invocation index `inv` for a gridFor() dispatch. */
export function flatInvocation(wgSize: number, groupsXExpr: string): { params: string; body: string } {
  return {
    params: '@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32',
    body: `let inv = (wid.x + wid.y * ${groupsXExpr}) * ${wgSize}u + lid;`,
  };
}

/**
 * WGSL `main` of a gridFor() dispatch: `body` runs once per flat invocation `inv` below
 * `limit` (a u32 expression). The uniform struct `u` must have the field groupsX.
 */
export function flatMain(wgSize: number, limit: string, body: string): string {
  const inv = flatInvocation(wgSize, 'u.groupsX');
  return `@compute @workgroup_size(${wgSize})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= ${limit}) { return; }
  ${body}
}`;
}

/**
 * flatMain over the u.words output words of 16-bit elements: word inv of buffer `out` packs
 * `bits(2 inv)` in its low half and `bits(2 inv + 1)` in its high half (0 from element `n`,
 * a u32 expression, on), so whole words are written and no two invocations share one.
 */
export function packedWordsMain(wgSize: number, bits: string, n: string, out: string): string {
  return flatMain(
    wgSize,
    'u.words',
    `var word = ${bits}(2u * inv);
  if (2u * inv + 1u < ${n}) { word = word | (${bits}(2u * inv + 1u) << 16u); }
  ${out}[inv] = word;`,
  );
}

/** A dispatch of `invocations` flat invocations (flatMain) whose uniform block is `uniforms` then groupsX. */
export function flatDispatch(key: string, wgsl: string, bindings: KernelBinding[], invocations: number, wgSize: number, uniforms: number[]): KernelDispatch {
  const grid = gridFor(invocations, wgSize);
  return { key, wgsl, bindings, uniforms: uniformWords([...uniforms, grid.groupsX]), workgroups: grid.workgroups };
}

export function numelOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
