// The run view's table: one row per sub-layer step with both runs' traffic and the stream
// difference at that step, in forward order; the exit row gathers the exit collectives and
// both exit diffs.
import type { RunReport } from './runComparison.ts';
import { compareSteps, EXIT_STEP } from './stepKey.ts';
import type { StepDiff } from './streamDiff.ts';
import type { StepTraffic } from './stepTraffic.ts';

export interface StepRow {
  step: string;
  a: StepTraffic | null;
  b: StepTraffic | null;
  diffs: StepDiff[];
}

export function stepTable(report: RunReport): StepRow[] {
  const isExit = (d: StepDiff): boolean => d.step.startsWith(`${EXIT_STEP}:`);
  const keys = new Set<string>([
    ...report.a.traffic.map((t) => t.step),
    ...report.b.traffic.map((t) => t.step),
    ...report.diffs.map((d) => (isExit(d) ? EXIT_STEP : d.step)),
  ]);
  // forward order: a PLE step has no traffic, so it is met only among the diffs
  const steps = [...keys].sort(compareSteps);
  return steps.map((step) => ({
    step,
    a: report.a.traffic.find((t) => t.step === step) ?? null,
    b: report.b.traffic.find((t) => t.step === step) ?? null,
    diffs: report.diffs.filter((d) => (step === EXIT_STEP ? isExit(d) : d.step === step)),
  }));
}
