import { mergeConfig } from 'vitest/config'

import shared from '../../tooling/vitest.shared.ts'

/** The shared config plus one PostgreSQL server for the run (the store matrix in test/stores.ts). */
export default mergeConfig(shared, { test: { globalSetup: ['../../tooling/pg/global-setup.ts'] } })
