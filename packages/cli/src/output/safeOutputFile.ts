// Writing a checked output (outputTarget.ts): atomically for a file (a temp file next to it,
// fsync'd, given the old file's mode and owner, renamed over it), removed again on
// interruption, with errors naming the output, never the temp file; or to standard output.
// Several files of one output (a report folder, outputDir.ts) are renamed together.
import { closeSync, lstatSync, renameSync, rmSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { interruptible } from '../signals.ts';
import type { OutputTarget } from './outputTarget.ts';
import { sweepStaleTempFiles, tempPathFor } from './tempFiles.ts';

// Bounded writes: the event loop turns between them, so a signal is handled mid-file.
const WRITE_BYTES = 16 * 1024 * 1024;

function* slices(chunks: Iterable<Uint8Array>): Generator<Uint8Array> {
  for (const c of chunks) for (let at = 0; at < c.length; at += WRITE_BYTES) yield c.subarray(at, Math.min(c.length, at + WRITE_BYTES));
}

/** An fs error's message without the syscall and the (temp) path it names. */
export function reason(e: unknown): string {
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
  return writeOutputs([{ target, chunks, given }], option);
}

/** One file of writeOutputs: where it goes, what it holds, and how the user named it. */
export interface OutputFile {
  target: Extract<OutputTarget, { kind: 'file' }>;
  chunks: Iterable<Uint8Array>;
  given: string;
}

/**
 * Writes several files as one output (a report's page and its JSON): every temp file is
 * written and checked first, then all are renamed in one synchronous stretch, so that no
 * signal is handled between the renames and a reader finds the old set or the new one.
 */
export async function writeOutputs(files: readonly OutputFile[], option: string): Promise<void> {
  for (const dir of new Set(files.map((f) => dirname(f.target.path)))) {
    try {
      sweepStaleTempFiles(dir);
    } catch {
      // best effort: an unreadable entry must not stop the write
    }
  }
  const temps = files.map((f) => ({ ...f, tmp: tempPathFor(f.target.path), fh: null as FileHandle | null, closed: false }));
  const fail = (f: OutputFile, what: string, e: unknown): Error => new Error(`${option} ${f.given}: ${what}: ${reason(e)}`);
  // On a signal, synchronously: the process exits right after. Registered before any temp
  // file exists, so there is no moment when one exists without its cleanup.
  const onInterrupt = (): void => {
    for (const t of temps) {
      try {
        if (t.fh && !t.closed) closeSync(t.fh.fd);
      } catch {
        // a close in flight got there first
      }
      rmSync(t.tmp, { force: true });
    }
  };
  const removeTemps = async (): Promise<void> => {
    for (const t of temps) {
      if (t.fh && !t.closed) await t.fh.close().catch(() => {});
      t.closed = true;
      rmSync(t.tmp, { force: true });
    }
  };
  await interruptible(async () => {
    for (const t of temps) {
      const { path, existing } = t.target;
      try {
        // 'wx': O_EXCL, so a link planted at the temp name is never followed
        t.fh = await open(t.tmp, 'wx', existing?.mode ?? 0o666);
      } catch (e) {
        await removeTemps();
        throw fail(t, `cannot create a file in ${dirname(path)}`, e);
      }
      const file = t.fh;
      try {
        for (const bytes of slices(t.chunks)) {
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
        t.closed = true;
      } catch (e) {
        await removeTemps();
        throw fail(t, 'write failed', e);
      }
    }
    // Between the check and now no path may have become something else.
    for (const t of temps) {
      const { path, existing } = t.target;
      const now = (() => {
        try {
          return lstatSync(path);
        } catch {
          return null;
        }
      })();
      const same = existing ? now?.isFile() && now.dev === existing.dev && now.ino === existing.ino : now === null;
      if (!same) {
        await removeTemps();
        throw new Error(`${option} ${t.given}: ${path} changed while the output was written; nothing was replaced`);
      }
    }
    for (const t of temps) {
      try {
        renameSync(t.tmp, t.target.path);
      } catch (e) {
        await removeTemps();
        throw fail(t, 'cannot replace the file', e);
      }
    }
  }, onInterrupt);
}
