// Canonical reduction order v1 (core numerics/canonicalSum.ts, README "Canonical reduction
// order") in WGSL: one workgroup of 64 invocations per reduction, invocation l being v1's lane l.
// Each invocation adds its lane's terms (canonicalLaneLoopWgsl), stores its sum in a workgroup
// array of 64 floats, and the sums meet in v1's xor butterfly (canonicalButterflyWgsl): at step
// m only lanes l < m still feed lane 0, and for them l ^ m = l + m, so lane 0 ends with v1's
// total, read back from the array's element 0 by every invocation.
import { CANONICAL_CHUNK, CANONICAL_LANES } from '@hcsp/core';

/** the workgroup size of a canonical reduction: one invocation per logical lane */
export const CANONICAL_WORKGROUP = CANONICAL_LANES;

/**
 * WGSL statements that run lane `lane`'s chunks of terms j in [0, n) in v1's order: `addTerm(j)`
 * is the statement adding term j (a u32 expression named by the argument) to the lane's
 * accumulator, e.g. `acc = acc + x(j) * x(j);`.
 */
export function canonicalLaneLoopWgsl(lane: string, n: string, addTerm: (j: string) => string): string {
  const step = CANONICAL_LANES * CANONICAL_CHUNK;
  return `for (var cBase = ${lane} * ${CANONICAL_CHUNK}u; cBase < ${n}; cBase = cBase + ${step}u) {
    let cEnd = min(cBase + ${CANONICAL_CHUNK}u, ${n});
    for (var cj = cBase; cj < cEnd; cj = cj + 1u) { ${addTerm('cj')} }
  }`;
}

/**
 * WGSL statements (in uniform control flow: every invocation of the workgroup runs them) that
 * store `value`, this lane's sum, in the workgroup array `sums` (array<f32, 64>) and run v1's
 * butterfly; afterwards `sums[0]` holds the total for every invocation.
 */
export function canonicalButterflyWgsl(sums: string, lane: string, value: string): string {
  return `${sums}[${lane}] = ${value};
  for (var cm = ${CANONICAL_LANES / 2}u; cm > 0u; cm = cm >> 1u) {
    workgroupBarrier();
    if (${lane} < cm) { ${sums}[${lane}] = ${sums}[${lane}] + ${sums}[${lane} + cm]; }
  }
  workgroupBarrier();`;
}

/**
 * v1 in one invocation whose terms come one at a time in index order (a softmax's p_j as it
 * computes them, a head's squares): term j goes to lane (j / 8) % 64, so each lane still adds
 * its chunks in order. `lanes` is a function-scope `var lanes: array<f32, 64>;` (zeroed by
 * its declaration); this is the statement adding `term`, term j's fp32 value.
 */
export function canonicalSerialAddWgsl(lanes: string, j: string, term: string): string {
  const lane = `(${j} >> ${Math.log2(CANONICAL_CHUNK)}u) & ${CANONICAL_LANES - 1}u`;
  return `${lanes}[${lane}] = ${lanes}[${lane}] + ${term};`;
}

/** v1's butterfly over one invocation's `lanes` (canonicalSerialAddWgsl's): statements after which `lanes[0]` is the total. */
export function canonicalSerialButterflyWgsl(lanes: string): string {
  return `for (var cm = ${CANONICAL_LANES / 2}u; cm > 0u; cm = cm >> 1u) {
    for (var cl = 0u; cl < cm; cl = cl + 1u) { ${lanes}[cl] = ${lanes}[cl] + ${lanes}[cl + cm]; }
  }`;
}
