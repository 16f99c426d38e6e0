// The float64 ("exact") evaluation: its kernel tables, the device GraphSession runs them on, and the exact RoPE tables.
export { EXACT_COLLECTIVE_KERNELS, EXACT_KERNELS, exactCollectiveKernel, exactKernel } from './exactKernels.ts';
export type { ExactCollectiveKernel, ExactKernel, ExactKernelTable, ExactTensor } from './exactTensor.ts';
export { EXACT_DEVICE, evaluateExact, widenTensor, type EvaluateExactOptions } from './evaluateExact.ts';
export { ropeTablesExact } from './attentionExact.ts';
