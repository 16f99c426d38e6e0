// How the page prints numbers.

/** Byte counts as the page prints them: B, KiB, MiB, GiB with 3 significant digits. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? String(Math.round(v * 100) / 100) : v.toPrecision(3)} ${units[u]}`;
}

/** Per-rank numbers: "x" when every rank has the same value, else "a / b / c". */
export function perRank(values: readonly number[], fmt: (v: number) => string = String): string {
  return values.every((v) => v === values[0]) ? `${fmt(values[0])} each` : values.map(fmt).join(' / ');
}
