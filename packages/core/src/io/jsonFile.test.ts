import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JSON_LIMITS, JsonInputError, readJsonInput, type JsonInputLimits } from './jsonFile.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-json-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The error readJsonInput throws, and how long it took. */
function refusal(path: string, limits: JsonInputLimits = JSON_LIMITS.config): { error: JsonInputError; ms: number } {
  const t0 = performance.now();
  try {
    readJsonInput(path, limits);
  } catch (e) {
    expect(e).toBeInstanceOf(JsonInputError);
    return { error: e as JsonInputError, ms: performance.now() - t0 };
  }
  throw new Error(`${path} was read`);
}

describe('readJsonInput', () => {
  it('parses a regular file, also through a symbolic link', () => {
    const f = join(dir, 'ok.json');
    writeFileSync(f, '{"a": [1, 2]}');
    symlinkSync(f, join(dir, 'ok-link.json'));
    expect(readJsonInput(f, JSON_LIMITS.config)).toEqual({ a: [1, 2] });
    expect(readJsonInput(join(dir, 'ok-link.json'), JSON_LIMITS.config)).toEqual({ a: [1, 2] });
  });

  it('refuses /dev/zero, a fifo and a directory before reading, at once', () => {
    const fifo = join(dir, 'fifo.json');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const sub = join(dir, 'sub.json');
    mkdirSync(sub);
    for (const [path, kind] of [
      ['/dev/zero', 'a character device'],
      [fifo, 'a fifo'],
      [sub, 'a directory'],
    ]) {
      const { error, ms } = refusal(path);
      expect(error.message).toBe(`${path}: is ${kind}, not a JSON file`);
      expect(ms).toBeLessThan(1000);
    }
  });

  it('refuses a file over the size limit without reading it, naming the size and the limit', () => {
    const big = join(dir, 'big.json');
    writeFileSync(big, '');
    truncateSync(big, 16 * 1024 * 1024 + 1);
    const { error, ms } = refusal(big);
    expect(error.message).toBe(`${big}: is 16777217 bytes, more than the 16 MiB limit for a config`);
    expect(ms).toBeLessThan(1000);
  });

  it('a file with a size of 0 that reads on (/proc) stops one byte past the limit', () => {
    const { error } = refusal('/proc/self/maps', { maxBytes: 16, what: 'a test' });
    expect(error.message).toBe('/proc/self/maps: is more than the 16 bytes limit for a test');
  });

  it('refuses deep nesting naming the file (JSON.stringify of such a value overflows the stack)', () => {
    const deep = join(dir, 'deep.json');
    writeFileSync(deep, '['.repeat(100_000) + ']'.repeat(100_000));
    expect(refusal(deep, JSON_LIMITS.ids).error.message).toBe(`${deep}: nests arrays and objects more than 64 levels deep (at character 64)`);
    // brackets inside strings are text
    const inString = join(dir, 'brackets.json');
    writeFileSync(inString, JSON.stringify(['['.repeat(1000), '\\"[[[']));
    expect(readJsonInput(inString, JSON_LIMITS.ids)).toEqual(['['.repeat(1000), '\\"[[[']);
  });

  it('names a missing file, a symbolic link loop and invalid JSON', () => {
    symlinkSync(join(dir, 'loop-b'), join(dir, 'loop-a'));
    symlinkSync(join(dir, 'loop-a'), join(dir, 'loop-b'));
    expect(refusal(join(dir, 'none.json')).error.message).toBe(`${join(dir, 'none.json')}: ENOENT: no such file or directory`);
    expect(refusal(join(dir, 'loop-a')).error.message).toBe(`${join(dir, 'loop-a')}: ELOOP: symbolic link loop (too many levels of symbolic links)`);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"a": ');
    expect(refusal(bad).error.message).toMatch(new RegExp(`^${bad}: not valid JSON \\(.+\\)$`));
  });
});
