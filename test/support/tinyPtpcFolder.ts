// A tiny-config checkpoint in the PTPC-FP8 release's layout (`hcsp weights --layout ptpc-fp8`,
// seed 3, one shard) for the tests that read FP8 weights back: written before the file's tests,
// removed after them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PRESETS } from '@hcsp/core';
import { afterAll, beforeAll } from 'vitest';
import { writeModelFolder } from '../../packages/cli/src/commands/weights.ts';

/** The folder's path (<tmp>/<prefix>XXXXXX/tiny-ptpc), filled in beforeAll. */
export function useTinyPtpcFolder(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  const folder = join(root, 'tiny-ptpc');
  beforeAll(async () => {
    await writeModelFolder({ config: PRESETS.tiny, seed: 3, out: folder, layout: 'ptpc-fp8', shards: 1, force: false });
  }, 120_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return folder;
}
