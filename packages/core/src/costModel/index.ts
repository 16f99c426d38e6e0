// The cost model (issue 15): device descriptions, per-op pricing, the priced decoder graph,
// SP off vs on, the calibration and the sweep.
export * from './device.ts';
export * from './costModel.ts';
export * from './forecast.ts';
export { PRICING_FAMILIES, priceNode, unpricedOps, qsaKept, qsaSums, type OpCost, type PricingContext, type PriceFn } from './pricing/index.ts';
export * from './physics.ts';
export { HCSP_KERNELS, hcspScratchPeak, KERNELS_MODES, type HcspKernel, type HcspKernelFn, type KernelsMode } from './engines/hcspKernels.ts';
