// Bundles the `hcsp` command (src/main.ts and the workspace packages it imports) into
// dist/hcsp.js with esbuild, so that it runs on plain Node: no TypeScript loader (tsx's
// WebAssembly lexer could not start under `ulimit -v` below about 40 GB) and one file to
// read at startup. Run by the root package's `prepare` script, so `npm ci` builds it.
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '..');

// Loaded from node_modules at run time: native code (webgpu's dawn.node, esbuild's binary,
// which the WebGPU page bundler runs) or a package that starts processes from its own files
// (playwright-core).
const EXTERNAL = ['esbuild', 'playwright-core', 'webgpu'];

/**
 * A workspace source that finds files next to itself through import.meta.url (the WebGPU
 * page bundler reads pageRunner.ts from its own folder) gets the URL of its source file,
 * found relative to the bundle, instead of the bundle's own.
 */
function sourceUrls(outdir) {
  return {
    name: 'hcsp-source-urls',
    setup(b) {
      b.onLoad({ filter: /[\\/]packages[\\/][^\\/]+[\\/]src[\\/].*\.ts$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const rel = relative(outdir, args.path).split(sep).join('/');
        return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'ts' };
      });
    },
  };
}

/** Writes `<outdir>/hcsp.js`; returns its path. */
export async function buildCli({ outdir = join(CLI, 'dist') } = {}) {
  await build({
    entryPoints: { hcsp: join(CLI, 'src/main.ts') },
    outdir,
    bundle: true,
    // The WebGPU backend (and its playwright-core, esbuild, webgpu imports) is a dynamic
    // import: split into its own file, it is read only when a command asks for that backend.
    splitting: true,
    chunkNames: 'hcsp-[name]-[hash]',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    plugins: [sourceUrls(outdir)],
    // commander and cli-progress are CommonJS: their require() of Node's modules needs one.
    banner: { js: "import { createRequire as hcspCreateRequire } from 'node:module';\nconst require = hcspCreateRequire(import.meta.url);" },
    legalComments: 'none',
    logLevel: 'warning',
  });
  return join(outdir, 'hcsp.js');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await buildCli();
