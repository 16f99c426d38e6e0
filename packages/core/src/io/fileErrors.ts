// How file errors read: what a non-regular file is, and an errno error's cause without
// Node's syscall and path (the caller names the path the user gave, not a resolved or
// temporary one); and a path that does not exist told apart from one that cannot be looked at.
import { lstatSync, type Stats } from 'node:fs';

/** lstat, or null where nothing is at the path (ENOENT, or ENOTDIR: a parent is a file, which the caller's walk up names) */
export function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if (['ENOENT', 'ENOTDIR'].includes((e as NodeJS.ErrnoException).code ?? '')) return null;
    throw e;
  }
}

/** What a non-regular file is, for messages. */
export function fileKind(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a fifo';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

// Node's texts where they do not say what happened (ELOOP: "too many symbolic links encountered").
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ELOOP: 'symbolic link loop (too many levels of symbolic links)',
  EROFS: 'read-only file system',
};

/** `CODE: what it means`, e.g. `ENOENT: no such file or directory`. */
export function errnoReason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (!err.code || typeof err.message !== 'string') return String(err?.message ?? e);
  const text = ERRNO_TEXT[err.code] ?? err.message.replace(new RegExp(`^${err.code}: `), '').replace(/, \w+(?: '[^']*'(?: -> '[^']*')?)?$/, '');
  return `${err.code}: ${text}`;
}
