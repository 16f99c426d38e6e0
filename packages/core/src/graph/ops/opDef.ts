import type { DType } from '../../tensor/tensor.ts';

// An op is declared once here, in core, with its typed inputs, outputs and attributes
// (as TensorFlow.js declares kernel names in core). Backends implement ops; they never
// invent them.
export type AttrKind = 'int' | 'float' | 'bool' | 'string' | 'int[]' | 'json';

export interface PortDef {
  name: string;
  dtypes: readonly DType[];
  optional?: boolean;
}

export interface OpDef {
  readonly name: string;
  /** what the op computes and how it rounds, in one or two sentences */
  readonly doc: string;
  readonly inputs: readonly PortDef[];
  readonly outputs: readonly PortDef[];
  readonly attrs: Readonly<Record<string, AttrKind>>;
  /** a collective node spans every rank: it takes one input list per rank */
  readonly collective?: boolean;
  /**
   * computed on the host by every backend with core's CPU kernel (integer work no GPU API
   * has natively, e.g. 64-bit hashing); device backends read its inputs back and upload
   * its outputs
   */
  readonly host?: boolean;
}

export function defineOp<const D extends OpDef>(def: D): D {
  return def;
}
