#!/usr/bin/env node
// The `hcsp` executable: the bundle of src/main.ts that scripts/build.mjs writes (the root
// package's `prepare` script builds it at `npm ci`; `npm run build` rebuilds it).
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/hcsp.js', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write('hcsp: the bundle packages/cli/dist/hcsp.js is missing: run `npm run build` (npm ci runs it unless --ignore-scripts)\n');
  process.exit(1);
}
await import(bundle.href);
