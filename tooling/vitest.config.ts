import { fileURLToPath } from 'node:url'

import { defineConfig } from 'vitest/config'

import { testTime } from './test-time.ts'

/**
 * Tests of the repository tooling itself (release dry run, README examples, links), run
 * by the gate as `pnpm test:tooling`; their report joins the closing `N passed` line.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: testTime(120_000),
    hookTimeout: testTime(30_000),
    reporters: ['default', 'json'],
    // Outside tooling/: turbo hashes parts of tooling/ into every task (turbo.json's
    // globalDependencies); a report kept beside the root package.json never touches them.
    outputFile: { json: fileURLToPath(new URL('../tooling-test-results.json', import.meta.url)) },
  },
})
