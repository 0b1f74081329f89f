import { mergeConfig } from 'vitest/config'

import shared, { isolateFiles } from '../../tooling/vitest.shared.ts'

/**
 * The shared config plus one PostgreSQL server for the run (the store matrix in test/stores.ts);
 * its files share one module graph per worker (see `isolateFiles`).
 */
export default mergeConfig(shared, {
  test: { globalSetup: ['../../tooling/pg/global-setup.ts'], isolate: isolateFiles },
})
