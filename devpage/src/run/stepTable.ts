// The run view's table: one row per sub-layer step with both runs' traffic and the stream
// difference at that step; the exit row gathers the exit collectives and both exit diffs.
import type { RunReport } from './runComparison.ts';
import { EXIT_STEP } from './stepKey.ts';
import type { StepDiff } from './streamDiff.ts';
import type { StepTraffic } from './stepTraffic.ts';

export interface StepRow {
  step: string;
  a: StepTraffic | null;
  b: StepTraffic | null;
  diffs: StepDiff[];
}

export function stepTable(report: RunReport): StepRow[] {
  const order: string[] = [];
  const add = (key: string): void => {
    if (!order.includes(key)) order.push(key);
  };
  const isExit = (d: StepDiff): boolean => d.step.startsWith(`${EXIT_STEP}:`);
  report.a.traffic.forEach((t) => add(t.step));
  report.b.traffic.forEach((t) => add(t.step));
  report.diffs.forEach((d) => add(isExit(d) ? EXIT_STEP : d.step));
  // the exit row last, whatever order the steps were met in
  const steps = [...order.filter((k) => k !== EXIT_STEP), ...order.filter((k) => k === EXIT_STEP)];
  return steps.map((step) => ({
    step,
    a: report.a.traffic.find((t) => t.step === step) ?? null,
    b: report.b.traffic.find((t) => t.step === step) ?? null,
    diffs: report.diffs.filter((d) => (step === EXIT_STEP ? isExit(d) : d.step === step)),
  }));
}
