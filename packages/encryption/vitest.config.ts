import { mergeConfig } from 'vitest/config'

import shared from '../../tooling/vitest.shared.ts'

/** The shared config plus one PostgreSQL server for the run (the encrypted conformance suite on PostgreSQL). */
export default mergeConfig(shared, { test: { globalSetup: ['../../tooling/pg/global-setup.ts'] } })
