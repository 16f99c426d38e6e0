// Every JSON file hcsp reads (--ids, config.json, --config FILE, model.safetensors.index.json,
// model --device FILE) goes through readJsonInput: only a regular file is read (a fifo, a
// device such as /dev/zero, a directory or a socket is refused before any read, and a fifo
// swapped in after the check cannot block: the open is non-blocking and checked again by
// fstat), at most a stated number of bytes, nested at most a stated depth, and every error
// names the file.
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { errnoReason, fileKind } from './fileErrors.ts';

const MiB = 1024 * 1024;

/**
 * Size limits, each far above any real file of its kind and far below what would exhaust
 * memory (a JSON text takes several times its size once parsed):
 * - config.json and device files are a few KiB;
 * - an index holds ~120 bytes per tensor: the flash-next FP8 release's 147k per-expert
 *   tensors make ~17 MiB, so 64 MiB leaves room for larger checkpoints;
 * - a token id takes at most 8 bytes (`151935, `): 64 MiB holds over 8 million, beyond any
 *   prefill the memory guard lets through.
 */
export const JSON_LIMITS = {
  config: { maxBytes: 16 * MiB, what: 'a config' },
  device: { maxBytes: 16 * MiB, what: 'a device description' },
  index: { maxBytes: 64 * MiB, what: 'a safetensors index' },
  ids: { maxBytes: 64 * MiB, what: 'a token id list' },
} as const;

/** Deeper than any file of these kinds nests (ids: 1, config.json: 3); JSON.stringify of a deep value overflows the stack. */
export const JSON_MAX_DEPTH = 64;

export interface JsonInputLimits {
  maxBytes: number;
  /** for the message: "more than the 16 MiB limit for <what>" */
  what: string;
  maxDepth?: number;
}

/** A JSON input that cannot be used: `path` and the `reason` alone, for callers that prefix their option. */
export class JsonInputError extends Error {
  override name = 'JsonInputError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

function formatLimit(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`;
}

/** The deepest nesting of arrays and objects, stopping at the first byte past `max`; strings skipped. */
function nestingBeyond(text: string, max: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return -1;
}

function readRegularFile(path: string, limits: JsonInputLimits): Buffer {
  const fail = (reason: string): never => {
    throw new JsonInputError(path, reason);
  };
  const checkKind = (st: Stats): void => {
    if (!st.isFile()) fail(`is ${fileKind(st)}, not a JSON file`);
    if (st.size > limits.maxBytes) fail(`is ${st.size} bytes, more than the ${formatLimit(limits.maxBytes)} limit for ${limits.what}`);
  };
  // Checked before open: opening a fifo would wait for a writer, reading /dev/zero never ends.
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    return fail(errnoReason(e));
  }
  checkKind(st);
  let fd: number;
  try {
    // O_NONBLOCK: a fifo put in its place since the check opens at once (and fstat refuses it).
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    return fail(errnoReason(e));
  }
  try {
    checkKind(fstatSync(fd));
    // A file may grow after fstat, and /proc files say size 0: read to the end, one byte past the limit at most.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(limits.maxBytes + 1 - total, 1 * MiB));
      let got: number;
      try {
        got = readSync(fd, chunk, 0, chunk.length, null);
      } catch (e) {
        return fail(`read failed: ${errnoReason(e)}`);
      }
      if (got === 0) break;
      chunks.push(chunk.subarray(0, got));
      total += got;
      if (total > limits.maxBytes) fail(`is more than the ${formatLimit(limits.maxBytes)} limit for ${limits.what}`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** The parsed JSON of the regular file `path`, within `limits`; a JsonInputError naming the file otherwise. */
export function readJsonInput(path: string, limits: JsonInputLimits): unknown {
  const text = readRegularFile(path, limits).toString('utf8');
  const maxDepth = limits.maxDepth ?? JSON_MAX_DEPTH;
  const at = nestingBeyond(text, maxDepth);
  if (at >= 0) throw new JsonInputError(path, `nests arrays and objects more than ${maxDepth} levels deep (at character ${at})`);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new JsonInputError(path, `not valid JSON (${(e as Error).message})`);
  }
}
