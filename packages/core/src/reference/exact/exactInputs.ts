import type { ExactTensor } from './exactTensor.ts';

// The inputs of the float64 kernels as their kernels read them. Nothing here checks: a kernel is
// called through exactKernel / exactCollectiveKernel, which have checked the inputs against the
// op's declaration; an exact value of a floating dtype holds float64 data, an i32 one int32
// (exactTensor.ts).

/** An exact value of a floating dtype. */
export type F64Tensor = ExactTensor & { data: Float64Array };
/** An exact i32 value. */
export type I32Tensor = ExactTensor & { data: Int32Array };
