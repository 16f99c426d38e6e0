// NaN and Inf in tensors read from files (inputs, checkpoint weights): counted, so the CLI
// can warn (or refuse, with --reject-nonfinite) instead of letting them pass silently.
import type {
  Fp8Format,
  Fp8WeightLookup,
  Fp8WeightParts,
  PlannedReadFindings,
  Tensor,
  WeightFilePlan,
  WeightInfo,
  WeightSlice,
  WeightSource,
} from '@hcsp/core';

export interface NonFiniteCount {
  nan: number;
  inf: number;
}

/** NaN and +-Inf elements of `t`, read from the bits (bf16/fp8 are stored as integers). */
export function countNonFinite(t: Tensor): NonFiniteCount {
  const c = { nan: 0, inf: 0 };
  const d = t.data;
  switch (t.dtype) {
    case 'bf16':
      // exponent all ones: Inf when the mantissa is 0, else NaN
      for (let i = 0; i < d.length; i++) if ((d[i] & 0x7f80) === 0x7f80) (d[i] & 0x7f) === 0 ? c.inf++ : c.nan++;
      break;
    case 'f32':
      for (let i = 0; i < d.length; i++) if (!Number.isFinite(d[i])) Number.isNaN(d[i]) ? c.nan++ : c.inf++;
      break;
    case 'fp8e4m3fn':
      // no Inf; NaN is S.1111.111
      for (let i = 0; i < d.length; i++) if ((d[i] & 0x7f) === 0x7f) c.nan++;
      break;
    case 'fp8e4m3fnuz':
      // no Inf; the one NaN is 0x80 ("negative zero")
      for (let i = 0; i < d.length; i++) if (d[i] === 0x80) c.nan++;
      break;
    case 'i32':
      break;
  }
  return c;
}

export function describeNonFinite(name: string, c: NonFiniteCount): string {
  const parts = [c.nan > 0 ? `${c.nan} NaN` : '', c.inf > 0 ? `${c.inf} Inf` : ''].filter(Boolean);
  return `tensor '${name}' holds ${parts.join(' and ')}`;
}

/**
 * A weight source that counts NaN/Inf in what the ranks read: by name, over the distinct
 * slices read (a slice read by several ranks counts once). With `reject`, the first one
 * fails the read.
 */
export class NonFiniteWatch implements WeightSource, Fp8WeightLookup {
  private readonly bySlice = new Map<string, { name: string; count: NonFiniteCount }>();

  constructor(
    private readonly inner: WeightSource & Fp8WeightLookup,
    private readonly label: string,
    private readonly reject: boolean,
  ) {}

  has(name: string): boolean {
    return this.inner.has(name);
  }

  info(name: string): WeightInfo {
    return this.inner.info(name);
  }

  /** the inner source's FP8 weights, read through this watch like any other tensor */
  fp8PerChannel(name: string, format?: Fp8Format): Fp8WeightParts | null {
    return this.inner.fp8PerChannel?.(name, format) ?? null;
  }

  async read(name: string, slice?: WeightSlice): Promise<Tensor> {
    const t = await this.inner.read(name, slice);
    this.check(name, slice, countNonFinite(t));
    return t;
  }

  /** the inner source's plan: a native loader reads the bytes and reports what it counted (plannedRead) */
  filePlan(name: string, slice?: WeightSlice): WeightFilePlan | null {
    return this.inner.filePlan?.(name, slice) ?? null;
  }

  /** a loader's own read of filePlan(name, slice), with the NaN/Inf it counted: checked as read() checks */
  plannedRead(name: string, slice: WeightSlice | undefined, found: PlannedReadFindings): void {
    this.check(name, slice, { nan: found.nan, inf: found.inf });
    this.inner.plannedRead?.(name, slice, found);
  }

  private check(name: string, slice: WeightSlice | undefined, count: NonFiniteCount): void {
    if (count.nan + count.inf === 0) return;
    if (this.reject)
      throw new Error(`${this.label}: ${describeNonFinite(name, count)}${slice ? ' (in the slice one rank reads)' : ''}; refused by --reject-nonfinite`);
    this.bySlice.set(`${name}\0${JSON.stringify(slice ?? null)}`, { name, count });
  }

  /** Names holding NaN/Inf, with their counts, in the order first read. */
  found(): Map<string, NonFiniteCount> {
    const out = new Map<string, NonFiniteCount>();
    for (const { name, count } of this.bySlice.values()) {
      const c = out.get(name) ?? { nan: 0, inf: 0 };
      out.set(name, { nan: c.nan + count.nan, inf: c.inf + count.inf });
    }
    return out;
  }
}
