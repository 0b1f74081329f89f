import { defineConfig } from 'vitest/config'

import { testTime } from '../../tooling/test-time.ts'
import { sourceConditions } from '../../tooling/vitest.shared.ts'

/**
 * End-to-end tests of mini-agent (`pnpm test:e2e`, its own turbo task in the gate): they drive
 * `src/main.ts` as child processes on temporary roots, SIGKILL and SIGINT included.
 */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/**/*.e2e.test.ts'],
    // One throwaway PostgreSQL cluster for the run (skipped locally without the binaries, fatal under CI=true).
    globalSetup: ['test/support/pg-global-setup.ts'],
    testTimeout: testTime(120_000),
    hookTimeout: testTime(60_000),
    reporters: ['default', 'json'],
    outputFile: { json: 'e2e-results.json' },
  },
})
