// Temporary files of atomic writes: `.<name>.hcsp-<pid>.<random>.tmp` next to the output, so
// that a later run can tell which ones a dead process left behind (SIGKILL, power loss).
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { processAlive } from '../processAlive.ts';

const TEMP_NAME = /^\..*\.hcsp-(\d+)\.[0-9a-z]+\.tmp$/;
// NAME_MAX is 255 bytes; the rest of the temp name takes under 40.
const MAX_NAME_BYTES = 200;

/** A fresh temp path in the directory of `target`, naming this process. */
export function tempPathFor(target: string): string {
  let name = basename(target);
  while (Buffer.byteLength(name) > MAX_NAME_BYTES) name = name.slice(0, -1);
  return join(dirname(target), `.${name}.hcsp-${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`);
}

/** Removes the temp files in `dir` of processes that no longer exist; returns their paths. */
export function sweepStaleTempFiles(dir: string): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    const pid = Number(TEMP_NAME.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    const path = join(dir, name);
    if (!lstatSync(path).isFile()) continue;
    rmSync(path, { force: true });
    removed.push(path);
  }
  return removed;
}
