import { defineConfig } from 'vitest/config'

import { sourceConditions } from './vitest.shared.ts'

/** The long crash and fuzz runs (`pnpm test:crash`), kept out of the default gate. */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/**/*.crash.test.ts'],
    testTimeout: 900_000,
    hookTimeout: 60_000,
    reporters: ['default', 'json'],
    outputFile: { json: 'crash-results.json' },
  },
})
