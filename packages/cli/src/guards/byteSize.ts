// Byte counts as people write them: `--max-memory 12G`, and in messages "237.7 GiB".

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'] as const;
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

/** 254_999_999_999 -> "237.5 GiB" (one decimal from KiB up). */
export function formatBytes(bytes: number): string {
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${UNITS[u]}`;
}
