import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { refuseRepeatedOptions } from './repeatedOptions.ts';

function program(): { cmd: Command; seen: Record<string, unknown>[] } {
  const seen: Record<string, unknown>[] = [];
  const cmd = new Command('hcsp').exitOverride().configureOutput({ outputError: () => {} });
  cmd
    .command('run')
    .option('--tokens <n>', 'tokens')
    .option('--force', 'a flag')
    .action((opts: Record<string, unknown>) => void seen.push(opts));
  refuseRepeatedOptions(cmd);
  return { cmd, seen };
}

describe('a value option given twice', () => {
  it('is a usage error naming the option (exit 2), in both spellings; the command does not run', () => {
    for (const args of [
      ['--tokens', '8', '--tokens', '16'],
      ['--tokens=8', '--tokens', '16'],
    ]) {
      const { cmd, seen } = program();
      let error: unknown;
      try {
        cmd.parse(['run', ...args], { from: 'user' });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CommanderError);
      expect((error as CommanderError).exitCode).toBe(2);
      expect((error as CommanderError).message).toBe("option '--tokens <n>' given more than once (the last would silently win); give it once");
      expect(seen).toEqual([]);
    }
  });

  it('once each, and a repeated flag without a value, are fine', () => {
    const { cmd, seen } = program();
    cmd.parse(['run', '--tokens', '8', '--force', '--force'], { from: 'user' });
    expect(seen).toEqual([{ tokens: '8', force: true }]);
  });

  it('hcsp says so on one line and exits 2', () => {
    const main = join(dirname(fileURLToPath(import.meta.url)), 'main.ts');
    const r = spawnSync(process.execPath, ['--import', 'tsx', main, 'prefill', '--tokens', '8', '--tokens', '16'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe("hcsp: option '--tokens <n>' given more than once (the last would silently win); give it once\n");
    expect(r.status).toBe(2);
  }, 40_000);
});
