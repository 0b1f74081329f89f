import { defineConfig } from 'vitest/config'

import { testTime } from '../../tooling/test-time.ts'

/**
 * End-to-end tests of the BUILT `agent-ledger` binary (`dist/bin.js`), driven as child
 * processes on temporary roots. No source condition: the bin and the store helpers the
 * tests use resolve to the sibling packages' `dist/`, as an installed copy would.
 * `test/support/e2e-build.ts` makes sure those builds exist (and are fresh outside turbo).
 */
export default defineConfig({
  test: {
    include: ['test/**/*.e2e.test.ts'],
    globalSetup: ['test/support/e2e-build.ts'],
    testTimeout: testTime(120_000),
    hookTimeout: testTime(300_000),
    reporters: ['default', 'json'],
    outputFile: { json: 'e2e-results.json' },
  },
})
