// Temporary files and folders of atomic writes (--out files, `hcsp weights` folders), named
// `.<name>.hcsp-<kind>-<host>-<pid>-<random><check>` next to the output so that a later run
// can remove what a dead process left behind (SIGKILL, power loss) — and nothing else: the
// sweep removes an entry only when its name carries this host, a pid that no longer exists
// here, and a check (a hash of the host, pid and random part) that only hcsp writes; a folder
// must also hold the marker file hcsp puts in its own. A user's `.notes.tmp-99999-v1` or
// another host's temporary on a shared (NFS) folder is never touched.
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { processAlive } from '../processAlive.ts';

export type TempKind = 'tmp' | 'old';

const TEMP_NAME = /^\..*\.hcsp-(tmp|old)-(.+)-(\d+)-([0-9a-f]{8})([0-9a-f]{8})$/;
/** The file in each temporary folder hcsp makes, holding the folder's name. */
export const TEMP_FOLDER_MARKER = '.hcsp-temp';
// NAME_MAX is 255 bytes; the rest of the temp name takes at most 100.
const MAX_NAME_BYTES = 150;

/** Who wrote a temporary: a host and a process on it. */
export interface TempOwner {
  host: string;
  pid: number;
}

const thisOwner = (): TempOwner => ({ host: hostname(), pid: process.pid });

/** The host as it appears in a name: file-name-safe, at most 64 characters. */
function hostTag(host: string): string {
  return host.replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 64) || '_';
}

function check(owner: TempOwner, random: string): string {
  return createHash('sha256').update(`hcsp-temp/1\0${owner.host}\0${owner.pid}\0${random}`).digest('hex').slice(0, 8);
}

/** A fresh temporary name for `target` (`owner`: this process unless a test says otherwise). */
export function tempPathFor(target: string, kind: TempKind = 'tmp', owner: TempOwner = thisOwner()): string {
  let name = basename(target);
  while (Buffer.byteLength(name) > MAX_NAME_BYTES) name = name.slice(0, -1);
  const random = randomBytes(4).toString('hex');
  return join(dirname(target), `.${name}.hcsp-${kind}-${hostTag(owner.host)}-${owner.pid}-${random}${check(owner, random)}`);
}

/** Marks a temporary folder as hcsp's (the sweep removes no folder without it). */
export function markTempFolder(path: string): void {
  writeFileSync(join(path, TEMP_FOLDER_MARKER), basename(path));
}

/** Whether `name` in `dir` is a temporary this host's hcsp made for a process that is gone. */
function isStaleOwnTemp(dir: string, name: string): boolean {
  const m = TEMP_NAME.exec(name);
  if (!m) return false;
  const [, , tag, pidText, random, sum] = m;
  const owner = thisOwner();
  const pid = Number(pidText);
  if (tag !== hostTag(owner.host) || sum !== check({ host: owner.host, pid }, random)) return false;
  if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) return false;
  const st = lstatSync(join(dir, name));
  if (st.isFile()) return true;
  if (!st.isDirectory()) return false;
  const marker = join(dir, name, TEMP_FOLDER_MARKER);
  const mst = lstatSync(marker, { throwIfNoEntry: false });
  return mst?.isFile() === true && mst.size < 4096 && readFileSync(marker, 'utf8') === name;
}

/** Removes this host's hcsp temporaries in `dir` whose process no longer exists; returns their paths. */
export function sweepStaleTempFiles(dir: string): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    let stale: boolean;
    try {
      stale = isStaleOwnTemp(dir, name);
    } catch {
      continue; // gone meanwhile, or unreadable: not provably ours
    }
    if (!stale) continue;
    const path = join(dir, name);
    rmSync(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}
