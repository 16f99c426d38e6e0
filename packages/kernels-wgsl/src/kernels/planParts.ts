// Small pieces every planner uses: port bindings, the uniform block, and a 2-D dispatch grid
// for invocation counts past the 65535-workgroups-per-dimension limit.
import type { KernelBinding, TensorInfo } from '../kernelProgram.ts';

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

export function requireTensor(t: TensorInfo | null | undefined, what: string): TensorInfo {
  if (!t) throw new Error(`${what} is missing`);
  return t;
}

export function requireDtype(t: TensorInfo, dtypes: readonly string[], what: string): void {
  if (!dtypes.includes(t.dtype)) throw new Error(`${what} has dtype '${t.dtype}', expected ${dtypes.join(' or ')}`);
}

export function requireIntAttr(attrs: Record<string, unknown>, name: string, op: string, min = 0): number {
  const v = attrs[name];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new Error(`${op}: attribute ${name} = ${String(v)} is not an integer >= ${min}`);
  }
  return v;
}

export function numelOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
