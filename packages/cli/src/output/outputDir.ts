// A folder of outputs (`xcheck --report DIR`, `bench --suite --out DIR`), checked before any
// work and written after it. Before: not empty, not on a special filesystem (/proc, /sys,
// /dev, cgroup, ...), the folder or its nearest existing parent a writable folder on a
// filesystem that is not read-only or full; each file absent, or (where the command
// replaces) a regular file; a symbolic link, as the folder or as a file, is never followed.
// After: the folder made, every file written to a temp file and all renamed together
// (safeOutputFile.ts); on failure or a signal the temp files and any folder made are removed.
import { accessSync, constants, lstatSync, mkdirSync, realpathSync, rmdirSync, statfsSync, type Stats } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileKind, lstatOrNull } from '@hcsp/core/node';
import { onInterrupt } from '../signals.ts';
import type { OutputTarget } from './outputTarget.ts';
import { reason, writeOutputs } from './safeOutputFile.ts';

// statfs(2) f_type of filesystems that hold no user files (linux/magic.h)
const SPECIAL_FILESYSTEMS = new Map<number, string>([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x1cd1, 'devpts'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x6165676c, 'pstore'],
  [0xcafe4a11, 'bpf'],
  [0x62656570, 'configfs'],
  [0x65735543, 'fusectl'],
  [0x42494e4d, 'binfmt_misc'],
  [0xf97cff8c, 'selinuxfs'],
  [0xde5e81e4, 'efivarfs'],
  [0x19800202, 'mqueue'],
  [0x6e736673, 'nsfs'],
]);
// Kernel and device trees (devtmpfs reports itself as tmpfs, so /dev is known by its path);
// /dev/shm is an ordinary tmpfs.
const SPECIAL_ROOTS = ['/proc', '/sys', '/dev'];
const ORDINARY_UNDER_SPECIAL = ['/dev/shm'];

type FileTarget = Extract<OutputTarget, { kind: 'file' }>;

export interface OutputDir {
  /** as the user gave it (for messages) */
  given: string;
  option: string;
  /** absolute, its existing part's links resolved */
  dir: string;
  /** each file by its name in the folder */
  files: Map<string, FileTarget>;
}

function kindOf(st: Stats): string {
  return st.isFile() ? 'a file' : fileKind(st);
}

function within(path: string, root: string): boolean {
  const r = relative(root, path);
  return r === '' || (!r.startsWith('..') && !r.startsWith(sep));
}

/**
 * Checks the folder `given` (of `option`) and its files `names` before any work. `replace`:
 * an existing file may be replaced (else it is refused, naming `forceFlag` when there is one).
 */
export function checkOutputDir(given: string, option: string, names: readonly string[], opts: { replace: boolean; forceFlag?: string }): OutputDir {
  const fail = (why: string): never => {
    throw new Error(`${option} ${given === '' ? '""' : given}: ${why}`);
  };
  if (given === '') fail('an empty path names no folder');
  const abs = resolve(given);
  // the folder itself, or the nearest parent that exists (the folder is made under it)
  let existing = abs;
  let st: Stats | null;
  try {
    st = lstatOrNull(existing);
    while (st === null) {
      existing = dirname(existing);
      st = lstatOrNull(existing);
    }
  } catch (e) {
    return fail(`cannot look at ${existing}: ${reason(e)}`);
  }
  if (existing === abs && st.isSymbolicLink()) fail(`is a symbolic link; give the folder itself (links are not followed)`);
  let real: string;
  try {
    real = realpathSync(existing);
  } catch (e) {
    return fail(`cannot resolve ${existing}: ${reason(e)}`);
  }
  const special = ORDINARY_UNDER_SPECIAL.some((d) => within(real, d)) ? undefined : SPECIAL_ROOTS.find((root) => within(real, root));
  if (special) fail(`is under ${special} (the kernel's and devices' files), not a place for files`);
  let fs: ReturnType<typeof statfsSync>;
  try {
    fs = statfsSync(real);
  } catch (e) {
    return fail(`cannot look at the filesystem of ${real}: ${reason(e)}`);
  }
  const kind = SPECIAL_FILESYSTEMS.get(fs.type);
  if (kind) fail(`${real} is on a ${kind} filesystem, not a place for files`);
  const place = existing === abs ? real : `${real} (where the folder would be made)`;
  const realSt = lstatSync(real);
  if (!realSt.isDirectory()) fail(existing === abs ? `is ${kindOf(realSt)}, not a folder` : `${existing} is ${kindOf(realSt)}, not a folder`);
  try {
    // making the folder or a file in it needs write and search permission
    accessSync(real, constants.W_OK | constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    fail(code === 'EROFS' ? `${place} is on a read-only filesystem` : `cannot create files in ${place} (permission denied)`);
  }
  // root may write into the blocks reserved for it
  if ((process.getuid?.() === 0 ? fs.bfree : fs.bavail) === 0) fail(`no space left on the filesystem of ${place}`);

  const dir = existing === abs ? real : join(real, relative(existing, abs));
  const files = new Map<string, FileTarget>();
  for (const name of names) {
    const path = join(dir, name);
    const f = existing === abs ? lstatOrNull(path) : null;
    if (f === null) {
      files.set(name, { kind: 'file', path, existing: null });
      continue;
    }
    if (f.isSymbolicLink()) fail(`${path} is a symbolic link; it is not followed (remove it, or give another folder)`);
    if (!f.isFile()) fail(`${path} is ${kindOf(f)}, not a regular file`);
    if (!opts.replace) fail(`${path} exists${opts.forceFlag ? ` (${opts.forceFlag} replaces it)` : ''}`);
    try {
      accessSync(path, constants.W_OK);
    } catch {
      fail(`${path} is not writable by this user`);
    }
    files.set(name, { kind: 'file', path, existing: { dev: f.dev, ino: f.ino, mode: f.mode & 0o7777, uid: f.uid, gid: f.gid } });
  }
  return { given, option, dir, files };
}

/**
 * Writes the checked folder's files (`contents` by name, every name of the check): the
 * folder made when missing, all files renamed into place together. A folder this call made
 * is removed again on failure or interruption (when nothing else was put in it).
 */
export async function writeOutputDir(out: OutputDir, contents: ReadonlyMap<string, Iterable<Uint8Array>>): Promise<void> {
  let made: string | undefined;
  try {
    made = mkdirSync(out.dir, { recursive: true });
  } catch (e) {
    throw new Error(`${out.option} ${out.given}: cannot create the folder ${out.dir}: ${reason(e)}`);
  }
  const removeMade = (): void => {
    if (made === undefined) return;
    // from the deepest up to the first one made; a folder someone put files in stays
    for (let d = out.dir; ; d = dirname(d)) {
      try {
        rmdirSync(d);
      } catch {
        return;
      }
      if (d === made || basename(d) === '') return;
    }
  };
  const release = onInterrupt(removeMade);
  try {
    await writeOutputs(
      [...out.files].map(([name, target]) => {
        const chunks = contents.get(name);
        if (!chunks) throw new Error(`${out.option} ${out.given}: no contents for ${name}`);
        return { target, chunks, given: join(out.given, name) };
      }),
      out.option,
    );
  } catch (e) {
    removeMade();
    throw e;
  } finally {
    release();
  }
}
