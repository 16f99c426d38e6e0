// The shape of xcheck's verdict on a pair of runs (verdict.ts computes it; the report carries it).
import type { RoutingDifference } from './flipDiff.ts';

export interface VerdictTensor {
  name: string;
  /** the tensor's kind (its name without `layers.{i}.` and a rank suffix) and what computes it */
  kind: string;
  op: string;
  /** row-scaled ulp distance between the sides (null: not a float value) */
  rowUlp: number | null;
  /** each side's own row-scaled ulp error against float64 on this tensor (null: not evaluated) */
  floor: { a: number; b: number } | null;
  /** the first differing element (row among the T rows, column) */
  at: { row: number; col: number } | null;
}

export interface PairVerdict {
  /** identical: no tensor differs; rounding: every difference within the rule (or after a flip); beyond: see `beyond`; unjudged: no float64 evaluation */
  kind: 'identical' | 'rounding' | 'beyond' | 'unjudged';
  tensors: number;
  differingTensors: number;
  /** the first differing tensor in graph order */
  first: VerdictTensor | null;
  /** the largest step up of the running largest row-scaled distance (graph order), after the first difference */
  growth: (VerdictTensor & { from: number }) | null;
  /** the first tensor over BEYOND_FACTOR times the closer side's float64 error and not after a flip (or holding NaN/Inf) */
  beyond: VerdictTensor | null;
  /** each side's largest own error against float64 over the pair's tensors: the noise floor of the run */
  noiseFloor: { a: number; b: number } | null;
  routing: RoutingDifference[];
  selection: RoutingDifference[];
  /** the side farther from float64: on most differing elements, and with the single largest error */
  attribution: {
    byCount: { a: number; b: number; side: 'a' | 'b' | 'tie' };
    byMagnitude: { a: number; b: number; side: 'a' | 'b' | 'tie'; tensor: string };
  } | null;
  line: string;
}
