import type { CollectiveLayout, OpDef } from './opDef.ts';
import * as attentionOps from './attentionOps.ts';
import * as basicOps from './basicOps.ts';
import * as gdnOps from './gdnOps.ts';
import * as hcOps from './hcOps.ts';
import * as headOps from './headOps.ts';
import * as moeOps from './moeOps.ts';
import * as pleOps from './pleOps.ts';
import * as quantOps from './quantOps.ts';
import * as spOps from './spOps.ts';

// The op vocabulary: every op declared in the family files above. Declaring a new op in
// one of them is enough to register it (and every backend's coverage test then asks for
// its kernel); a new family file is added here once.
const FAMILIES = { attentionOps, basicOps, gdnOps, hcOps, headOps, moeOps, pleOps, quantOps, spOps };

type Family = (typeof FAMILIES)[keyof typeof FAMILIES];
type DeclsOf<M> = { [K in keyof M]: M[K] extends OpDef ? M[K] : never }[keyof M];

/** Every declared op, with its literal name and attribute types. */
export type DeclaredOp = Family extends infer M ? (M extends unknown ? DeclsOf<M> : never) : never;
/** The name of a declared op: graph builders and kernel tables are typed by it. */
export type OpName = DeclaredOp['name'];
/** A family of ops: the declaration file they are declared in. */
export type OpFamily = keyof typeof FAMILIES;
/** The names of the ops family `F` declares. */
export type FamilyOpName<F extends OpFamily> = DeclsOf<(typeof FAMILIES)[F]>['name'];
/** A table with one entry per op of family `F`, no more, no less (the cost model's pricing). */
export type FamilyTable<F extends OpFamily, V> = { readonly [N in FamilyOpName<F>]: V };
/** The collectives: the ops whose declaration gives a `collective` layout. */
export type CollectiveOpName = Extract<DeclaredOp, { collective: CollectiveLayout }>['name'];

function isOpDef(v: unknown): v is OpDef {
  return typeof v === 'object' && v !== null && typeof (v as OpDef).name === 'string' && typeof (v as OpDef).shape === 'function';
}

const ALL: readonly OpDef[] = Object.values(FAMILIES).flatMap((m) => Object.values(m).filter(isOpDef));

const BY_NAME = new Map<string, OpDef>();
for (const d of ALL) {
  if (BY_NAME.has(d.name)) throw new Error(`op '${d.name}' is declared twice`);
  BY_NAME.set(d.name, d);
}

/** The declaration, or undefined for a name core does not declare. */
export function findOpDef(name: string): OpDef | undefined {
  return BY_NAME.get(name);
}

export function getOpDef(name: string): OpDef {
  const def = BY_NAME.get(name);
  if (!def) throw new Error(`unknown op '${name}'`);
  return def;
}

/** Whether `op` is a declared collective (its declaration has a `collective` layout). */
export function isCollectiveOp(op: string): op is CollectiveOpName {
  return BY_NAME.get(op)?.collective !== undefined;
}

export function allOpDefs(): readonly OpDef[] {
  return ALL;
}
