import { build } from 'esbuild';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the page gets its kernel table: a module and the name it exports it under. */
export interface KernelModule {
  /** a bare specifier or an absolute path */
  path: string;
  exportName: string;
}

export const WGSL_KERNEL_MODULE: KernelModule = { path: '@hcsp/kernels-wgsl', exportName: 'WGSL_KERNELS' };

const HERE = dirname(fileURLToPath(import.meta.url));
const bundles = new Map<string, Promise<string>>();

/**
 * The page script: pageRunner.ts plus the executor and the kernel table, as one ES module.
 * esbuild rather than vite's build(): one entry, no HTML pipeline or config, about 0.1 s;
 * the bundle is kept in memory (write: false) and served from there, so there is no temp
 * dir to clean up. Built once per process per kernel module.
 */
export function pageBundle(kernels: KernelModule): Promise<string> {
  const key = `${kernels.path}#${kernels.exportName}`;
  let bundle = bundles.get(key);
  if (!bundle) {
    bundle = buildBundle(kernels);
    bundles.set(key, bundle);
    bundle.catch(() => bundles.delete(key));
  }
  return bundle;
}

async function buildBundle(kernels: KernelModule): Promise<string> {
  const entry = [
    `import { ${kernels.exportName} as kernels } from ${JSON.stringify(kernels.path)};`,
    `import { installPageRunner } from './pageRunner.ts';`,
    `installPageRunner(kernels);`,
  ].join('\n');
  try {
    const out = await build({
      stdin: { contents: entry, resolveDir: HERE, sourcefile: 'hcsp-page-entry.ts', loader: 'ts' },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
    });
    return out.outputFiles[0].text;
  } catch (e) {
    throw new Error(`chromium host: bundling the page with kernels from '${kernels.path}' (${kernels.exportName}) failed: ${(e as Error).message}`);
  }
}
