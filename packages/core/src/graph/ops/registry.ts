import type { OpDef } from './opDef.ts';
import { BASIC_OPS } from './basicOps.ts';
import { HC_OPS } from './hcOps.ts';
import { SP_OPS } from './spOps.ts';
import { GDN_OPS } from './gdnOps.ts';
import { ATTENTION_OPS } from './attentionOps.ts';
import { MOE_OPS } from './moeOps.ts';
import { PLE_OPS } from './pleOps.ts';
import { QUANT_OPS } from './quantOps.ts';

const ALL: readonly OpDef[] = [...BASIC_OPS, ...HC_OPS, ...SP_OPS, ...GDN_OPS, ...ATTENTION_OPS, ...MOE_OPS, ...PLE_OPS, ...QUANT_OPS];

const BY_NAME = new Map<string, OpDef>(ALL.map((d) => [d.name, d]));

/** The declaration, or undefined for a name core does not declare (a backend's test op). */
export function findOpDef(name: string): OpDef | undefined {
  return BY_NAME.get(name);
}

export function getOpDef(name: string): OpDef {
  const def = BY_NAME.get(name);
  if (!def) throw new Error(`unknown op '${name}'`);
  return def;
}

export function allOpDefs(): readonly OpDef[] {
  return ALL;
}
