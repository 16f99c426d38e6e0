import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, parseSeconds } from './seconds.ts';

describe('parseSeconds', () => {
  it('takes plain decimal seconds into whole milliseconds', () => {
    expect(parseSeconds('30', '--t')).toBe(30_000);
    expect(parseSeconds('2.5', '--t')).toBe(2500);
    expect(parseSeconds('0.001', '--t')).toBe(1);
    expect(parseSeconds('007', '--t')).toBe(7000);
    expect(parseSeconds('2147483.647', '--t')).toBe(MAX_TIMER_MS);
  });

  it('refuses anything else, naming the option and the value', () => {
    for (const bad of ['', 'abc', '-1', '+1', ' 1', '1 ', '1e3', '.5', '5.', '0x10', 'Infinity', 'NaN']) {
      expect(() => parseSeconds(bad, '--t')).toThrow(
        `--t must be a positive number of seconds, at most 2147483.647 (setTimeout's limit), got ${JSON.stringify(bad)}`,
      );
    }
    expect(() => parseSeconds('0', '--t')).toThrow('--t is too small: at least 0.001 s, got "0"');
    expect(() => parseSeconds('0.0004', '--t')).toThrow('--t is too small: at least 0.001 s, got "0.0004"');
    // past setTimeout's limit a timer fires at once: refused, however long the digits
    expect(() => parseSeconds('2147483.648', '--t')).toThrow(`--t is too large: at most 2147483.647 s (setTimeout's limit), got "2147483.648"`);
    expect(() => parseSeconds('2147484', '--t')).toThrow('--t is too large');
    expect(() => parseSeconds('9'.repeat(400), '--t')).toThrow('--t is too large');
  });
});
