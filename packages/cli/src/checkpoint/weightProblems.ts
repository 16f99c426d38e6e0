// A checkpoint checked against the tensors a configuration needs. One for another config has
// hundreds of problems: the message gives the count by kind and the first few, and the
// full list goes to a file the message names (issue: one 17-35 KB line).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { coreDtypeOf, sameShape, shapeStr } from '@hcsp/core';
import type { ExpectedTensor, SafetensorsWeightSource } from '@hcsp/core/node';

/** How many problems the message itself lists. */
export const PROBLEMS_SHOWN = 3;

type Kind = 'missing' | 'wrong dtype' | 'wrong shape';

function problemsOf(source: SafetensorsWeightSource, specs: readonly ExpectedTensor[]): { kind: Kind; text: string }[] {
  const out: { kind: Kind; text: string }[] = [];
  for (const spec of specs) {
    if (!source.has(spec.name)) {
      out.push({ kind: 'missing', text: `missing tensor '${spec.name}'` });
      continue;
    }
    const e = source.entry(spec.name);
    const dtype = coreDtypeOf(e.dtype);
    if (dtype !== spec.dtype) out.push({ kind: 'wrong dtype', text: `tensor '${spec.name}': wrong dtype: expected ${spec.dtype}, got ${dtype ?? e.dtype}` });
    if (!sameShape(e.shape, spec.shape)) out.push({ kind: 'wrong shape', text: `tensor '${spec.name}': wrong shape: expected ${shapeStr(spec.shape)}, got ${shapeStr(e.shape)}` });
  }
  return out;
}

/** Throws a short summary when `source` lacks or mismatches any of `specs`; `what` names the expectation. */
export function checkCheckpoint(source: SafetensorsWeightSource, specs: readonly ExpectedTensor[], label: string, what: string): void {
  const problems = problemsOf(source, specs);
  if (problems.length === 0) return;
  const counts = new Map<Kind, number>();
  for (const p of problems) counts.set(p.kind, (counts.get(p.kind) ?? 0) + 1);
  const byKind = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  const head = `${label}: does not fit ${what}: ${problems.length} tensor problem${problems.length > 1 ? 's' : ''} (${byKind})`;
  if (problems.length <= PROBLEMS_SHOWN) throw new Error(`${head}: ${problems.map((p) => p.text).join('; ')}`);
  const file = join(mkdtempSync(join(tmpdir(), 'hcsp-weight-problems-')), 'problems.txt');
  writeFileSync(file, `${head}\n${problems.map((p) => p.text).join('\n')}\n`, { flag: 'wx' });
  throw new Error(`${head}, first ${PROBLEMS_SHOWN}: ${problems.slice(0, PROBLEMS_SHOWN).map((p) => p.text).join('; ')}; the full list is in ${file}`);
}
