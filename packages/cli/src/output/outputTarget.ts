// Where a command may write (issue: `--out /dev/null` as root replaced the device). The rule:
// the output is a new regular file, or an existing regular file the user may replace; a
// directory, device, fifo, socket, a link to none of those, or one of the command's own
// inputs is refused with the reason; standard output is the explicit `-`.
import { accessSync, constants, readlinkSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileKind, lstatOrNull } from '@hcsp/core/node';

export type OutputTarget =
  | { kind: 'stdout' }
  | {
      kind: 'file';
      /** the file to replace or create, symbolic links resolved */
      path: string;
      /** the existing file's identity and mode; null when it is new */
      existing: { dev: number; ino: number; mode: number; uid: number; gid: number } | null;
    };

// Following more links than this is a loop (Linux's own limit is 40).
const MAX_LINKS = 40;
// Paths that name a process's open files, not files: a regular file reached through
// /dev/stdout is the caller's log, which must never be replaced by rename.
const STDIO_ALIAS = /^\/(?:proc\/|dev\/(?:fd|stdin|stdout|stderr)(?:\/|$))/;

/**
 * Checks `--out` (`option` names it in errors) before any work: what it points at, its
 * directory, and that it is none of `inputs`. Symbolic links are followed, so a link keeps
 * pointing at the replaced file.
 */
export function resolveOutputTarget(out: string, option: string, inputs: readonly string[]): OutputTarget {
  if (out === '-') return { kind: 'stdout' };
  const fail = (why: string): never => {
    throw new Error(`${option} ${out}: ${why}`);
  };
  if (out === '') fail('empty path');
  if (/[/\\]$/.test(out)) fail('names a directory');
  const toStdout = 'to write to standard output use `-`';
  const given = resolve(out);
  let path = given;
  let st: Stats | null = null;
  for (let hops = 0; ; hops++) {
    if (STDIO_ALIAS.test(path)) fail(`names an open file of a process (${path}), not a file; ${toStdout}`);
    st = lstatOrNull(path);
    if (!st?.isSymbolicLink()) break;
    if (hops === MAX_LINKS) fail('too many levels of symbolic links');
    path = resolve(dirname(path), readlinkSync(path));
  }
  if (st === null && path !== given) fail(`is a symbolic link to ${path}, which does not exist`);
  if (st !== null && !st.isFile()) fail(`is ${fileKind(st)}, not a regular file${st.isDirectory() ? '' : `; ${toStdout}`}`);

  let dir: string;
  try {
    dir = realpathSync(dirname(path));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' ? `directory ${dirname(path)} does not exist` : `directory ${dirname(path)}: ${(e as Error).message}`);
  }
  if (!statSync(dir).isDirectory()) fail(`${dir} is not a directory`);
  try {
    // Replacing by rename needs write and search permission on the directory.
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    fail(`cannot create files in ${dir} (permission denied)`);
  }
  if (st !== null) {
    try {
      accessSync(path, constants.W_OK);
    } catch {
      fail('the file is not writable by this user');
    }
    for (const input of inputs) {
      let inSt: Stats;
      try {
        inSt = statSync(input);
      } catch {
        continue; // a missing input fails on its own, naming itself
      }
      if (inSt.dev === st.dev && inSt.ino === st.ino) fail(`is the same file as the input ${input}; writing it would replace the input`);
    }
  }
  return {
    kind: 'file',
    path: join(dir, basename(path)),
    existing: st === null ? null : { dev: st.dev, ino: st.ino, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid },
  };
}
