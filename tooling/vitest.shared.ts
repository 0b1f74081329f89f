import { defaultServerConditions } from 'vite'
import { defineConfig } from 'vitest/config'

/** Sibling packages resolve to their TypeScript sources, so tests need no build. */
export const sourceConditions = ['@agent-ledger/source', ...defaultServerConditions]

/**
 * The one vitest config every package re-exports.
 *
 * The default run (`pnpm test`) takes `test/**\/*.test.ts` and the type tests; the long
 * crash and fuzz runs (`*.crash.test.ts`) only run under `pnpm test:crash`.
 */
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/*.e2e.test.ts', '**/*.crash.test.ts', '**/node_modules/**'],
    typecheck: { enabled: true, include: ['test/**/*.test-d.ts'] },
    restoreMocks: true,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results.json' },
  },
})
