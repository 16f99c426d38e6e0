// The import graph has no circle (issue 26): every TypeScript file of the packages, the dev page,
// the native scripts and the repository scripts, type-only imports included (a type cycle
// still ties two files' meanings together), read by madge from the sources as written.
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TREES = ['packages', 'devpage/src', 'native/scripts', 'scripts'];

describe('imports', () => {
  it('form no circle among the source files (tests left out)', async () => {
    const graph = await madge(
      TREES.map((t) => `${ROOT}/${t}`),
      {
        baseDir: ROOT,
        fileExtensions: ['ts'],
        excludeRegExp: [/node_modules/, /\.test\.ts$/, /\/dist\//],
        detectiveOptions: { ts: { skipTypeImports: false } },
        tsConfig: `${ROOT}/tsconfig.json`,
      },
    );
    const files = Object.keys(graph.obj());
    // the reading is not vacuous: the packages' files and their imports were found
    expect(files.length).toBeGreaterThan(300);
    expect(graph.obj()['packages/core/src/graph/graphSession.ts']?.length ?? 0).toBeGreaterThan(3);
    expect(graph.circular().map((c) => c.join(' -> '))).toEqual([]);
  }, 120_000);
});
