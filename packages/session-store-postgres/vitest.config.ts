import { mergeConfig } from 'vitest/config'

import shared from '../../tooling/vitest.shared.ts'

/** The shared config plus one throwaway PostgreSQL cluster for the whole run (test/global-setup.ts). */
export default mergeConfig(shared, { test: { globalSetup: ['./test/global-setup.ts'] } })
