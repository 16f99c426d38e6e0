// Byte counts as people write them: `--max-memory 12G`, and in messages "237.7 GiB" (core's formatBytes).

export { formatBytes } from '@hcsp/core';

const POWER: Record<string, number> = { '': 0, b: 0, k: 1, kb: 1, kib: 1, m: 2, mb: 2, mib: 2, g: 3, gb: 3, gib: 3, t: 4, tb: 4, tib: 4 };

/** "12G", "1.5GiB", "512M", "4096" (bytes); the units are powers of 1024. */
export function parseByteSize(value: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const power = m ? POWER[m[2].toLowerCase()] : undefined;
  const bytes = m && power !== undefined ? Math.floor(Number(m[1]) * 1024 ** power) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new Error(`${name} must be a positive size such as 4096, 512M, 12G or 1.5TiB (powers of 1024), got ${JSON.stringify(value)}`);
  }
  return bytes;
}
