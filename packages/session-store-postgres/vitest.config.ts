import { mergeConfig } from 'vitest/config'

import shared, { testWorkers } from '../../tooling/vitest.shared.ts'

/**
 * The shared config plus one throwaway PostgreSQL cluster for the whole run
 * (test/global-setup.ts); its files run two at a time, each on its own database (see `testWorkers`).
 */
export default mergeConfig(shared, {
  test: { globalSetup: ['./test/global-setup.ts'], maxWorkers: testWorkers },
})
