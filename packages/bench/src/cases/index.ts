// @hcsp/bench/cases: the case graphs every backend is compared on (the cross-backend suites,
// the float64 checks and the GPU check): one op case per declared op shape, the sub-layer
// cases, and the hand-worked and full-dimension cases.
export * from './canonicalAttnMoeCases.ts';
export * from './gdnPleCanonicalCases.ts';
export * from './hcFullDimCase.ts';
export * from './hfEagerCases.ts';
export * from './layerCases.ts';
export * from './moeFp8Cases.ts';
export * from './opCases.ts';
