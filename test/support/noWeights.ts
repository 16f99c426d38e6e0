import type { WeightSource } from '@hcsp/core';

/** A weight source with no tensors, for graphs that read none (single ops, device tests). */
export const NO_WEIGHTS: WeightSource = {
  has: () => false,
  info: (name) => {
    throw new Error(`test: no weight '${name}'`);
  },
  read: async (name) => {
    throw new Error(`test: no weight '${name}'`);
  },
};
