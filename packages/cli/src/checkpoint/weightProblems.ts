// A checkpoint checked against the tensors a configuration needs. One for another config has
// hundreds of problems: the message gives the count by kind and the first few, and the
// full list goes to a file the message names (issue: one 17-35 KB line).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How many problems the message itself lists. */
export const PROBLEMS_SHOWN = 3;

/** The kind of a problem, from the loader's wording (core model/hfCheckpoint.ts). */
function kindOf(text: string): string {
  if (text.startsWith('missing tensor')) return 'missing';
  if (text.includes('wrong dtype')) return 'wrong dtype';
  if (text.startsWith('config/checkpoint mismatch') && text.includes(' needs [')) return 'wrong shape';
  return 'other';
}

/** The loader's problems as one short error; `what` names the expectation. */
export function checkpointProblemsError(problems: readonly string[], label: string, what: string): Error {
  const counts = new Map<string, number>();
  for (const p of problems) counts.set(kindOf(p), (counts.get(kindOf(p)) ?? 0) + 1);
  const byKind = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  const head = `${label}: does not fit ${what}: ${problems.length} tensor problem${problems.length > 1 ? 's' : ''} (${byKind})`;
  if (problems.length <= PROBLEMS_SHOWN) return new Error(`${head}: ${problems.join('; ')}`);
  const file = join(mkdtempSync(join(tmpdir(), 'hcsp-weight-problems-')), 'problems.txt');
  writeFileSync(file, `${head}\n${problems.join('\n')}\n`, { flag: 'wx' });
  return new Error(`${head}, first ${PROBLEMS_SHOWN}: ${problems.slice(0, PROBLEMS_SHOWN).join('; ')}; the full list is in ${file}`);
}
