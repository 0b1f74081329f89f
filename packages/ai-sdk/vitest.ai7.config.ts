// The suite against another `ai` install (AI_SDK_DIR), e.g. ai 7 under Node 22: see
// tooling/ai-sdk-next.ts, which installs both from the registry and runs this config.
import { mergeConfig } from 'vitest/config'

import shared from '../../tooling/vitest.shared.ts'

const directory = process.env['AI_SDK_DIR']
if (directory === undefined)
  throw new Error('vitest.ai7.config.ts: set AI_SDK_DIR to the ai package directory')

export default mergeConfig(shared, {
  resolve: {
    alias: [
      { find: /^ai\/test$/, replacement: `${directory}/dist/test/index.js` },
      { find: /^ai$/, replacement: `${directory}/dist/index.js` },
    ],
  },
  test: {
    // The type tests run against the workspace's ai 6 types in the normal suite.
    typecheck: { enabled: false },
    // The store matrix runs over PostgreSQL here too.
    globalSetup: ['../../tooling/pg/global-setup.ts'],
    // Not test-results.json: that is the Node 20 run's report (tooling/test-summary.ts reads it).
    outputFile: { json: 'test-output/ai7-results.json' },
  },
})
