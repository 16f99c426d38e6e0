// The Node-only part of @hcsp/core (file I/O): kept out of the main entry so the browser
// bundle (the WebGPU page, the dev page) never pulls in node:fs. Listed by name like index.ts.
export { hfTextConfigJson, resolveModelConfig } from './config/hfConfig.ts';
export { errnoReason, fileKind, lstatOrNull } from './io/fileErrors.ts';
export { JSON_LIMITS, JsonInputError, readJsonInput } from './io/jsonFile.ts';
export { openSafetensorsFile, writeSafetensorsFile } from './io/safetensorsFile.ts';
export { type CheckpointProblem, type CheckpointProblemKind, formatCheckpointProblem } from './model/checkpointProblem.ts';
export { CheckpointProblemsError, CheckpointWeightSource, openCheckpoint, unusedTensorsWarning } from './model/hfCheckpoint.ts';
export { type ExpectedTensor, SafetensorsWeightSource } from './model/safetensorsWeights.ts';
