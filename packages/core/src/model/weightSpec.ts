// The checkpoint tensors a layer declares: Hugging Face name, full (unsharded) shape, dtype,
// and how the seeded synthetic-weight generator fills it when no checkpoint is loaded.
export type WeightInit = { kind: 'normal'; std: number; mean?: number } | { kind: 'constant'; value: number } | { kind: 'arange'; start: number; step: number };

export interface WeightSpec {
  name: string;
  shape: number[];
  dtype: 'bf16' | 'f32';
  init: WeightInit;
}
