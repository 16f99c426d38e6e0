// The values hcsp xcheck compares, by name: the golden-dump values (all T rows; README
// "Golden dumps") and each rank's own values of every sub-layer step (its partial sums and its
// collective's output, DecoderOutputs.rankValues), from a prefill prepared with dump: true.
import type { ValueId } from '../graph/graph.ts';
import type { PreparedPrefill } from '../model/prefill.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { ExactTensor } from '../reference/exact/exactTensor.ts';
import { diffTensors, type AlignedTensor } from './tensorDiff.ts';
import { tensorPlace, type XcheckTensor } from './xcheckReport.ts';

export interface NamedValue {
  name: string;
  id: ValueId;
  /** the first of the T rows the value holds */
  rowStart: number;
}

/** Every named value of a prefill graph (built with dump: true), in graph order of their layers. */
export function namedValues(prepared: PreparedPrefill): NamedValue[] {
  const { dumpValues, rankValues } = prepared.outputs;
  if (Object.keys(dumpValues).length === 0) throw new Error('xcheck: the prefill was prepared without dump: true (no named values)');
  return [
    ...Object.entries(dumpValues).map(([name, id]) => ({ name, id, rowStart: 0 })),
    ...Object.entries(rankValues).map(([name, v]) => ({ name, id: v.id, rowStart: v.rowStart })),
  ];
}

/** The ids a run must keep to read its named values back. */
export function namedValueIds(prepared: PreparedPrefill): ValueId[] {
  return namedValues(prepared).map((v) => v.id);
}

/** A run's named values, read from its results. */
export function collectNamed(prepared: PreparedPrefill, values: ReadonlyMap<ValueId, Tensor>): Map<string, AlignedTensor> {
  const out = new Map<string, AlignedTensor>();
  for (const v of namedValues(prepared)) {
    const t = values.get(v.id);
    if (!t) throw new Error(`xcheck: value '${v.id}' (${v.name}) was not read back`);
    out.set(v.name, { tensor: t, rowStart: v.rowStart });
  }
  return out;
}

/**
 * Every name both runs have, `a` against `b`, in b's order; `exact` (the float64 evaluation of
 * b's graph, by name, with its rows' start) attributes each difference to a side.
 * A name only one side has is listed in `onlyIn`.
 */
export function diffNamed(
  a: ReadonlyMap<string, AlignedTensor>,
  b: ReadonlyMap<string, AlignedTensor>,
  exitLayer: number,
  exact?: ReadonlyMap<string, { tensor: ExactTensor; rowStart: number }>,
  buckets?: number,
): { tensors: XcheckTensor[]; onlyIn: { a: string[]; b: string[] } } {
  const steps = diffNamedSteps(a, b, exitLayer, exact, buckets);
  const tensors: XcheckTensor[] = [];
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return { tensors, onlyIn: step.value };
    tensors.push(step.value);
  }
}

/** diffNamed one tensor at a time (a caller that must stay responsive turns its event loop between them); returns `onlyIn`. */
export function* diffNamedSteps(
  a: ReadonlyMap<string, AlignedTensor>,
  b: ReadonlyMap<string, AlignedTensor>,
  exitLayer: number,
  exact?: ReadonlyMap<string, { tensor: ExactTensor; rowStart: number }>,
  buckets?: number,
): Generator<XcheckTensor, { a: string[]; b: string[] }> {
  for (const [name, tb] of b) {
    const ta = a.get(name);
    if (!ta) continue;
    const d = diffTensors(name, ta, tb, { exact: exact?.get(name) ?? null, buckets });
    yield { name, ...tensorPlace(name, exitLayer), ...d };
  }
  return { a: [...a.keys()].filter((n) => !b.has(n)), b: [...b.keys()].filter((n) => !a.has(n)) };
}
