import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'native/scripts/**/*.test.ts', 'test/**/*.test.ts', 'devpage/**/*.test.ts'],
    // CPU-heavy numerics: one worker per core, long enough for the WebGPU soak on SwiftShader.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
