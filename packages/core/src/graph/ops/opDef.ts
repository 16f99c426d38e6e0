import type { DType } from '../../tensor/tensor.ts';
import { ShapeRule, type ValueInfo } from './shapeRules.ts';

// An op is declared once here, in core, with its typed inputs, outputs and attributes
// (as TensorFlow.js declares kernel names in core), its output rule and its precision
// class. Backends implement ops; they never invent them, and never re-derive shapes.
export type AttrKind = 'int' | 'float' | 'bool' | 'string' | 'int[]' | 'json';

/** One attribute: its kind, whether it may be absent, and for strings the values allowed. */
export interface AttrSpec {
  kind: AttrKind;
  optional?: boolean;
  oneOf?: readonly string[];
  /** smallest value an int attribute may take (default: no bound) */
  min?: number;
}

/**
 * What an input port carries: 'weight' (a model parameter or its quantization scales, loaded
 * once and held for the whole run, or a value computed from weights alone) or 'activation'
 * (computed per forward: rows, ids, routing weights, RoPE tables). The memory guard, the
 * FP8 rewrite, the bench and the cost model read this instead of listing weight ports.
 */
export type PortRole = 'weight' | 'activation';

export interface PortDef {
  name: string;
  dtypes: readonly DType[];
  optional?: boolean;
  /** an input's role; absent: 'activation' */
  role?: PortRole;
}

/** Shape and dtype of a value, as declarations and shape rules see it. */

/**
 * Which tolerance applies where a backend's accumulation order departs from the
 * reference (Backend.precision): 'data' ops move bits (gathers, shards, copies, gathers
 * of rows) and are bit-exact on every backend, always. 'sequence' ops carry state or sums
 * along the tokens (the GatedDeltaNet recurrence, causal attention): a production kernel
 * (chunked, tiled) reorders those sums, which no per-row reduction does.
 */
export type OpClass = 'gemm' | 'reduction' | 'sequence' | 'elementwise' | 'quant' | 'data';
export const TOLERANCE_CLASSES = ['gemm', 'reduction', 'sequence', 'elementwise', 'quant'] as const;
export type ToleranceClass = (typeof TOLERANCE_CLASSES)[number];

/**
 * Where an op's time is counted in the cost model's breakdown (`hcsp model`): 'gemm' (a
 * plain GEMM against a weight matrix: the projections, router, LM head; the bench's and the
 * host device's GEMM accounting also key on it), 'attention' (softmax and linear attention:
 * QSA, GatedDeltaNet), 'moe' (routing, the routed experts, their combine), 'hc' (the HC
 * streams' kernels), 'collective', 'other' (embedding, PLE, quant, row moves, heads). A GEMM
 * inside an HC mix is counted as HC by its scope (costModel.ts opClassOf).
 */
export const COST_FAMILIES = ['hc', 'gemm', 'attention', 'moe', 'collective', 'other'] as const;
export type CostFamily = (typeof COST_FAMILIES)[number];

/**
 * How a collective's per-rank output relates to its per-rank input: 'replicate' (same
 * shape: all-reduce), 'scatterRows' (rows / tp: reduce-scatter), 'gatherRows' (rows * tp:
 * all-gather). A backend's communicator maps these onto its engine's calls.
 */
export type CollectiveLayout = 'replicate' | 'scatterRows' | 'gatherRows';

export interface OpDef {
  readonly name: string;
  /** what the op computes and how it rounds, in one or two sentences */
  readonly doc: string;
  readonly inputs: readonly PortDef[];
  readonly outputs: readonly PortDef[];
  readonly attrs: Readonly<Record<string, AttrSpec | AttrKind>>;
  readonly opClass: OpClass;
  readonly costFamily: CostFamily;
  /**
   * The output rule: each output's shape and dtype (null for an output the op does not
   * produce with these inputs) from the inputs' (null = absent optional port) and the
   * validated attributes; throws naming the mismatch when the inputs do not fit. A
   * collective sees one rank's ports and gets `tp` in attrs.
   */
  readonly shape: (inputs: readonly (ValueInfo | null)[], attrs: Readonly<Record<string, unknown>>) => (ValueInfo | null)[];
  /** a collective node spans every rank: it takes one input list per rank */
  readonly collective?: CollectiveLayout;
  /**
   * computed on the host with core's CPU kernel (integer work no shading language has
   * natively, e.g. 64-bit hashing), inputs read back and outputs uploaded, by every device
   * that has no kernel of its own for it (DeviceOps.runsHostOp)
   */
  readonly host?: boolean;
  /**
   * a host op computing out[t] = table[ids[t]]: input 0 is the i32 ids, input `table` a weight
   * whose rows may be read on demand (WeightRef.gather 'rows'): the loop reads only the rows
   * the ids name and runs the kernel on them with the ids renumbered
   */
  readonly gathersRows?: { table: number };
}

