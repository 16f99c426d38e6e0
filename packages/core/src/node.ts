// The Node-only part of @hcsp/core (file I/O): kept out of the main entry so the browser
// bundle (the WebGPU page, the dev page) never pulls in node:fs.
export * from './io/safetensorsFile.ts';
export * from './model/safetensorsWeights.ts';
export * from './config/hfConfig.ts';
export * from './model/hfCheckpoint.ts';
export * from './model/checkpointProblem.ts';
export * from './io/fileErrors.ts';
export * from './io/jsonFile.ts';
