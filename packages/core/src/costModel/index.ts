// @hcsp/core/cost-model: the cost model for the tools that forecast (the CLI's `model`, the GPU
// check, the engine bench): device descriptions, the priced decoder graph, SP off vs on, the
// calibration and the sweep. Its own subpath: no backend needs it.
export { nodeSeconds, OP_CLASS_TITLES, type PricedGraph, priceGraph } from './costModel.ts';
export { COST_FAMILIES } from '../graph/ops/opDef.ts';
export { BUILT_IN_DEVICES, builtInDevice, type Device, type DeviceFigureName, type Efficiency, parseDevice } from './device.ts';
export { hcspScratchPeak, type KernelsMode } from './engines/hcspKernels.ts';
export {
  buildCostGraph,
  calibration,
  type Calibration,
  efficiencyFor,
  engineOptions,
  forecast,
  type Forecast,
  type ForecastInput,
  type GraphVariant,
  type SideCost,
  sweep,
  SWEEP_ISL,
  SWEEP_TP,
  type SweepRow,
} from './forecast.ts';
export { ALL_PHYSICS_TERMS, libraryTileEfficiency, PHYSICS_TERMS, type PhysicsTerm } from './physics.ts';
export type { OpCost } from './pricing/types.ts';
