// Writing a checked output (outputTarget.ts): atomically for a file (a temp file next to it,
// fsync'd, given the old file's mode and owner, renamed over it), removed again on
// interruption, with errors naming the output, never the temp file; or to standard output.
import { closeSync, lstatSync, rmSync } from 'node:fs';
import { open, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { interruptible } from '../signals.ts';
import type { OutputTarget } from './outputTarget.ts';
import { sweepStaleTempFiles, tempPathFor } from './tempFiles.ts';

// Bounded writes: the event loop turns between them, so a signal is handled mid-file.
const WRITE_BYTES = 16 * 1024 * 1024;

function* slices(chunks: Iterable<Uint8Array>): Generator<Uint8Array> {
  for (const c of chunks) for (let at = 0; at < c.length; at += WRITE_BYTES) yield c.subarray(at, Math.min(c.length, at + WRITE_BYTES));
}

function reason(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  // Node's fs messages end with the syscall and the temp path: keep the cause.
  return err.code ? err.message.replace(/, \w+(?: '[^']*'(?: -> '[^']*')?)?$/, '') : String(err.message ?? e);
}

async function writeStdout(chunks: Iterable<Uint8Array>, option: string): Promise<void> {
  const out = process.stdout;
  if (out.isTTY) throw new Error(`${option} -: standard output is a terminal; redirect it to a file or a pipe`);
  for (const bytes of slices(chunks)) {
    await new Promise<void>((done, fail) => {
      out.write(bytes, (e) => (e ? fail(new Error(`${option} -: writing standard output failed: ${reason(e)}`)) : done()));
    });
  }
}

/** Writes `chunks` (in order) to `target`; `given` and `option` name it in errors. */
export async function writeOutput(target: OutputTarget, chunks: Iterable<Uint8Array>, option: string, given: string): Promise<void> {
  if (target.kind === 'stdout') return writeStdout(chunks, option);
  const { path, existing } = target;
  const fail = (what: string, e: unknown): Error => new Error(`${option} ${given}: ${what}: ${reason(e)}`);
  try {
    sweepStaleTempFiles(dirname(path));
  } catch {
    // best effort: an unreadable entry must not stop the write
  }
  const tmp = tempPathFor(path);
  let fh: FileHandle | null = null;
  let closed = false;
  // On a signal, synchronously: the process exits right after. Registered before the temp
  // file exists, so there is no moment when it exists without its cleanup.
  const onInterrupt = (): void => {
    try {
      if (fh && !closed) closeSync(fh.fd);
    } catch {
      // a close in flight got there first
    }
    rmSync(tmp, { force: true });
  };
  const removeTemp = async (): Promise<void> => {
    if (fh && !closed) await fh.close().catch(() => {});
    closed = true;
    rmSync(tmp, { force: true });
  };
  await interruptible(async () => {
    try {
      fh = await open(tmp, 'wx', existing?.mode ?? 0o666);
    } catch (e) {
      throw fail(`cannot create a file in ${dirname(path)}`, e);
    }
    const file = fh;
    try {
      for (const bytes of slices(chunks)) {
        let done = 0;
        while (done < bytes.length) done += (await file.write(bytes, done, bytes.length - done)).bytesWritten;
      }
      if (existing) {
        // open()'s mode went through the umask: set the old mode exactly, and (as root) its owner.
        await file.chmod(existing.mode);
        if (process.getuid?.() === 0) await file.chown(existing.uid, existing.gid);
      }
      await file.sync();
      await file.close();
      closed = true;
    } catch (e) {
      await removeTemp();
      throw fail('write failed', e);
    }
    // Between the check and now the path must not have become something else.
    const now = (() => {
      try {
        return lstatSync(path);
      } catch {
        return null;
      }
    })();
    const same = existing ? now !== null && now.isFile() && now.dev === existing.dev && now.ino === existing.ino : now === null;
    if (!same) {
      await removeTemp();
      throw new Error(`${option} ${given}: ${path} changed while the output was written; nothing was replaced`);
    }
    try {
      await rename(tmp, path);
    } catch (e) {
      await removeTemp();
      throw fail('cannot replace the file', e);
    }
  }, onInterrupt);
}
