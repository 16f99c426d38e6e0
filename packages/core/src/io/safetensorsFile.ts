// Node-only file I/O for safetensors: positioned reads (a tensor's bytes on demand, never
// the whole file) and an atomic writer (temp file in the same directory, renamed into
// place, so a failure never leaves a half-written output).
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync, writeSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Tensor } from '../tensor/tensor.ts';
import { errnoReason, fileKind } from './fileErrors.ts';
import { layoutSafetensors, SafetensorsReader, type ByteSource, type RawFileTensor } from './safetensors.ts';

// readSync/writeSync take at most 2^31-1 bytes per call; smaller chunks also keep the
// kernel's copies cache-friendly.
const IO_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * `path: <what failed>`: Node's errors from read/write/fsync (EISDIR, EFBIG, EIO, ENOSPC)
 * name no file, and those from open name the temporary file; the caller's path is the one
 * the user knows.
 */
function naming(path: string, what: string, e: unknown): Error {
  return new Error(`${path}: ${what}: ${errnoReason(e)}`);
}

/** A ByteSource over an open file descriptor; `size` is the file's size when opened. */
export class FileByteSource implements ByteSource {
  private fd: number | null;
  readonly size: number;
  /** the opened file's device and inode, "dev:ino": a reader that opens the path again checks it is still this file */
  readonly identity: string;

  constructor(readonly path: string) {
    // Checked before open: opening a fifo for reading would block until a writer appears.
    let st: Stats;
    try {
      st = statSync(path);
    } catch (e) {
      throw naming(path, 'cannot open', e);
    }
    if (!st.isFile()) throw new Error(`${path}: is ${fileKind(st)}, not a .safetensors file`);
    try {
      // O_NONBLOCK: a fifo put in its place since the check opens at once, and fstat refuses it
      this.fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (e) {
      throw naming(path, 'cannot open', e);
    }
    try {
      const opened = fstatSync(this.fd);
      if (!opened.isFile()) throw new Error(`${path}: is ${fileKind(opened)}, not a .safetensors file`);
      this.size = opened.size;
      // inode numbers pass 2^53 on some file systems: exact as bigints
      const id = fstatSync(this.fd, { bigint: true });
      this.identity = `${id.dev}:${id.ino}`;
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  readInto(offset: number, target: Uint8Array): void {
    if (this.fd === null) throw new Error(`${this.path}: read after close`);
    let done = 0;
    while (done < target.length) {
      const want = Math.min(IO_CHUNK_BYTES, target.length - done);
      let got: number;
      try {
        got = readSync(this.fd, target, done, want, offset + done);
      } catch (e) {
        throw naming(this.path, 'read failed', e);
      }
      if (got === 0) {
        throw new Error(`${this.path}: truncated file: needs ${offset + target.length} bytes, has ${offset + done}`);
      }
      done += got;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** A safetensors file opened for random access; call close() when done. */
export class SafetensorsFile extends SafetensorsReader {
  private readonly file: FileByteSource;

  constructor(path: string) {
    const source = new FileByteSource(path);
    try {
      super(source, path);
    } catch (e) {
      source.close();
      throw e;
    }
    this.file = source;
  }

  /** FileByteSource.identity */
  get identity(): string {
    return this.file.identity;
  }

  close(): void {
    this.file.close();
  }
}

export function openSafetensorsFile(path: string): SafetensorsFile {
  return new SafetensorsFile(path);
}

/**
 * Write tensors to `path` atomically: the header, then each tensor's bytes in chunks, to a
 * temporary file next to it, fsync'd and renamed over `path` only when all of it is written.
 */
export function writeSafetensorsFile(
  path: string,
  tensors: ReadonlyMap<string, Tensor | RawFileTensor> | Readonly<Record<string, Tensor | RawFileTensor>>,
  metadata?: Readonly<Record<string, string>>,
): void {
  const map = tensors instanceof Map ? tensors : new Map(Object.entries(tensors));
  const layout = layoutSafetensors(map, metadata);
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number;
  try {
    fd = openSync(tmp, 'wx');
  } catch (e) {
    throw naming(path, `cannot create a file in ${dirname(path)}`, e);
  }
  let closed = false;
  try {
    writeAll(fd, layout.header);
    for (const { bytes } of layout.order) writeAll(fd, bytes);
    fsyncSync(fd);
    closeSync(fd);
    closed = true;
    renameSync(tmp, path);
  } catch (e) {
    if (!closed) closeSync(fd);
    rmSync(tmp, { force: true });
    throw naming(path, 'write failed', e);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) {
    done += writeSync(fd, bytes, done, Math.min(IO_CHUNK_BYTES, bytes.length - done));
  }
}