// The declarations' notation: port and attribute constructors, so each declaration writes
// only what is particular to its op (the objects they build are the plain PortDef/AttrSpec).
const BF16: readonly DType[] = ['bf16'];
/** the two FP8 encodings a quantized port may carry (the op's `format` attribute picks one) */
export const FP8: readonly DType[] = ['fp8e4m3fn', 'fp8e4m3fnuz'];
/** the dtypes a row-moving op accepts */
export const ROW_DTYPES: readonly DType[] = ['bf16', 'f32'];
export const ANY_DTYPE: readonly DType[] = ['bf16', 'f32', 'i32'];

/** An activation port of `dtypes`. */
export function port(name: string, dtypes: readonly DType[]): PortDef {
  return { name, dtypes };
}
export const bf16 = (name: string): PortDef => port(name, BF16);
export const f32 = (name: string): PortDef => port(name, ['f32']);
export const i32 = (name: string): PortDef => port(name, ['i32']);
/** A weight port (bf16 unless `dtypes` says otherwise). */
export function weight(name: string, dtypes: readonly DType[] = BF16): PortDef {
  return { name, dtypes, role: 'weight' };
}
export function optional(p: PortDef): PortDef {
  return { ...p, optional: true };
}
/** An int attribute of at least `min`. */
export function intMin(min: number): AttrSpec {
  return { kind: 'int', min };
}
/** A string attribute taking one of `values`. */
export function oneOf(values: readonly string[]): AttrSpec {
  return { kind: 'string', oneOf: values };
}

type OutputRule = OpDef['shape'];
/** A declaration as written: its output rule also gets a ShapeRule named after the op. */
export type OpDecl = Omit<OpDef, 'shape'> & {
  readonly shape: (inputs: Parameters<OutputRule>[0], attrs: Parameters<OutputRule>[1], r: ShapeRule) => ReturnType<OutputRule>;
};

export function defineOp<const D extends OpDecl>(def: D): Omit<D, 'shape'> & { readonly shape: OutputRule } {
  return { ...def, shape: (inputs, attrs) => def.shape(inputs, attrs, new ShapeRule(def.name)) };
}

/** The input ports of `def` with role `role`, by index, in port order. */
export function portsWithRole(def: OpDef, role: PortRole): number[] {
  return def.inputs.flatMap((p, i) => ((p.role ?? 'activation') === role ? [i] : []));
}

/** The port of a GEMM's weight matrix: its first weight port (those after it are the matrix's scales). */
export function matrixWeightPort(def: OpDef): number {
  const [port] = portsWithRole(def, 'weight');
  if (port === undefined) throw new Error(`op ${def.name}: no weight port`);
  return port;
}

/** The index of input port `name` of `def` (throws naming the op when it has none). */
export function inputPort(def: OpDef, name: string): number {
  const i = def.inputs.findIndex((p) => p.name === name);
  if (i < 0) throw new Error(`op ${def.name}: no input port '${name}' (declared: ${def.inputs.map((p) => p.name).join(', ')})`);
  return i;
}

function specOf(s: AttrSpec | AttrKind): AttrSpec {
  return typeof s === 'string' ? { kind: s } : s;
}

function checkAttr(op: string, name: string, spec: AttrSpec, v: unknown): void {
  const bad = (want: string): Error => new Error(`op ${op}: attribute '${name}' must be ${want}, got ${JSON.stringify(v)}`);
  switch (spec.kind) {
    case 'int':
      if (!Number.isSafeInteger(v)) throw bad('an integer');
      if (spec.min !== undefined && (v as number) < spec.min) throw bad(`an integer >= ${spec.min}`);
      return;
    case 'float':
      if (typeof v !== 'number' || !Number.isFinite(v)) throw bad('a finite number');
      return;
    case 'bool':
      if (typeof v !== 'boolean') throw bad('true or false');
      return;
    case 'string':
      if (typeof v !== 'string') throw bad('a string');
      if (spec.oneOf && !spec.oneOf.includes(v)) throw bad(`one of ${spec.oneOf.join(', ')}`);
      return;
    case 'int[]':
      if (!Array.isArray(v) || !v.every((x) => Number.isSafeInteger(x))) throw bad('an array of integers');
      return;
    case 'json':
      return;
  }
}

/** Checks a node's attributes against the declaration: every required one present and well-typed, none unknown. */
export function validateAttrs(def: OpDef, attrs: Readonly<Record<string, unknown>>): void {
  for (const [name, s] of Object.entries(def.attrs)) {
    const spec = specOf(s);
    const v = attrs[name];
    if (v === undefined) {
      if (!spec.optional) throw new Error(`op ${def.name}: attribute '${name}' is required`);
      continue;
    }
    checkAttr(def.name, name, spec, v);
  }
  for (const name of Object.keys(attrs)) {
    if (!Object.hasOwn(def.attrs, name))
      throw new Error(`op ${def.name}: unknown attribute '${name}' (declared: ${Object.keys(def.attrs).join(', ') || 'none'})`);
  }
}
