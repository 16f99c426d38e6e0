import { describe, expect, it } from 'vitest';
import { formatBytes } from './formatBytes.ts';

describe('formatBytes', () => {
  it('formats with one decimal from KiB up', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(255_262_310_400)).toBe('237.7 GiB');
  });
});
