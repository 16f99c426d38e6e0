import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// native/ sits below the CLI and the test suites (issue 26): the GPU check takes its case
// graphs from @hcsp/bench/cases and its run comparison from @hcsp/core, so neither a file
// under native/ nor anything the GPU check's bundle pulls in may come from test/ or the CLI.
const root = resolve(import.meta.dirname, '../..');
const forbidden = ['test', 'packages/cli'].map((d) => join(root, d));
const forbiddenPackage = /^@hcsp\/cli(\/|$)/;

const underForbidden = (path: string): boolean => forbidden.some((d) => path === d || path.startsWith(`${d}/`));

/** The import specifiers of one file that reach test/ or the CLI: TypeScript's own pre-parser for scripts, #include lines for C++. */
function forbiddenImports(file: string, text: string): string[] {
  const specifiers = /\.(ts|mts|mjs|js)$/.test(file)
    ? ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName)
    : [...text.matchAll(/^\s*#\s*include\s*"([^"]+)"/gm)].map((m) => m[1]);
  return specifiers.filter((s) => forbiddenPackage.test(s) || (s.startsWith('.') && underForbidden(resolve(dirname(file), s))));
}

describe('native/ does not depend on test/ or the CLI', () => {
  it('flags an import into test/ or the CLI and passes a workspace package', () => {
    const file = join(root, 'native/scripts/example.ts');
    const text = [
      "import { layerCases } from '../../test/cases/layerCases.ts';",
      "import { bench } from '@hcsp/cli/src/commands/bench.ts';",
      "const m = await import('../../packages/cli/src/main.ts');",
      "import { OP_CASES } from '@hcsp/bench/cases';",
      "import { diffRuns } from '@hcsp/core';",
      "import { spStep } from './gpuCheckHc.ts';",
    ].join('\n');
    expect(forbiddenImports(file, text)).toEqual(['../../test/cases/layerCases.ts', '@hcsp/cli/src/commands/bench.ts', '../../packages/cli/src/main.ts']);
    expect(forbiddenImports(join(root, 'native/src/gpu/x.cc'), '#include "../../../test/support/probe.h"\n#include "gpu_runtime.h"\n')).toEqual([
      '../../../test/support/probe.h',
    ]);
  });

  it('no file under native/ imports from test/ or the CLI', () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'native'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|mts|mjs|js|cc|cu|h|hpp|cpp)$/.test(f));
    expect(files.length).toBeGreaterThan(20);
    const found = files.flatMap((f) => forbiddenImports(join(root, f), readFileSync(join(root, f), 'utf8')).map((s) => `${f}: ${s}`));
    expect(found).toEqual([]);
  });

  it("the GPU check's bundle takes no file from test/ or the CLI", async () => {
    // the same bundle as build-gpu-check.mjs, not written: its inputs are everything the check runs
    const r = await build({
      entryPoints: [join(root, 'native/scripts/gpuCheck.ts')],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: ['esbuild', 'playwright-core', 'webgpu', '@hcsp/backend-webgpu'],
      logLevel: 'silent',
    });
    const inputs = Object.keys(r.metafile.inputs).map((p) => resolve(root, p));
    expect(inputs.some((p) => p.endsWith('packages/bench/src/cases/opCases.ts'))).toBe(true);
    expect(inputs.filter(underForbidden).map((p) => relative(root, p))).toEqual([]);
  });
});
