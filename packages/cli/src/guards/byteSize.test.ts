import { describe, expect, it } from 'vitest';
import { parseByteSize } from './byteSize.ts';

describe('byte sizes', () => {
  it('parses sizes in powers of 1024', () => {
    expect(parseByteSize('4096', '--max-memory')).toBe(4096);
    expect(parseByteSize('512M', '--max-memory')).toBe(512 * 2 ** 20);
    expect(parseByteSize('12G', '--max-memory')).toBe(12 * 2 ** 30);
    expect(parseByteSize('1.5GiB', '--max-memory')).toBe(1.5 * 2 ** 30);
    expect(parseByteSize('2 tb', '--max-memory')).toBe(2 * 2 ** 40);
  });

  it('refuses anything else, naming the option and the value', () => {
    for (const bad of ['', '0', 'G', '-1G', '1e9', '12X', '1.5.2G', 'lots']) {
      expect(() => parseByteSize(bad, '--max-memory'), bad).toThrow(
        `--max-memory must be a positive size such as 4096, 512M, 12G or 1.5TiB (powers of 1024), got ${JSON.stringify(bad)}`,
      );
    }
  });
});
