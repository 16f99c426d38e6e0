// As root (as in most containers) nothing stops a rename over a device, so these checks
// are all there is. Every case runs in its own temp dir; no real device is touched: /dev/null
// is only looked at, and checked to still be a character device afterwards.
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveOutputTarget } from './outputTarget.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-out-target-'));
const input = join(dir, 'in.safetensors');
let server: Server;

beforeAll(async () => {
  writeFileSync(input, 'input bytes');
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  server = createServer();
  await new Promise<void>((done) => server.listen(join(dir, 'sock'), done));
  mkdirSync(join(dir, 'sub'));
  symlinkSync(input, join(dir, 'link-to-in'));
  linkSync(input, join(dir, 'hardlink-to-in'));
  symlinkSync('/dev/stdout', join(dir, 'link-to-stdout'));
  symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
  symlinkSync(join(dir, 'loop-b'), join(dir, 'loop-a'));
  symlinkSync(join(dir, 'loop-a'), join(dir, 'loop-b'));
  writeFileSync(join(dir, 'old.safetensors'), 'old');
  chmodSync(join(dir, 'old.safetensors'), 0o640);
  symlinkSync(join(dir, 'old.safetensors'), join(dir, 'link-to-old'));
  writeFileSync(join(dir, 'plainfile'), '');
});
afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const target = (out: string) => resolveOutputTarget(out, '--out', [input]);

describe('output targets', () => {
  it('a new file, or an existing regular file with its mode', () => {
    expect(target(join(dir, 'new.safetensors'))).toEqual({ kind: 'file', path: join(dir, 'new.safetensors'), existing: null });
    const old = target(join(dir, 'old.safetensors'));
    expect(old.kind === 'file' && old.existing?.mode).toBe(0o640);
  });

  it('standard output only as the explicit -', () => {
    expect(target('-')).toEqual({ kind: 'stdout' });
  });

  it('a symbolic link is followed: the file it points at is the one replaced', () => {
    const t = target(join(dir, 'link-to-old'));
    expect(t).toMatchObject({ kind: 'file', path: join(dir, 'old.safetensors') });
  });

  it('refuses a fifo, a socket, a directory, a dangling link and a link loop, naming --out and the reason', () => {
    const cases: [string, RegExp][] = [
      ['fifo', /^--out .*\/fifo: is a fifo, not a regular file; to write to standard output use `-`$/],
      ['sock', /: is a socket, not a regular file/],
      ['sub', /: is a directory, not a regular file$/],
      ['sub/', /: names a directory$/],
      ['nodir/', /: names a directory$/],
      ['dangling', /: is a symbolic link to .*\/nowhere, which does not exist$/],
      ['loop-a', /: too many levels of symbolic links$/],
    ];
    for (const [name, message] of cases) expect(() => target(join(dir, name)), name).toThrow(message);
  });

  it('refuses /dev/null (looked at only) and leaves it a character device', () => {
    expect(() => target('/dev/null')).toThrow(/^--out \/dev\/null: is a character device, not a regular file; to write to standard output use `-`$/);
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
  });

  it('refuses /dev/stdout and links to it, whatever stdout is (a log file must not be replaced)', () => {
    expect(() => target('/dev/stdout')).toThrow(
      /^--out \/dev\/stdout: names an open file of a process \(\/dev\/stdout\), not a file; to write to standard output use `-`$/,
    );
    expect(() => target(join(dir, 'link-to-stdout'))).toThrow(/names an open file of a process \(\/dev\/stdout\)/);
    expect(() => target('/proc/self/fd/1')).toThrow(/names an open file of a process/);
  });

  it('refuses the input however it is spelled: the same path, dir/./in, a symbolic link, a hard link', () => {
    for (const out of [input, `${dir}/./in.safetensors`, `${dir}/sub/../in.safetensors`, join(dir, 'link-to-in'), join(dir, 'hardlink-to-in')]) {
      expect(() => target(out), out).toThrow(`is the same file as the input ${input}; writing it would replace the input`);
    }
  });

  it('a missing or non-directory parent is named, with --out as given', () => {
    expect(() => target(join(dir, 'missing', 'out.safetensors'))).toThrow(
      `--out ${join(dir, 'missing', 'out.safetensors')}: directory ${join(dir, 'missing')} does not exist`,
    );
    expect(() => target(join(dir, 'plainfile', 'out.safetensors'))).toThrow(/plainfile\/out\.safetensors: .*plainfile is not a directory/);
    expect(() => target('')).toThrow('--out : empty path');
  });
});
