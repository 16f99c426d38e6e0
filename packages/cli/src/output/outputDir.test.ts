import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkOutputDir, writeOutputDir } from './outputDir.ts';
import { printResultsOnSaveFailure, ResultsNotSavedError } from './resultsNotSaved.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-output-dir-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const NAMES = ['report.json', 'index.html'];
const check = (given: string, replace = false) => checkOutputDir(given, '--report', NAMES, { replace, forceFlag: '--force' });
const contents = (text: string) => new Map(NAMES.map((n) => [n, [Buffer.from(`${n}: ${text}`)]]));

describe('an output folder is checked before any work', () => {
  it('refuses what is not a place for files, naming the path and why', () => {
    const file = join(dir, 'file');
    writeFileSync(file, 'x');
    const cases: [string, string][] = [
      ['', '--report "": an empty path names no folder'],
      ['/proc/hcsp-x', "--report /proc/hcsp-x: is under /proc (the kernel's and devices' files), not a place for files"],
      ['/sys/kernel/hcsp-x', "--report /sys/kernel/hcsp-x: is under /sys (the kernel's and devices' files), not a place for files"],
      ['/dev/hcsp-x', "--report /dev/hcsp-x: is under /dev (the kernel's and devices' files), not a place for files"],
      [file, `--report ${file}: is a file, not a folder`],
      [join(file, 'a', 'b'), `--report ${join(file, 'a', 'b')}: ${file} is a file, not a folder`],
    ];
    for (const [given, message] of cases) expect(() => check(given), given).toThrow(message);
  });

  it('never follows a symbolic link: as the folder, or as one of its files (with --force too)', () => {
    const real = join(dir, 'real');
    mkdirSync(real);
    symlinkSync(real, join(dir, 'to-real'));
    expect(() => check(join(dir, 'to-real'))).toThrow(`--report ${join(dir, 'to-real')}: is a symbolic link; give the folder itself (links are not followed)`);
    const out = join(dir, 'with-link');
    mkdirSync(out);
    symlinkSync(join(dir, 'elsewhere'), join(out, 'index.html'));
    expect(() => check(out, true)).toThrow(
      `--report ${out}: ${join(out, 'index.html')} is a symbolic link; it is not followed (remove it, or give another folder)`,
    );
    expect(existsSync(join(dir, 'elsewhere'))).toBe(false);
  });

  it('an existing file is replaced only when the command replaces (--force); a non-regular one never', () => {
    const out = join(dir, 'existing');
    mkdirSync(join(out, 'index.html'), { recursive: true });
    expect(() => check(out, true)).toThrow(`--report ${out}: ${join(out, 'index.html')} is a directory, not a regular file`);
    rmSync(join(out, 'index.html'), { recursive: true });
    writeFileSync(join(out, 'report.json'), 'old');
    expect(() => check(out)).toThrow(`--report ${out}: ${join(out, 'report.json')} exists (--force replaces it)`);
    expect(() => checkOutputDir(out, '--out', NAMES, { replace: false })).toThrow(`--out ${out}: ${join(out, 'report.json')} exists`);
    const target = check(out, true);
    expect(target.files.get('report.json')!.existing).toMatchObject({ ino: statSync(join(out, 'report.json')).ino });
    expect(target.files.get('index.html')!.existing).toBeNull();
  });

  it('/dev/shm is an ordinary place', () => {
    if (!existsSync('/dev/shm')) return;
    expect(check('/dev/shm/hcsp-not-made').dir).toBe('/dev/shm/hcsp-not-made');
  });
});

describe('writing the folder', () => {
  it('makes the folder, writes every file, leaves no temp file; replaces the files it was allowed to', async () => {
    const out = join(dir, 'new', 'deep');
    await writeOutputDir(check(out), contents('one'));
    expect(readdirSync(out).sort()).toEqual(['index.html', 'report.json']);
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toBe('index.html: one');
    await writeOutputDir(check(out, true), contents('two'));
    expect(readdirSync(out).sort()).toEqual(['index.html', 'report.json']);
    expect(readFileSync(join(out, 'report.json'), 'utf8')).toBe('report.json: two');
  });

  it('a link put in place after the check: nothing replaced, no temp file left, the link untouched', async () => {
    const out = join(dir, 'raced');
    mkdirSync(out);
    writeFileSync(join(out, 'report.json'), 'old');
    const target = check(out, true);
    unlinkSync(join(out, 'report.json'));
    symlinkSync(join(dir, 'raced-victim'), join(out, 'report.json'));
    await expect(writeOutputDir(target, contents('new'))).rejects.toThrow(
      `--report ${join(out, 'report.json')}: ${join(out, 'report.json')} changed while the output was written; nothing was replaced`,
    );
    expect(readdirSync(out)).toEqual(['report.json']);
    expect(lstatSync(join(out, 'report.json')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(dir, 'raced-victim'))).toBe(false);
  });

  it('a folder it made is removed again when the write fails', async () => {
    const out = join(dir, 'made', 'here');
    const target = check(out);
    await expect(writeOutputDir(target, new Map([['report.json', [Buffer.from('{}')]]]))).rejects.toThrow(`--report ${out}: no contents for index.html`);
    expect(existsSync(join(dir, 'made'))).toBe(false);
  });
});

describe('results computed, files not written', () => {
  it('the results go to stdout, then the error says they were not saved', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const failing = printResultsOnSaveFailure(async () => {
      throw new ResultsNotSavedError('--report r: write failed: ENOSPC: no space left on device', 'the summary\n');
    });
    await expect(failing).rejects.toThrow('--report r: write failed: ENOSPC: no space left on device (the results were printed, not saved)');
    expect(out).toHaveBeenCalledWith('the summary\n');
  });
});
