import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { resolveOutputTarget } from './outputTarget.ts';
import { writeOutput } from './safeOutputFile.ts';
import { tempPathFor } from './tempFiles.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-safe-out-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

let n = 0;
function freshDir(): string {
  const d = join(root, String(n++));
  mkdirSync(d);
  return d;
}

const bytes = (s: string) => new TextEncoder().encode(s);

async function write(out: string, chunks: Iterable<Uint8Array>): Promise<void> {
  await writeOutput(resolveOutputTarget(out, '--out', []), chunks, '--out', out);
}

/** A pid that surely exists no more: a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('writing an output file', () => {
  it('writes the chunks in order to a new file with the umask mode, leaving no temp file', async () => {
    const d = freshDir();
    await write(join(d, 'out.bin'), [bytes('ab'), bytes(''), bytes('cde')]);
    expect(readFileSync(join(d, 'out.bin'), 'utf8')).toBe('abcde');
    expect(readdirSync(d)).toEqual(['out.bin']);
    const umask = process.umask();
    expect(statSync(join(d, 'out.bin')).mode & 0o777).toBe(0o666 & ~umask);
  });

  it('replaces an existing file atomically (a new inode) and keeps its mode', async () => {
    const d = freshDir();
    const out = join(d, 'out.bin');
    writeFileSync(out, 'old');
    chmodSync(out, 0o640);
    const before = statSync(out).ino;
    await write(out, [bytes('new')]);
    expect(readFileSync(out, 'utf8')).toBe('new');
    expect(statSync(out).mode & 0o7777).toBe(0o640);
    expect(statSync(out).ino).not.toBe(before);
  });

  it('through a symbolic link: the link stays a link and its target gets the bytes', async () => {
    const d = freshDir();
    writeFileSync(join(d, 'real.bin'), 'old');
    symlinkSync(join(d, 'real.bin'), join(d, 'link.bin'));
    await write(join(d, 'link.bin'), [bytes('new')]);
    expect(lstatSync(join(d, 'link.bin')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(d, 'real.bin'), 'utf8')).toBe('new');
    expect(readdirSync(d).sort()).toEqual(['link.bin', 'real.bin']);
  });

  it("sweeps this host's temp files of dead processes in the directory, keeps live ones, other hosts' and foreign files", async () => {
    const d = freshDir();
    const out = join(d, 'out.bin');
    const dead = deadPid();
    const stale = basename(tempPathFor(out, 'tmp', { host: hostname(), pid: dead }));
    const live = basename(tempPathFor(out));
    const otherHost = basename(tempPathFor(out, 'tmp', { host: `not-${hostname()}`, pid: dead }));
    const foreign = ['.out.bin.12345.xyz.tmp', `.notes.tmp-${dead}-v1`, `.out.bin.hcsp-${dead}.abc123.tmp`];
    for (const f of [stale, live, otherHost, ...foreign]) writeFileSync(join(d, f), 'partial');
    await write(out, [bytes('x')]);
    expect(readdirSync(d).sort()).toEqual([...foreign, live, otherHost, 'out.bin'].sort());
  });

  it('standard output: the bytes go to stdout', async () => {
    const got: Uint8Array[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: Uint8Array, cb?: (e?: Error | null) => void) => {
      got.push(chunk);
      cb?.(null);
      return true;
    }) as typeof process.stdout.write);
    await write('-', [bytes('ab'), bytes('c')]);
    expect(Buffer.concat(got).toString()).toBe('abc');
  });

  it('an interruption while writing removes the temp file and exits 130, reporting the signal', async () => {
    const d = freshDir();
    const out = join(d, 'out.bin');
    const exits: (number | undefined)[] = [];
    vi.spyOn(process, 'exit').mockImplementation(((code?: number) => void exits.push(code)) as typeof process.exit);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    function* chunks(): Generator<Uint8Array> {
      yield bytes('first');
      // the temp file exists now: deliver the signal as Node would
      expect(readdirSync(d)).toHaveLength(1);
      process.emit('SIGINT', 'SIGINT');
      yield bytes('second');
    }
    await expect(write(out, chunksLazy(chunks))).rejects.toThrow(/^--out .*out\.bin: write failed: /);
    expect(exits).toEqual([130]);
    expect(stderr).toHaveBeenCalledWith('hcsp: interrupted by SIGINT\n');
    expect(readdirSync(d)).toEqual([]);
    expect(existsSync(out)).toBe(false);
    expect(process.listenerCount('SIGINT')).toBe(0);
  });
});

/** An iterable that runs `gen` only as it is consumed (writeOutput pulls chunk by chunk, between writes). */
function chunksLazy(gen: () => Generator<Uint8Array>): Iterable<Uint8Array> {
  return { [Symbol.iterator]: gen };
}

describe('write errors name the output, never the temp file', () => {
  it('EFBIG under `ulimit -f`: the path given to --out is named', () => {
    const d = freshDir();
    const out = join(d, 'big.bin');
    const script = `
      import { resolveOutputTarget } from ${JSON.stringify(new URL('./outputTarget.ts', import.meta.url).pathname)};
      import { writeOutput } from ${JSON.stringify(new URL('./safeOutputFile.ts', import.meta.url).pathname)};
      const out = ${JSON.stringify(out)};
      try { await writeOutput(resolveOutputTarget(out, '--out', []), [new Uint8Array(64 * 1024)], '--out', out); }
      catch (e) { process.stderr.write(e.message); process.exitCode = 1; }`;
    // 1 block of 512 bytes: the 64 KiB write fails with EFBIG (Node ignores SIGXFSZ)
    const r = spawnSync('bash', ['-c', `ulimit -f 1 && exec "${process.execPath}" --import tsx --input-type=module -e "$0"`, script], {
      encoding: 'utf8',
      cwd: join(import.meta.dirname, '..', '..', '..', '..'),
    });
    expect(r.stderr).toBe(`--out ${out}: write failed: EFBIG: file too large`);
    expect(r.stderr).not.toMatch(/hcsp-tmp/);
    expect(readdirSync(d)).toEqual([]);
  });
});
