import type { Tensor } from '../tensor/tensor.ts';

/** Where full (unsharded) checkpoint tensors come from: synthetic, or a .safetensors file. */
export interface WeightSource {
  /** the tensor, or a clear error naming it when it is missing */
  get(name: string): Tensor;
  has(name: string): boolean;
}
