export * from './tensorDiff.ts';
export * from './xcheckReport.ts';
export * from './namedValues.ts';
export * from './routingDiff.ts';
export * from './flipDiff.ts';
export * from './verdict.ts';
export * from './compareRuns.ts';
export * from './xcheckRuns.ts';
