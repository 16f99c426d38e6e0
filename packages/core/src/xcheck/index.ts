export * from './tensorDiff.ts';
export * from './xcheckReport.ts';
export * from './namedValues.ts';
export * from './routingDiff.ts';
