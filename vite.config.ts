import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The browser dev page (devpage/): `npm run dev` serves it, `npx vite build` writes dist/.
// vitest reads vitest.config.ts, which takes precedence over this file.
const repo = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('./devpage', import.meta.url)),
  // @hcsp/core resolves (workspace link) to packages/core/src, outside the page's root
  server: { fs: { allow: [repo] } },
  worker: { format: 'es' },
  build: { outDir: fileURLToPath(new URL('./dist', import.meta.url)), emptyOutDir: true, target: 'es2022' },
});
