import { mergeConfig } from 'vitest/config'

import crash from '../../tooling/vitest.crash.ts'

/** The crash tier plus the shared throwaway cluster (test/global-setup.ts). */
export default mergeConfig(crash, { test: { globalSetup: ['./test/global-setup.ts'] } })
