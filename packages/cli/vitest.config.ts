import { mergeConfig } from 'vitest/config'

import shared from '../../tooling/vitest.shared.ts'

/** The shared config plus one throwaway PostgreSQL cluster for the run (test/support/pg-global-setup.ts). */
export default mergeConfig(shared, { test: { globalSetup: ['./test/support/pg-global-setup.ts'] } })
