// A checkpoint checked against the tensors a configuration needs. One for another config has
// hundreds of problems: the message gives the count by kind and the first few, and the
// full list goes to a file the message names (issue: one 17-35 KB line).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatCheckpointProblem, type CheckpointProblem, type CheckpointProblemKind } from '@hcsp/core/node';

/** How many problems the message itself lists. */
export const PROBLEMS_SHOWN = 3;

/** The kinds the message counts by name; the rest count as 'other'. */
const COUNTED: ReadonlySet<CheckpointProblemKind> = new Set(['missing', 'wrong dtype', 'wrong shape']);

/** The loader's problems as one short error; `what` names the expectation. */
export function checkpointProblemsError(problems: readonly CheckpointProblem[], label: string, what: string): Error {
  const counts = new Map<string, number>();
  for (const { kind } of problems) {
    const k = COUNTED.has(kind) ? kind : 'other';
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const byKind = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  const head = `${label}: does not fit ${what}: ${problems.length} tensor problem${problems.length > 1 ? 's' : ''} (${byKind})`;
  const lines = problems.map(formatCheckpointProblem);
  if (problems.length <= PROBLEMS_SHOWN) return new Error(`${head}: ${lines.join('; ')}`);
  const file = join(mkdtempSync(join(tmpdir(), 'hcsp-weight-problems-')), 'problems.txt');
  writeFileSync(file, `${head}\n${lines.join('\n')}\n`, { flag: 'wx' });
  return new Error(`${head}, first ${PROBLEMS_SHOWN}: ${lines.slice(0, PROBLEMS_SHOWN).join('; ')}; the full list is in ${file}`);
}
