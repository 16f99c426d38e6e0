// The numpy scripts in ../py, run with python3 by path.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs ../py/<script> with `args`; its stdout. Throws what execFileSync throws (see pythonFailure). */
export function runPythonScript(script: string, args: string[]): string {
  const path = fileURLToPath(new URL(`../py/${script}`, import.meta.url));
  return execFileSync('python3', [path, ...args], { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why a script could not run: python3 missing, else the last line of its stderr (numpy missing, ...). */
export function pythonFailure(e: unknown): string {
  const err = e as NodeJS.ErrnoException & { stderr?: string };
  return err.code === 'ENOENT' ? 'python3 is not installed' : (err.stderr?.trim().split('\n').at(-1) ?? err.message);
}
