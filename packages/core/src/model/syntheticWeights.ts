import { f32ToBf16 } from '../numerics/bf16.ts';
import { Rng } from '../numerics/rng.ts';
import { numel, type Tensor } from '../tensor/tensor.ts';
import type { WeightRef, WeightSlice } from '../graph/graph.ts';
import { resolveWeightInMemory } from './resolveWeight.ts';
import { sliceTensor } from '../tensor/axisSlice.ts';
import type { WeightInfo, WeightSource } from './weightSource.ts';
import type { WeightSpec } from './weightSpec.ts';

/** FNV-1a over the UTF-16 code units: a stable 32-bit hash of a tensor name. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Seeded synthetic checkpoint: each tensor is generated on demand from (seed, name) alone,
 * so any one tensor can be made without the others, identically in Node and in a browser.
 * Values are drawn in fp64 and rounded to the tensor's dtype (bf16 by RNE).
 */
export class SyntheticWeightSource implements WeightSource {
  private readonly specs = new Map<string, WeightSpec>();
  private readonly cache = new Map<string, Tensor>();

  constructor(
    specs: readonly WeightSpec[],
    readonly seed: number,
  ) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`weight seed must be a non-negative integer, got ${seed}`);
    for (const s of specs) {
      if (this.specs.has(s.name)) throw new Error(`synthetic weights: tensor '${s.name}' declared twice`);
      this.specs.set(s.name, s);
    }
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  names(): string[] {
    return [...this.specs.keys()];
  }

  info(name: string): WeightInfo {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`synthetic weights: no tensor named '${name}'`);
    return { shape: spec.shape, dtype: spec.dtype };
  }

  /** Generated whole (the stream is per tensor), then sliced. */
  async read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const t = this.tensor(name);
    return slice ? sliceTensor(t, slice) : t;
  }

  /** A weight ref's tensor, synchronously (for math references in tests). */
  resolve(ref: WeightRef): Tensor {
    return resolveWeightInMemory((n) => this.tensor(n), ref);
  }

  /** The whole tensor, synchronously (generation needs no I/O). */
  tensor(name: string): Tensor {
    const hit = this.cache.get(name);
    if (hit) return hit;
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`synthetic weights: no tensor named '${name}'`);
    // The seed enters through the hashed text, so every (seed, name) pair has its own stream.
    const t = generate(spec, new Rng(fnv1a(`${this.seed}:${name}`)));
    this.cache.set(name, t);
    return t;
  }
}

function generate(spec: WeightSpec, rng: Rng): Tensor {
  const n = numel(spec.shape);
  const values = new Float64Array(n);
  const init = spec.init;
  for (let i = 0; i < n; i++) {
    switch (init.kind) {
      case 'normal':
        values[i] = (init.mean ?? 0) + init.std * rng.normal();
        break;
      case 'constant':
        values[i] = init.value;
        break;
      case 'arange':
        values[i] = init.start + init.step * i;
        break;
    }
  }
  if (spec.dtype === 'f32') return { dtype: 'f32', shape: [...spec.shape], data: Float32Array.from(values) };
  const data = new Uint16Array(n);
  for (let i = 0; i < n; i++) data[i] = f32ToBf16(values[i]);
  return { dtype: 'bf16', shape: [...spec.shape], data };
}
