// Synthetic bf16 values at memcpy speed: tiled from one seeded pool instead of drawn one by one.
import { numel, Rng, SyntheticWeightSource, type Tensor, type WeightInfo, type WeightSlice, type WeightSource, type WeightSpec } from '@hcsp/core';

// Fast synthetic weights for the prefill: core's SyntheticWeightSource draws every value with
// Box-Muller (about 11 M values/s here: ~4 minutes for the HC-only stack's 2.6 G values). Each
// normal bf16 tensor is instead tiled from one seeded pool of N(0, std) bf16 values per std
// (2 Mi values, drawn by core's Rng), from an offset hashed from its name: the same shapes and
// the same value distribution, made at memcpy speed, slices made directly (nothing cached).

/** values in each pool */
export const TILED_WEIGHT_POOL = 1 << 21;

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class TiledWeightSource implements WeightSource {
  private readonly specs = new Map<string, WeightSpec>();
  private readonly pools = new Map<number, Uint16Array>();
  private readonly exact: SyntheticWeightSource;

  constructor(
    specs: readonly WeightSpec[],
    readonly seed: number,
  ) {
    for (const s of specs) this.specs.set(s.name, s);
    // anything not a zero-mean normal bf16 tensor (none in flash-next's HC-only stack) is core's
    this.exact = new SyntheticWeightSource(specs, seed);
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  info(name: string): WeightInfo {
    return this.exact.info(name);
  }

  private pool(std: number): Uint16Array {
    let p = this.pools.get(std);
    if (!p) {
      p = new Rng(fnv1a(`${this.seed}:pool:${std}`)).fillBf16Normal(TILED_WEIGHT_POOL, std);
      this.pools.set(std, p);
    }
    return p;
  }

  async read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`tiled weights: no tensor named '${name}'`);
    const init = spec.init;
    if (spec.dtype !== 'bf16' || init.kind !== 'normal' || (init.mean ?? 0) !== 0) return this.exact.read(name, slice);
    const pool = this.pool(init.std);
    const offset = fnv1a(name) % TILED_WEIGHT_POOL;
    const shape = [...spec.shape];
    const axis = slice?.axis ?? 0;
    const ranges = slice?.ranges ?? [[0, shape[0]] as [number, number]];
    const dim = shape[axis];
    const outer = numel(shape.slice(0, axis));
    const inner = numel(shape.slice(axis + 1));
    const kept = ranges.reduce((a, [s, e]) => a + e - s, 0);
    shape[axis] = kept;
    const out = new Uint16Array(outer * kept * inner);
    let o = 0;
    for (let i = 0; i < outer; i++) {
      for (const [s, e] of ranges) {
        // flat elements [from, from + len) of the whole tensor, from the pool with wrap-around
        let from = (i * dim + s) * inner;
        let len = (e - s) * inner;
        while (len > 0) {
          const at = (offset + from) % TILED_WEIGHT_POOL;
          const n = Math.min(len, TILED_WEIGHT_POOL - at);
          out.set(pool.subarray(at, at + n), o);
          o += n;
          from += n;
          len -= n;
        }
      }
    }
    return { dtype: 'bf16', shape, data: out };
  }
}

/** N(0, 1) bf16 values tiled from a seeded pool of 2^20 (drawing 168 M values would take ~15 s). */
export function tiledNormal(count: number, seed: number): Uint16Array {
  const pool = new Rng(seed).fillBf16Normal(Math.min(count, 1 << 20), 1);
  const out = new Uint16Array(count);
  // each tile starts at a different pool offset, so rows are not copies of each other
  let o = 0;
  let shift = 0;
  while (o < count) {
    const at = (shift * 7919) % pool.length;
    const n = Math.min(count - o, pool.length - at);
    out.set(pool.subarray(at, at + n), o);
    o += n;
    shift++;
  }
  return out;
}
