import { defineConfig } from 'vitest/config'

import { testTime } from './test-time.ts'
import { sourceConditions } from './vitest.shared.ts'

/** The long crash and fuzz runs (`pnpm test:crash`), kept out of the default gate. */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/**/*.crash.test.ts'],
    // Only stops a hung run: the rounds are bounded by count, never by time.
    testTimeout: testTime(1_800_000),
    hookTimeout: testTime(60_000),
    reporters: ['default', 'json'],
    outputFile: { json: 'crash-results.json' },
  },
})
