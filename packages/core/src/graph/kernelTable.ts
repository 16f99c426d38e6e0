import type { OpDef } from './ops/opDef.ts';
import { allOpDefs, findOpDef, type OpName } from './ops/registry.ts';

/** A backend's kernels for some of the declared ops (one family file's share). */
export type KernelsFor<K> = Partial<Record<OpName, K>>;

/**
 * A backend's kernels keyed by the declared ops (TensorFlow.js's registry, without its
 * global singleton): a name core does not declare, or an op given two kernels, is refused
 * when the table is built; a missing kernel fails loudly at lookup, naming the backend.
 */
export class KernelTable<K> {
  private readonly byOp = new Map<string, K>();

  constructor(
    readonly backend: string,
    parts: readonly KernelsFor<K>[],
  ) {
    for (const part of parts) {
      for (const [op, kernel] of Object.entries(part) as [string, K | undefined][]) {
        if (kernel === undefined) continue;
        if (!findOpDef(op)) throw new Error(`${backend} kernels: '${op}' is not an op core declares`);
        if (this.byOp.has(op)) throw new Error(`${backend} kernels: op '${op}' has two kernels`);
        this.byOp.set(op, kernel);
      }
    }
  }

  has(op: string): boolean {
    return this.byOp.has(op);
  }

  get(op: string): K {
    const k = this.byOp.get(op);
    if (k === undefined) throw new Error(`${this.backend}: no kernel for op '${op}'`);
    return k;
  }

  /** Declared ops (those `which` selects) with no kernel here: the coverage test wants none. */
  missing(which: (def: OpDef) => boolean = () => true): string[] {
    return allOpDefs()
      .filter((d) => which(d) && !this.byOp.has(d.name))
      .map((d) => d.name);
  }
}
