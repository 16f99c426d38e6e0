// @hcsp/core/xcheck: comparing runs, for the tools that compare (the CLI's `xcheck`, the dev
// page's live xcheck, the GPU check, the cross-backend suites): the run and tensor
// differences, the float64 attribution's verdicts, the report's records and the orchestration
// of a pair of sides.
export { beyondTolerance, describeDifferences, diffRuns } from './compareRuns.ts';
export type { RoutingDifference } from './flipDiff.ts';
export { diffNamed, namedValueIds } from './namedValues.ts';
export { routingText } from './routingDiff.ts';
export { type AlignedTensor, diffTensors } from './tensorDiff.ts';
export { attributionText, pairVerdict, tensorGroup, ulpText } from './verdict.ts';
export { maxRowUlp, nonFiniteCount, overGate, tensorPlace, type XcheckPair, type XcheckReport, type XcheckRun, type XcheckTensor } from './xcheckReport.ts';
export { runNamed, runXcheckPlan, xcheckPair, xcheckRun, type XcheckSide } from './xcheckRuns.ts';
